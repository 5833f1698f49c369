//===- GpuMatmulQuantized.h - W8A8 matmul on 8-bit tensor cores -*- C++ -*-===//
//
// The GPU kernel of `matmul w=SCHEME a=SCHEME` for 8-bit codes on both
// sides (docs/matmul-gpu.md, "W8A8"): INT8 x INT8 through mma.sync
// m16n8k32 s8 (s32 accumulators) and FP8 x FP8 through the e4m3/e5m2
// m16n8k32 (f32 accumulators), X quantized inside the GEMM as it is loaded,
// the order of matmul/QuantizedOrder.h bit for bit in the GPU emulator.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_GPUMATMULQUANTIZED_H
#define LOWBIT_LOWERING_GPUMATMULQUANTIZED_H

#include "format/Scheme.h"
#include "lowering/MatmulKernelCommon.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"

#include <string>
#include <string_view>

namespace lowbit {

/// Why the W8A8 kernel cannot run weights `weights` with activations
/// `activations` (a pair matmul::activationPairRefusal accepts), or "".
std::string quantizedGemmRefusal(const Scheme &weights,
                                 const Scheme &activations);

/// X quantized by a kernel before the GEMM (GpuMatmulFrontQuantize.h):
/// its codes ([M, K] i8, or [M, ceil(K / 2)] nibbles packed), its stored
/// scales in the activation scheme's layout ([1, 1], [M, 1] or [M,
/// ceil(K / G)]) and its computed global scale ([1, 1] f32, or null).
struct QuantizedX {
  mlir::Value codes, scales, global;
};

/// Whether the pair multiplies float codes (FP8 mma) rather than s8.
bool quantizedGemmIsFloat(const Scheme &activations);

/// Whether X's scale is per tensor, so that the GEMM reads X's amax from
/// a reduction launch before it rather than quantizing in the A load from
/// its own scan (docs/matmul-gpu.md, "W8A8").
bool quantizedGemmReducesX(const Scheme &activations);

/// Emits the launches for Y = quantize(X) . W_q^T (+ bias) into
/// buffers.output at `builder`'s point: for a per-tensor X, X's amax
/// through the workspace (a workspace parameter added to `op`'s function),
/// the GEMM, and a launch that zeroes the word again; else the GEMM alone.
/// The pair must pass quantizedGemmRefusal. Fails, emitting nothing, when
/// the function has a workspace too small.
mlir::LogicalResult emitQuantizedMatmulGemm(mlir::RewriterBase &rewriter,
                                            mlir::ImplicitLocOpBuilder &builder,
                                            mlir::Operation *op,
                                            const Scheme &weights,
                                            const Scheme &activations,
                                            const MatmulBuffers &buffers);

/// The GEMM launch alone, reading X's codes and scales from `quantizedX`
/// instead of quantizing X in its A load: the same order, so the same
/// bits as the CPU tail on the same codes.
void emitQuantizedMatmulGemmOnCodes(mlir::ImplicitLocOpBuilder &builder,
                                    const Scheme &weights,
                                    const Scheme &activations,
                                    const MatmulBuffers &buffers,
                                    const QuantizedX &quantizedX);

} // namespace lowbit

#endif // LOWBIT_LOWERING_GPUMATMULQUANTIZED_H
