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

#include "mlir/IR/PatternMatch.h"

namespace lowbit {

/// The largest Hadamard block the per-element evaluation takes: each
/// element of a block of B reads B values of the stage before.
inline constexpr int64_t kMaxGpuHadamardBlock = 32;

/// lowbit.fused -> gpu.launch: dynamic row-group schemes in one launch.
void populateGpuFusedRowsPatterns(mlir::RewritePatternSet &patterns,
                                  int64_t threadsPerBlock);

} // namespace lowbit

#endif // LOWBIT_LOWERING_GPUFUSEDROWS_H
