//===- ArgumentShapes.cpp - A kernel parameter's shape, by role and side --===//

#include "runtime/jit/ArgumentShapes.h"

#include "format/Prologue.h"

namespace lowbit::jit {

Shape2D argumentShape(const KernelSpec &spec, KernelParamRole role,
                      std::string_view side, int64_t rows, int64_t cols) {
  switch (role) {
  case KernelParamRole::Codes:
    return codesShape(spec.scheme, rows, cols);
  case KernelParamRole::Scales:
  case KernelParamRole::Zeros:
    return scaleShape(spec.scheme, rows, cols);
  case KernelParamRole::Global:
    return {1, 1};
  case KernelParamRole::Input:
    // The side tensors' shapes (docs/fusion.md, "Spec grammar").
    if (side == "weight" || side == "smooth")
      return {1, cols};
    if (side == "residual")
      return {rows, cols};
    if (spec.op == KernelOp::Quantize)
      return {rows, prologueInputWidth(spec.prologues, cols)};
    return {rows, cols};
  case KernelParamRole::Output: // dequantize's values, the updated residual
  case KernelParamRole::Workspace:
    break;
  }
  return {rows, cols};
}

std::optional<int64_t> quantizedCols(const KernelSpec &spec,
                                     int64_t inputCols) {
  if (spec.op != KernelOp::Quantize)
    return inputCols;
  // The width is linear in the columns (1 or 2 input columns per output).
  int64_t perColumn = prologueInputWidth(spec.prologues, 1);
  if (inputCols < 0 || inputCols % perColumn != 0)
    return std::nullopt;
  return inputCols / perColumn;
}

} // namespace lowbit::jit
