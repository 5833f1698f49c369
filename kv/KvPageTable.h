//===- KvPageTable.h - The rule a block table keeps -------------*- C++ -*-===//
//
// A paged cache's block table (kv/KvPaged.h) names each page at most once,
// whether or not a sequence reaches the entry yet: a page shared by two
// (sequence, block) slots would make one sequence's append overwrite
// another's tokens, and each read the other's keys (docs/kv-cache.md,
// "Block tables"). Entries outside [0, pages) (-1 by convention) may
// repeat. validatePagedLayout applies the rule, and so does every other
// place a table enters (the compiled kernels' buffer checks).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_KV_KVPAGETABLE_H
#define LOWBIT_KV_KVPAGETABLE_H

#include <cstdint>
#include <span>
#include <string>

namespace lowbit::kv {

/// Whether no two entries of a [batch, maxBlocks] table name one page in
/// [0, pages); else false, and an error naming both slots and the page.
bool checkPagesUnshared(std::span<const int32_t> blockTable, int64_t maxBlocks,
                        int64_t pages, std::string *error);

} // namespace lowbit::kv

#endif // LOWBIT_KV_KVPAGETABLE_H
