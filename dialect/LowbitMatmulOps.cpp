//===- LowbitMatmulOps.cpp - lowbit.matmul's verifier ---------------------===//
//
// Refuses what no kernel can mean: a scheme that is not a weight scheme, a
// group that straddles K without a tail, weights that are not
// lowbit.dequantize's buffers for [N, K], sizes of X, Y and the bias that
// disagree (docs/matmul.md).
//
//===----------------------------------------------------------------------===//

#include "dialect/LowbitMatmulOps.h"

#include "dialect/DequantizeOperands.h"
#include "matmul/MatmulPrologues.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace lowbit::dialect;

namespace {

bool isDynamic(int64_t size) { return ShapedType::isDynamic(size); }

/// Two sizes agree when either is dynamic or they are equal.
bool compatible(int64_t a, int64_t b) {
  return isDynamic(a) || isDynamic(b) || a == b;
}

std::string sizeText(int64_t size) {
  return isDynamic(size) ? std::string("?") : std::to_string(size);
}

int64_t toModelSize(int64_t size) {
  return isDynamic(size) ? lowbit::kDynamic : size;
}

lowbit::ValueType dtypeOf(Value value) {
  Type element = getElementTypeOrSelf(value.getType());
  if (element.isF16())
    return lowbit::ValueType::F16;
  if (element.isBF16())
    return lowbit::ValueType::BF16;
  return lowbit::ValueType::F32;
}

} // namespace

lowbit::Scheme MatmulOp::getWeightScheme() { return getScheme().getScheme(); }

std::optional<lowbit::Scheme> MatmulOp::getActivationScheme() {
  if (SchemeAttr scheme = getActSchemeAttr())
    return scheme.getScheme();
  return std::nullopt;
}

std::vector<lowbit::Prologue> MatmulOp::getPrologueChain() {
  std::vector<lowbit::Prologue> chain;
  if (std::optional<ArrayAttr> texts = getPrologues())
    for (Attribute text : *texts)
      if (std::optional<lowbit::Prologue> prologue =
              lowbit::parsePrologue(cast<StringAttr>(text).getValue().str()))
        chain.push_back(std::move(*prologue));
  return chain;
}

lowbit::ValueType MatmulOp::getInputDtype() { return dtypeOf(getX()); }

lowbit::ValueType MatmulOp::getOutputDtype() { return dtypeOf(getResult()); }

int64_t MatmulOp::getM() { return getX().getType().getDimSize(0); }

int64_t MatmulOp::getK() { return getX().getType().getDimSize(1); }

int64_t MatmulOp::getN() {
  int64_t n = getResult().getType().getDimSize(1);
  return isDynamic(n) ? getCodes().getType().getDimSize(0) : n;
}

LogicalResult MatmulOp::verifyPrologues(int64_t k) {
  std::optional<ArrayAttr> texts = getPrologues();
  if (!texts) {
    if (!getPrologueInputs().empty())
      return emitOpError() << "has prologue_inputs but no prologues";
    return success();
  }
  if (!getActSchemeAttr())
    return emitOpError() << "prologues go in front of the activations' "
                            "quantize: they need act_scheme";
  std::vector<lowbit::Prologue> chain;
  for (Attribute text : *texts) {
    std::string error;
    std::optional<lowbit::Prologue> prologue =
        lowbit::parsePrologue(cast<StringAttr>(text).getValue().str(), &error);
    if (!prologue)
      return emitOpError() << "prologue " << text << ": " << error;
    chain.push_back(std::move(*prologue));
  }
  if (std::string refusal = lowbit::matmul::matmulPrologueRefusal(chain);
      !refusal.empty())
    return emitOpError() << refusal;
  size_t sides = lowbit::matmul::matmulSideInputNames(chain).size();
  if (getPrologueInputs().size() != sides)
    return emitOpError() << "the prologues read " << sides
                         << " side tensors, got " << getPrologueInputs().size()
                         << " prologue_inputs";
  Type element = getElementTypeOrSelf(getX().getType());
  for (Value side : getPrologueInputs()) {
    auto type = cast<RankedTensorType>(side.getType());
    if (type.getElementType() != element || type.getDimSize(0) != 1 ||
        !compatible(type.getDimSize(1), k))
      return emitOpError() << "a prologue side tensor is " << type
                           << "; the prologues read [1, K] in X's dtype";
  }
  return success();
}

LogicalResult MatmulOp::verify() {
  lowbit::Scheme scheme = getWeightScheme();
  if (std::string refusal = lowbit::matmul::weightSchemeRefusal(scheme);
      !refusal.empty())
    return emitOpError() << "scheme " << getScheme()
                         << " is not a weight scheme: " << refusal;
  if (std::optional<lowbit::Scheme> activations = getActivationScheme())
    if (std::string refusal =
            lowbit::matmul::activationPairRefusal(scheme, *activations);
        !refusal.empty())
      return emitOpError() << "act_scheme " << getActSchemeAttr() << ": "
                           << refusal;
  int64_t k = getK();
  if (LogicalResult chain = verifyPrologues(k); failed(chain))
    return chain;
  ArrayRef<int64_t> result = getResult().getType().getShape();
  int64_t m = getM(), codeRows = getCodes().getType().getDimSize(0);
  if (!compatible(result[0], m))
    return emitOpError() << "result rows (" << sizeText(result[0])
                         << ") differ from X's rows M (" << sizeText(m) << ")";
  if (!compatible(result[1], codeRows))
    return emitOpError() << "result columns (" << sizeText(result[1])
                         << ") differ from the weights' rows N ("
                         << sizeText(codeRows) << ")";
  int64_t n = getN();
  if (getBias() && !compatible(getBias().getType().getDimSize(0), n))
    return emitOpError() << "bias has "
                         << sizeText(getBias().getType().getDimSize(0))
                         << " elements for N = " << sizeText(n);
  std::string error;
  lowbit::matmul::MatmulSpec spec;
  spec.scheme = scheme;
  spec.activation = getActivationScheme();
  spec.prologues = getPrologueChain();
  if (!lowbit::matmul::validateMatmulShape(spec, toModelSize(n), toModelSize(k),
                                           &error))
    return emitOpError() << error;
  // The weights are exactly lowbit.dequantize's operands for [N, K].
  auto weightType =
      RankedTensorType::get({n, k}, Builder(getContext()).getF32Type());
  return verifyDequantizeOperands(getOperation(), scheme, weightType,
                                  getCodes(), getScales(), getZeros(),
                                  getGlobal());
}

#define GET_OP_CLASSES
#include "dialect/LowbitMatmulOps.cpp.inc"
