//===- Workspace.h - The workspace ABI of the GPU kernels -------*- C++ -*-===//
//
// A GPU kernel whose scratch is not a module global (a whole-tensor
// reduction's statistics and block ticket) takes one extra trailing
// parameter: a [1, WORDS] i32 memref that is all zero before the first
// launch of a launch sequence and that the kernels leave all zero
// (docs/kernel-abi.md, "Workspace"). The lowering lays the words out as
// below; the runtime (runtime/aot/WorkspacePool.h) owns the buffers and
// the launch plans bound WORDS by kMaxWords. Plain C++, no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TARGET_WORKSPACE_H
#define LOWBIT_TARGET_WORKSPACE_H

#include <cstdint>

namespace lowbit::workspace_abi {

/// The function argument attribute that marks the workspace parameter of
/// the lowered @kernel (memref<1 x WORDS x i32>).
inline constexpr const char *kArgumentAttr = "lowbit.workspace";

/// Every workspace is at most this many words (a 4 GiB buffer).
inline constexpr int64_t kMaxWords = int64_t(1) << 30;

/// A whole-tensor reduction's words: its statistics first, as order-
/// preserving bits (amax; a minmax scheme adds -min and max), then the
/// ticket counter the blocks take when they are done.
constexpr int64_t statisticWords(bool withMinMax) { return withMinMax ? 3 : 1; }
constexpr int64_t ticketWord(bool withMinMax) {
  return statisticWords(withMinMax);
}
constexpr int64_t reductionWords(bool withMinMax) {
  return ticketWord(withMinMax) + 1;
}

} // namespace lowbit::workspace_abi

#endif // LOWBIT_TARGET_WORKSPACE_H
