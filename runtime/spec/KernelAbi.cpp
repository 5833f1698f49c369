//===- KernelAbi.cpp - A spec's kernel parameters, without MLIR -----------===//

#include "runtime/spec/KernelAbi.h"

#include "format/Prologue.h"
#include "format/Quantize.h"

namespace lowbit {

namespace {
const char *sideName(PrologueOperand operand) {
  switch (operand) {
  case PrologueOperand::Weight:
    return "weight";
  case PrologueOperand::Residual:
    return "residual";
  case PrologueOperand::Smooth:
    return "smooth";
  }
  return "";
}
} // namespace

std::vector<KernelAbiParam> kernelAbi(const KernelSpec &spec) {
  using Role = KernelParamRole;
  using Element = KernelParamElement;
  const Scheme &scheme = spec.scheme;
  Shape2D values{spec.rows, spec.cols};
  Shape2D codes = codesShape(scheme, spec.rows, spec.cols);
  Shape2D scales = scaleShape(scheme, spec.rows, spec.cols);
  Shape2D one{1, 1};
  bool zeros = scheme.scale.zeroPoint;
  std::vector<KernelAbiParam> params;
  if (spec.op == KernelOp::Dequantize) {
    params.push_back({Role::Codes, false, Element::Byte, codes});
    params.push_back({Role::Scales, false, Element::Scale, scales});
    if (zeros)
      params.push_back({Role::Zeros, false, Element::Byte, scales});
    if (spec.hasGlobal())
      params.push_back({Role::Global, false, Element::F32, one});
    params.push_back({Role::Output, true, Element::Value, values});
    return params;
  }
  // Quantize: operands in the op's order, then results in the op's order.
  // A fused kernel's prologues add their side tensors after the input and
  // the updated residual last (docs/fusion.md).
  params.push_back(
      {Role::Input,
       false,
       Element::Value,
       {spec.rows, spec.cols == kDynamic
                       ? kDynamic
                       : prologueInputWidth(spec.prologues, spec.cols)}});
  bool writesResidual = false;
  for (const Prologue &prologue : spec.prologues) {
    writesResidual |= prologueWritesResidual(prologue.kind);
    for (PrologueOperand operand : prologueOperands(prologue.kind))
      params.push_back({Role::Input, false, Element::Value,
                        operand == PrologueOperand::Residual
                            ? values
                            : Shape2D{1, spec.cols},
                        sideName(operand)});
  }
  bool globalGiven =
      spec.hasGlobal() &&
      (spec.isStatic() || spec.globalSource == GlobalSource::Given);
  if (spec.isStatic()) {
    params.push_back({Role::Scales, false, Element::Scale, scales});
    if (zeros)
      params.push_back({Role::Zeros, false, Element::Byte, scales});
  }
  if (globalGiven)
    params.push_back({Role::Global, false, Element::F32, one});
  params.push_back({Role::Codes, true, Element::Byte, codes});
  if (!spec.isStatic()) {
    params.push_back({Role::Scales, true, Element::Scale, scales});
    if (zeros)
      params.push_back({Role::Zeros, true, Element::Byte, scales});
  }
  if (spec.hasGlobal() && !globalGiven)
    params.push_back({Role::Global, true, Element::F32, one});
  if (writesResidual)
    params.push_back({Role::Output, true, Element::Value, values, "residual"});
  return params;
}

size_t kernelParamElementBytes(const KernelSpec &spec,
                               KernelParamElement element) {
  switch (element) {
  case KernelParamElement::Value:
    return spec.valueType == ValueType::F32 ? 4 : 2;
  case KernelParamElement::Scale:
    return size_t(scaleStorageBits(spec.scheme.scale.type) / 8);
  case KernelParamElement::Byte:
    return 1;
  case KernelParamElement::F32:
    return 4;
  }
  return 1;
}

} // namespace lowbit
