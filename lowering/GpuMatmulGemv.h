//===- GpuMatmulGemv.h - The quantized-weight matmul on CUDA cores -*- C++
//-*-===//
//
// The GEMV of lowbit.matmul (docs/matmul-gpu.md): one kernel per row
// bucket of X (1, 2-4, 5-16 rows), a warp per one or two output columns,
// lane s the order's slice s, 16-byte loads of codes and X, the weights
// dequantized in registers two at a time (in X's dtype for integer codes
// with half scales, else by ScaleMath, the dequantize kernel's
// arithmetic), the slices' partials added in slice order through shared
// memory. Runs docs/matmul.md's order operation for operation.
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

/// Emits the GEMV's gpu.launch ops at the builder's insertion point, one
/// per row bucket, each of 256-thread blocks (ceil(N / 16) for the buckets
/// 1 and 2-4, ceil(N / 8) for 5-16 and, for any X, every M past it) when
/// M is in its bucket and `enabled` (an i1; null: always) holds, else an
/// empty grid, which the launchers skip.
void emitMatmulGemv(mlir::ImplicitLocOpBuilder &builder, const Scheme &scheme,
                    const MatmulBuffers &buffers, mlir::Value enabled);

} // namespace lowbit

#endif // LOWBIT_LOWERING_GPUMATMULGEMV_H
