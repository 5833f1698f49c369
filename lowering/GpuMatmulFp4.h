//===- GpuMatmulFp4.h - W4A4 block-scaled FP4 matmul, bf16 mma fallback -*- C++
//-*-===//
//
// The GEMM of lowbit.matmul with act_scheme when both sides are e2m1 with
// scales in groups of 16 or 32 along K (nvfp4 x nvfp4, mxfp4 x mxfp4;
// docs/matmul-gpu.md, "FP4 x FP4"), for chips without FP4 tensor cores:
// X quantized inside the GEMM's A-operand load (its scale blocks lie inside
// one 32-wide K chunk), the codes' exact values as bf16 through mma.sync
// m16n8k16 (f32 accumulation, exact), the two sides' scales applied per K
// block in f32 after the product, as matmul::quantizedAccumulate does.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_GPUMATMULFP4_H
#define LOWBIT_LOWERING_GPUMATMULFP4_H

#include "format/Scheme.h"
#include "lowering/MatmulKernelCommon.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"

#include <string>

namespace lowbit {

/// Why the FP4 GEMM cannot serve weights `weights` and activations
/// `activations`, or "" when it can.
std::string fp4GemmRefusal(const Scheme &weights, const Scheme &activations);

/// Emits the FP4 GEMM's launches before `op` (the lowbit.matmul): with a
/// computed global scale of X (nvfp4), first X's amax through the
/// workspace (GpuTensorReduce.h) into a workspace word, then the GEMM (grid
/// ceil(M / 64) * ceil(N / 128) blocks of 256 threads), then one thread
/// that zeroes that word again. `activations` passes fp4GemmRefusal.
/// Fails, emitting nothing, when the function has a workspace too small.
mlir::LogicalResult emitMatmulFp4Gemm(mlir::RewriterBase &rewriter,
                                      mlir::ImplicitLocOpBuilder &builder,
                                      mlir::Operation *op,
                                      const Scheme &weights,
                                      const Scheme &activations,
                                      const MatmulBuffers &buffers);

} // namespace lowbit

#endif // LOWBIT_LOWERING_GPUMATMULFP4_H
