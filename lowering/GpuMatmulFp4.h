//===- GpuMatmulFp4.h - W4A4 block-scaled FP4 matmul ------------*- C++ -*-===//
//
// The GEMM of lowbit.matmul with act_scheme when both sides are e2m1 with
// scales in groups of 16 or 32 along K (nvfp4 x nvfp4, mxfp4 x mxfp4;
// docs/matmul-gpu.md, "FP4 x FP4"). X is quantized inside the GEMM's
// A-operand load (its scale blocks lie inside one K chunk). On sm_120a the
// product is the block-scaled mma.sync m16n8k64 (the codes and the stored
// block scales as the instruction takes them); on chips without FP4 tensor
// cores, the fallback: the codes' exact values as bf16 through mma.sync
// m16n8k16 (f32 accumulation, exact), the two sides' block scales applied
// per K block in f32 after the product. Both follow
// matmul::quantizedAccumulate: the global scales' product after the K loop.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_GPUMATMULFP4_H
#define LOWBIT_LOWERING_GPUMATMULFP4_H

#include "format/Scheme.h"
#include "lowering/GpuMatmulQuantized.h"
#include "lowering/MatmulKernelCommon.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"

#include <string>

namespace lowbit {

/// Why the FP4 GEMM cannot serve weights `weights` and activations
/// `activations`, or "" when it can.
std::string fp4GemmRefusal(const Scheme &weights, const Scheme &activations);

/// Why the FP4 GEMM cannot use the block-scaled mma for the pair (it needs
/// ue4m3 scales in blocks of 16 or ue8m0 in blocks of 32 on both sides),
/// or "" when it can.
std::string fp4BlockScaledMmaRefusal(const Scheme &weights,
                                     const Scheme &activations);

/// The module attribute (a unit attribute) saying that the chip the module
/// is compiled for has the block-scaled mma.sync (sm_120a:
/// targetHas(MmaSyncBlockScale)). lowbit-to-gpu is target independent; the
/// matmul compiler sets it, and the FP4 GEMM then takes the native path.
inline constexpr const char *kBlockScaledMmaAttr = "lowbit.mma_block_scale";

/// Emits the FP4 GEMM's launches before `op` (the lowbit.matmul): with a
/// computed global scale of X (nvfp4), first X's amax through the
/// workspace (GpuTensorReduce.h) into a workspace word, then the GEMM (grid
/// ceil(M / 64) * ceil(N / 128) blocks of 256 threads), then one thread
/// that zeroes that word again. `activations` passes fp4GemmRefusal. With
/// `blockScaledMma` (the chip has it) and a pair that
/// fp4BlockScaledMmaRefusal accepts, the GEMM's product is the native
/// m16n8k64 block-scaled mma; otherwise the bf16 fallback. Fails, emitting
/// nothing, when the function has a workspace too small.
mlir::LogicalResult
emitMatmulFp4Gemm(mlir::RewriterBase &rewriter,
                  mlir::ImplicitLocOpBuilder &builder, mlir::Operation *op,
                  const Scheme &weights, const Scheme &activations,
                  const MatmulBuffers &buffers, bool blockScaledMma);

/// The GEMM launch alone, reading X's codes ([M, ceil(K / 2)], nibbles
/// packed), stored block scales and (nvfp4) global from `quantizedX`, which
/// a front kernel wrote (X behind prologues), instead of quantizing X in
/// the tile loads.
void emitMatmulFp4GemmOnCodes(mlir::ImplicitLocOpBuilder &builder,
                              const Scheme &weights, const Scheme &activations,
                              const MatmulBuffers &buffers, bool blockScaledMma,
                              const QuantizedX &quantizedX);

} // namespace lowbit

#endif // LOWBIT_LOWERING_GPUMATMULFP4_H
