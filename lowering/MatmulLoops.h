//===- MatmulLoops.h - lowbit.matmul's loops, shared parts ------*- C++ -*-===//
//
// What the two loop forms of lowbit.matmul (docs/matmul.md) write the same
// way: the weight-only order (LowbitMatmulToLoops.cpp) and the
// quantized-activation order (QuantizedMatmulLoops.cpp) both end with the
// bias add and the output rounding.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_MATMULLOOPS_H
#define LOWBIT_LOWERING_MATMULLOOPS_H

#include "dialect/LowbitMatmulOps.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Support/LogicalResult.h"

namespace lowbit::matmul_loops {

/// acc as Y's element: RNE, a NaN the canonical NaN of Y's type
/// (matmul::roundOutputBits).
mlir::Value roundOutput(mlir::ImplicitLocOpBuilder &b, mlir::Value acc,
                        mlir::Type outputType);

/// bias[col]: the kernel ABI's bias is a [1, N] row viewed as [N]; the row
/// itself is read (the CPU tail keeps no reshaped views).
mlir::Value loadBias(mlir::ImplicitLocOpBuilder &b, mlir::Value bias,
                     mlir::Value col);

/// Writes the quantized-activation order (matmul/QuantizedOrder.h) of `op`
/// (which has an act_scheme) into `output`, at the op: X quantized by the
/// activations' own lowbit.quantize into scratch, both sides' codes decoded
/// to their values and their scales to f32 factors, then one scf.parallel
/// unit per (m, n) running the K blocks. Does not erase `op`.
mlir::LogicalResult lowerQuantizedMatmul(dialect::MatmulOp op,
                                         mlir::Value output);

} // namespace lowbit::matmul_loops

#endif // LOWBIT_LOWERING_MATMULLOOPS_H
