//===- DequantizeOperands.h - A quantized set's operands, checked -*- C++
//-*-===//
//
// lowbit.dequantize's checks of the buffers of a quantized set, shared by
// every op that reads one (lowbit.matmul's weights), so that they all take
// exactly the dequantize kernel's buffers (docs/matmul.md).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_DIALECT_DEQUANTIZEOPERANDS_H
#define LOWBIT_DIALECT_DEQUANTIZEOPERANDS_H

#include "format/Scheme.h"

#include "mlir/IR/Operation.h"
#include "mlir/Support/LogicalResult.h"

namespace lowbit::dialect {

/// For a dequantized result of `resultType` with `scheme`: the scheme fits
/// the shape; codes, scales, zero points and the global scale exist exactly
/// where the scheme has them, with the model's element types and shapes.
/// `zeros` and `global` may be null. Errors are emitted on `op`.
mlir::LogicalResult verifyDequantizeOperands(mlir::Operation *op,
                                             const lowbit::Scheme &scheme,
                                             mlir::Type resultType,
                                             mlir::Value codes,
                                             mlir::Value scales,
                                             mlir::Value zeros,
                                             mlir::Value global);

} // namespace lowbit::dialect

#endif // LOWBIT_DIALECT_DEQUANTIZEOPERANDS_H
