//===- GpuMatmulGemm.h - The quantized-weight matmul on tensor cores -*- C++
//-*-===//
//
// The GEMM of lowbit.matmul for an f16/bf16 X (docs/matmul-gpu.md, "GEMM"):
// mma.sync m16n8k16 with f32 accumulators, X tiles, W's codes and group
// scales through cp.async (double-buffered), X read by ldmatrix, the
// staged weights dequantized per lane into B fragments by ScaleMath (the
// dequantize kernel's arithmetic), the chunks
// walked slice-major so that docs/matmul.md's order holds operation for
// operation in the emulator.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_GPUMATMULGEMM_H
#define LOWBIT_LOWERING_GPUMATMULGEMM_H

#include "format/Scheme.h"
#include "lowering/MatmulKernelCommon.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace lowbit {

/// Emits the GEMM's gpu.launch at the builder's insertion point: grid x is
/// ceil(M / 64) * ceil(N / 128) blocks of 256 threads when `enabled` (an
/// i1; null: always) holds, else 0 (an empty grid: the launchers skip it).
/// X must be f16 or bf16; the scheme one gemvCoversScheme accepts.
void emitMatmulGemm(mlir::ImplicitLocOpBuilder &builder, const Scheme &scheme,
                    const MatmulBuffers &buffers, mlir::Value enabled);

} // namespace lowbit

#endif // LOWBIT_LOWERING_GPUMATMULGEMM_H
