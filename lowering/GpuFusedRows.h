//===- GpuFusedRows.h - lowbit.fused to GPU kernels, one warp per row -----===//
//
// lowbit-to-gpu's rewrite of a fused kernel (prologue | quantize,
// docs/fusion.md) into gpu.launch ops: one warp per row evaluates the
// region's elementwise linalg bodies per element, keeps RMSNorm's lane
// partials one per lane and its row values in registers, and quantizes the
// row's groups with ScaleMath (docs/gpu.md, "Fused kernels").
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_GPUFUSEDROWS_H
#define LOWBIT_LOWERING_GPUFUSEDROWS_H

#include "target/ChipTable.h"

#include "mlir/IR/PatternMatch.h"

namespace lowbit {

/// The largest Hadamard block the per-element evaluation takes (each
/// element of a block of B reads B values of the stage before); wider
/// blocks are staged in shared memory.
inline constexpr int64_t kMaxGpuHadamardBlock = 32;

/// The shared memory a fused kernel's block takes for rows of wider
/// Hadamard rotations (one f32 row per warp and rotation): the static
/// limit every CUDA chip gives without an opt-in (target/ChipTable.h).
inline constexpr int64_t kMaxGpuFusedSharedBytes = kStaticSharedBytesPerBlock;

/// lowbit.fused -> gpu.launch: dynamic row-group schemes in one launch.
void populateGpuFusedRowsPatterns(mlir::RewritePatternSet &patterns,
                                  int64_t threadsPerBlock);

} // namespace lowbit

#endif // LOWBIT_LOWERING_GPUFUSEDROWS_H
