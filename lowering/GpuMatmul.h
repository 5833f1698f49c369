//===- GpuMatmul.h - lowbit.matmul to its GPU kernels -----------*- C++ -*-===//
//
// lowbit-to-gpu's rewrite of the quantized-weight matmul
// (docs/matmul-gpu.md).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_GPUMATMUL_H
#define LOWBIT_LOWERING_GPUMATMUL_H

#include "format/Scheme.h"

#include "mlir/IR/PatternMatch.h"

#include <string>

namespace lowbit {

/// Adds the rewrite of lowbit.matmul into its GPU kernel launches.
void populateGpuMatmulPatterns(mlir::RewritePatternSet &patterns);

/// Why the rewrite leaves `op` (a lowbit.matmul) unmapped, or "" when it
/// maps it.
std::string gpuMatmulRefusal(mlir::Operation *op);

/// Where the GPU kernels quantize X for weights `weights` and activations
/// `activations` (with `hasPrologues` when a prologue chain is in front),
/// and why, in one sentence for the report ("X's quantize: ..."); "" for
/// a pair no GPU kernel takes.
std::string activationQuantizeChoice(const Scheme &weights,
                                     const Scheme &activations,
                                     bool hasPrologues);

} // namespace lowbit

#endif // LOWBIT_LOWERING_GPUMATMUL_H
