//===- GpuMatmulGemv.h - The quantized-weight matmul on CUDA cores -*- C++
//-*-===//
//
// The GEMV of lowbit.matmul (docs/matmul-gpu.md): a warp per output column
// n, lane s the order's slice s, the weights dequantized in registers by
// ScaleMath (the dequantize kernel's arithmetic), up to 16 rows of X per
// pass, the slices' partials added in slice order through shared memory.
// Runs docs/matmul.md's order operation for operation.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_GPUMATMULGEMV_H
#define LOWBIT_LOWERING_GPUMATMULGEMV_H

#include "format/Scheme.h"
#include "lowering/MatmulKernelCommon.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace lowbit {

/// Whether the GEMV reads `scheme`'s scales: row-major, per tensor, per
/// output channel (per token, per channel on axis 0), in groups along K
/// (axis 1) or in blocks; byte or nibble codes.
bool gemvCoversScheme(const Scheme &scheme);

/// Emits the GEMV's gpu.launch at the builder's insertion point: grid x
/// is ceil(N / 8) blocks of 256 threads when `enabled` (an i1; null:
/// always) holds, else 0 (an empty grid: the launchers skip it).
void emitMatmulGemv(mlir::ImplicitLocOpBuilder &builder, const Scheme &scheme,
                    const MatmulBuffers &buffers, mlir::Value enabled);

} // namespace lowbit

#endif // LOWBIT_LOWERING_GPUMATMULGEMV_H
