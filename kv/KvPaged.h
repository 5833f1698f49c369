//===- KvPaged.h - The paged KV-cache layout --------------------*- C++ -*-===//
//
// A paged cache stores tokens in pages of 16 (vLLM's block size 16): page
// storage is [pages, kvHeads, 16, width], and a block table [batch,
// maxBlocks] of int32 page indices maps token t of sequence b to page
// table[b, t / 16], slot t % 16. `width` is head_dim for codes and values,
// ceil(head_dim / G) for per-group scales, so one layout serves every
// tensor of a quantized cache. Unused table entries may hold any value
// (-1 by convention); every entry a sequence's tokens reach must name a
// page in [0, pages).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_KV_KVPAGED_H
#define LOWBIT_KV_KVPAGED_H

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace lowbit::kv {

constexpr int64_t kPageTokens = 16;

struct PagedLayout {
  int64_t pages = 0, kvHeads = 1, width = 1;
  int64_t batch = 1, maxBlocks = 1;
  std::vector<int32_t> blockTable; ///< [batch, maxBlocks]

  /// Elements of page storage.
  int64_t storageSize() const { return pages * kvHeads * kPageTokens * width; }
  /// Offset of element 0 of (sequence, head, token).
  int64_t offset(int64_t sequence, int64_t head, int64_t token) const {
    int64_t page = blockTable[sequence * maxBlocks + token / kPageTokens];
    return ((page * kvHeads + head) * kPageTokens + token % kPageTokens) *
           width;
  }
};

/// Checks the table's size, and that each of the first `tokens[b]` tokens
/// of every sequence maps to a page in range.
bool validatePagedLayout(const PagedLayout &layout,
                         std::span<const int64_t> tokens, std::string *error);

/// The first tokens[b] tokens of every sequence as a contiguous [batch,
/// kvHeads, maxTokens, width] tensor; positions past tokens[b] are zero.
template <typename T>
std::vector<T> gatherPaged(const PagedLayout &layout,
                           std::span<const T> storage,
                           std::span<const int64_t> tokens, int64_t maxTokens) {
  std::vector<T> result(layout.batch * layout.kvHeads * maxTokens *
                        layout.width);
  for (int64_t b = 0; b < layout.batch; ++b)
    for (int64_t h = 0; h < layout.kvHeads; ++h)
      for (int64_t t = 0; t < tokens[b]; ++t)
        std::copy_n(storage.begin() + layout.offset(b, h, t), layout.width,
                    result.begin() +
                        ((b * layout.kvHeads + h) * maxTokens + t) *
                            layout.width);
  return result;
}

/// Writes `count` new tokens per sequence, [batch, kvHeads, count, width],
/// at positions start[b] .. start[b] + count - 1.
template <typename T>
void scatterPaged(const PagedLayout &layout, std::span<T> storage,
                  std::span<const T> newTokens, std::span<const int64_t> start,
                  int64_t count) {
  for (int64_t b = 0; b < layout.batch; ++b)
    for (int64_t h = 0; h < layout.kvHeads; ++h)
      for (int64_t t = 0; t < count; ++t)
        std::copy_n(newTokens.begin() +
                        ((b * layout.kvHeads + h) * count + t) * layout.width,
                    layout.width,
                    storage.begin() + layout.offset(b, h, start[b] + t));
}

} // namespace lowbit::kv

#endif // LOWBIT_KV_KVPAGED_H
