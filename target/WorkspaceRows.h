//===- WorkspaceRows.h - A workspace that grows with X's rows ---*- C++ -*-===//
//
// A kernel that quantizes X into the workspace (a prologue in front of a
// matmul's X: lowering/GpuMatmulFrontQuantize.h) takes a workspace whose
// size grows with X's rows (docs/kernel-abi.md, "Workspace"): WORDS =
// wordsFor(fixed, rows, M, K) with X = the kernel's parameter 0, [M, K]
// at the launch. wordsFor is the one place that size is computed; every
// runtime that allocates a workspace sizes it there. Plain C++, no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TARGET_WORKSPACEROWS_H
#define LOWBIT_TARGET_WORKSPACEROWS_H

#include "target/Workspace.h"

#include <cstdint>

namespace lowbit::workspace_abi {

/// The part of a workspace that grows with X ([rows, cols] at the launch):
/// each row takes `wordsPerRow` words plus `bitsPerElement` bits per
/// column, rounded up to words. Both 0: a fixed size (the argument is
/// memref<1 x WORDS x i32>); else the argument is memref<1 x ? x i32>
/// carrying kRowsAttr.
struct RowWords {
  int64_t wordsPerRow = 0;
  int64_t bitsPerElement = 0;
  constexpr bool any() const { return wordsPerRow != 0 || bitsPerElement != 0; }
  constexpr bool operator==(const RowWords &) const = default;
};

/// The argument attribute of a workspace that grows with X: array<i64:
/// fixed words, wordsPerRow, bitsPerElement>.
inline constexpr const char *kRowsAttr = "lowbit.workspace_rows";

/// Where X's region starts in a workspace that grows with X: after the
/// words the largest reduction in front of it takes. Only the words before
/// it follow the zero-before/zero-after rule; the region, and the fixed
/// alignment slack the layout keeps inside it, are written before they are
/// read within the sequence and may hold anything after it.
inline constexpr int64_t kRowRegionWord = reductionWords(true);

/// The words that must be zero before the first launch and after the last:
/// all of a fixed-size workspace, the words before X's region otherwise.
constexpr int64_t zeroedWords(int64_t fixedWords, RowWords row) {
  return row.any() && fixedWords > kRowRegionWord ? kRowRegionWord : fixedWords;
}

/// The words a launch with X of [rows, cols] takes: fixedWords + rows *
/// (wordsPerRow + ceil(cols * bitsPerElement / 32)); -1 when that is more
/// than kMaxWords or a count is negative.
constexpr int64_t wordsFor(int64_t fixedWords, RowWords row, int64_t rows,
                           int64_t cols) {
  if (!row.any())
    return fixedWords;
  if (rows < 0 || cols < 0 || fixedWords < 0 || row.wordsPerRow < 0 ||
      row.bitsPerElement < 0 || row.bitsPerElement > 64 || cols > kMaxWords)
    return -1;
  int64_t perRow = row.wordsPerRow + (cols * row.bitsPerElement + 31) / 32;
  if (perRow != 0 && rows > (kMaxWords - fixedWords) / perRow)
    return -1;
  return fixedWords + rows * perRow;
}

static_assert(wordsFor(2, {}, 100, 100) == 2, "fixed: rows do not count");
static_assert(zeroedWords(2, {}) == 2 && zeroedWords(16, {1, 8}) == 4,
              "a growing workspace keeps zero only before X's region");
static_assert(wordsFor(16, {1, 8}, 17, 200) == 16 + 17 * (1 + 50),
              "per token, 8-bit codes");

} // namespace lowbit::workspace_abi

#endif // LOWBIT_TARGET_WORKSPACEROWS_H
