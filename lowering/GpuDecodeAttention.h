//===- GpuDecodeAttention.h - FlashDecoding kernel for kv_decode_attention ===//
//
// lowbit-to-gpu's rewrite of lowbit.kv_decode_attention: stage 1 as the
// FlashDecoding kernel (one 128-thread block per (sequence, kv head,
// split): 16 token slots of 8 lanes, each lane one 16-byte slice of a K or
// V row), stage 2 as the loops the generic mapping takes
// (docs/decode-attention.md, "The GPU kernel").
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_GPUDECODEATTENTION_H
#define LOWBIT_LOWERING_GPUDECODEATTENTION_H

#include "target/ChipTable.h"

#include "mlir/IR/PatternMatch.h"

#include <string>

namespace lowbit {

/// The shared memory the stage-1 block may take: the static limit every
/// CUDA chip gives without an opt-in (target/ChipTable.h).
inline constexpr int64_t kMaxDecodeAttentionSharedBytes =
    kStaticSharedBytesPerBlock;

/// Why `op` (a lowbit.kv_decode_attention) has no FlashDecoding kernel, or
/// "" when it has one.
std::string gpuDecodeAttentionRefusal(mlir::Operation *op);

/// lowbit.kv_decode_attention -> the stage-1 gpu.launch and the stage-2
/// loops.
void populateGpuDecodeAttentionPatterns(mlir::RewritePatternSet &patterns);

} // namespace lowbit

#endif // LOWBIT_LOWERING_GPUDECODEATTENTION_H
