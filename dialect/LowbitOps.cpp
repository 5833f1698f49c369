//===- LowbitOps.cpp - lowbit quantize and dequantize ---------------------===//
//
// The verifiers. Shapes come from the scheme model (codesShape, scaleShape,
// validateSchemeForShape); this file maps them onto tensor types and decides
// which side tensors are operands and which are results. A tensor of rank
// > 2 is the model's [rows, cols] with its leading axes flattened into rows:
// codes keep the leading axes, and so do scales and zero points whose rows
// follow the input's rows; other scales have the model's 2-D shape.
//
//===----------------------------------------------------------------------===//

#include "dialect/LowbitOps.h"

#include "dialect/DequantizeOperands.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace lowbit::dialect;

namespace {

int64_t toModelDim(int64_t dim) {
  return ShapedType::isDynamic(dim) ? lowbit::kDynamic : dim;
}

std::string shapeText(ArrayRef<int64_t> dims) {
  std::string text;
  for (int64_t value : dims) {
    if (!text.empty())
      text += "x";
    text += value == lowbit::kDynamic || ShapedType::isDynamic(value)
                ? std::string("?")
                : std::to_string(value);
  }
  return text;
}

/// The logical [rows, cols] of the unquantized tensor, in the model's terms:
/// the leading axes of a tensor of rank > 2 flattened into rows.
struct LogicalShape {
  int64_t rows = 1, cols;
  /// The tensor's own axes but the last (one axis for a 2-D tensor).
  SmallVector<int64_t> leading;
  explicit LogicalShape(Type type) {
    ArrayRef<int64_t> shape = cast<RankedTensorType>(type).getShape();
    leading.assign(shape.begin(), shape.end() - 1);
    // A product past 2^62 stays there: the model refuses it as too large.
    constexpr int64_t kHuge = int64_t(1) << 62;
    for (int64_t dim : leading)
      rows = ShapedType::isDynamic(dim) || rows == lowbit::kDynamic
                 ? lowbit::kDynamic
                 : (dim != 0 && rows > kHuge / dim ? kHuge : rows * dim);
    cols = toModelDim(shape.back());
  }
  std::string text() const {
    SmallVector<int64_t> dims(leading);
    dims.push_back(cols);
    return shapeText(dims);
  }
};

/// Codes are stored in the smallest integer that holds the container.
Type codesElementType(MLIRContext *context, const lowbit::Scheme &scheme) {
  return IntegerType::get(context, lowbit::containerBits(scheme) <= 8 ? 8 : 16);
}

/// f32/f16/bf16 scales are stored as themselves; e8m0 and ue4m3 scales are
/// stored as their byte codes, because MLIR's f8E8M0FNU/f8E4M3FN types
/// have no lowering to NVVM (see TOOLCHAIN.md) and the kernels treat them as
/// bits anyway.
Type scalesElementType(MLIRContext *context, lowbit::ScaleType type) {
  Builder builder(context);
  switch (type) {
  case lowbit::ScaleType::F32:
    return builder.getF32Type();
  case lowbit::ScaleType::F16:
    return builder.getF16Type();
  case lowbit::ScaleType::BF16:
    return builder.getBF16Type();
  case lowbit::ScaleType::E8M0:
  case lowbit::ScaleType::UE4M3:
    return builder.getI8Type();
  }
  return {};
}

LogicalResult checkElementType(Operation *op, StringRef what, Value value,
                               Type expected, StringRef why) {
  Type actual = getElementTypeOrSelf(value.getType());
  if (actual == expected)
    return success();
  return op->emitOpError() << what << " must have element type " << expected
                           << " (" << why << "), got " << actual;
}

/// Static dims must equal the model's; a dynamic dim on either side matches.
/// With `keepsLeading` the expected shape is the input's leading axes and
/// the model's column count, else the model's 2-D [rows, cols].
LogicalResult checkShape(Operation *op, StringRef what, Value value,
                         lowbit::Shape2D expected, const LogicalShape &logical,
                         bool keepsLeading) {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(value.getType()).getShape();
  SmallVector<int64_t> expectedDims = {expected.rows, expected.cols};
  if (keepsLeading) {
    expectedDims.assign(logical.leading.begin(), logical.leading.end());
    expectedDims.push_back(expected.cols);
  }
  bool matches = shape.size() == expectedDims.size();
  for (size_t dim = 0; matches && dim < shape.size(); ++dim)
    matches = expectedDims[dim] == lowbit::kDynamic ||
              ShapedType::isDynamic(expectedDims[dim]) ||
              ShapedType::isDynamic(shape[dim]) ||
              shape[dim] == expectedDims[dim];
  if (matches)
    return success();
  return op->emitOpError() << what << " shape " << shapeText(shape)
                           << " does not match the scheme's "
                           << shapeText(expectedDims) << " for a "
                           << logical.text() << " tensor";
}

/// The per-tensor global scale is one f32, as tensor<1xf32> or
/// tensor<1x1xf32>.
LogicalResult checkGlobal(Operation *op, Value global) {
  auto type = cast<RankedTensorType>(global.getType());
  if (llvm::all_of(type.getShape(), [](int64_t dim) { return dim == 1; }))
    return success();
  return op->emitOpError() << "global scale must be tensor<1xf32> or "
                              "tensor<1x1xf32>, got "
                           << type;
}

/// Where a side tensor (scales, zeros, global scale) must be.
enum class Slot { Absent, Operand, Result, OperandOrResult };

LogicalResult checkSlot(Operation *op, StringRef what, Slot slot, Value operand,
                        Value result, StringRef why) {
  switch (slot) {
  case Slot::Absent:
    if (operand)
      return op->emitOpError() << "takes no " << what << " operand: " << why;
    if (result)
      return op->emitOpError() << "produces no " << what << " result: " << why;
    return success();
  case Slot::Operand:
    if (result)
      return op->emitOpError() << "produces no " << what << " result: " << why;
    if (!operand)
      return op->emitOpError() << "needs a " << what << " operand: " << why;
    return success();
  case Slot::Result:
    if (operand)
      return op->emitOpError() << "takes no " << what << " operand: " << why;
    if (!result)
      return op->emitOpError()
             << "must produce a " << what << " result: " << why;
    return success();
  case Slot::OperandOrResult:
    if (operand && result)
      return op->emitOpError()
             << "takes the " << what
             << " as an operand or produces it as a result, not both";
    if (!operand && !result)
      return op->emitOpError()
             << "needs a " << what << " operand or result: " << why;
    return success();
  }
  return success();
}

/// Checks the side tensors that exist (operand or result) against the
/// scheme, for a logical tensor of `logical` shape.
LogicalResult checkSideTensors(Operation *op, const lowbit::Scheme &scheme,
                               const LogicalShape &logical, Value scales,
                               Value zeros, Value global) {
  MLIRContext *context = op->getContext();
  lowbit::Shape2D scaleShape =
      lowbit::scaleShape(scheme, logical.rows, logical.cols);
  bool keepsLeading =
      logical.leading.size() > 1 && lowbit::scaleRowsFollowRows(scheme);
  if (scales) {
    std::string why =
        std::string(lowbit::scaleTypeName(scheme.scale.type)) + " scales";
    if (failed(checkElementType(op, "scales", scales,
                                scalesElementType(context, scheme.scale.type),
                                why)) ||
        failed(checkShape(op, "scales", scales, scaleShape, logical,
                          keepsLeading)))
      return failure();
  }
  if (zeros) {
    if (failed(checkElementType(op, "zeros", zeros,
                                codesElementType(context, scheme),
                                "zero points are stored like codes")) ||
        failed(
            checkShape(op, "zeros", zeros, scaleShape, logical, keepsLeading)))
      return failure();
  }
  if (global && failed(checkGlobal(op, global)))
    return failure();
  return success();
}

LogicalResult checkCodes(Operation *op, const lowbit::Scheme &scheme,
                         const LogicalShape &logical, Value codes) {
  std::string why =
      std::to_string(lowbit::containerBits(scheme)) + "-bit container, " +
      std::string(lowbit::packingName(scheme.packing)) + " packing";
  if (failed(checkElementType(op, "codes", codes,
                              codesElementType(op->getContext(), scheme), why)))
    return failure();
  return checkShape(op, "codes", codes,
                    lowbit::codesShape(scheme, logical.rows, logical.cols),
                    logical, /*keepsLeading=*/logical.leading.size() > 1);
}

LogicalResult checkSchemeForShape(Operation *op, const lowbit::Scheme &scheme,
                                  const LogicalShape &logical) {
  std::string error;
  if (lowbit::validateSchemeForShape(scheme, logical.rows, logical.cols,
                                     &error))
    return success();
  return op->emitOpError() << "scheme does not fit a " << logical.text()
                           << " tensor: " << error;
}

const char *modeReason(const lowbit::Scheme &scheme) {
  return scheme.scale.mode == lowbit::ScaleMode::Static
             ? "the scheme's scales are static (passed in)"
             : "the scheme's scales are dynamic (computed by the kernel)";
}

} // namespace

LogicalResult QuantizeOp::verify() {
  Operation *op = getOperation();
  lowbit::Scheme scheme = getScheme().getScheme();
  LogicalShape logical(getInput().getType());
  if (failed(checkSchemeForShape(op, scheme, logical)))
    return failure();

  bool isStatic = scheme.scale.mode == lowbit::ScaleMode::Static;
  Slot scalesSlot = isStatic ? Slot::Operand : Slot::Result;
  Slot zerosSlot = !scheme.scale.zeroPoint ? Slot::Absent : scalesSlot;
  // A dynamic scheme may still be handed its global scale (vLLM passes the
  // NVFP4 global scale in); a static one is handed everything.
  Slot globalSlot = scheme.scale.globalScale == lowbit::GlobalScale::None
                        ? Slot::Absent
                    : isStatic ? Slot::Operand
                               : Slot::OperandOrResult;
  const char *zerosWhy = scheme.scale.zeroPoint
                             ? modeReason(scheme)
                             : "the scheme has no zero point";
  const char *globalWhy = scheme.scale.globalScale == lowbit::GlobalScale::None
                              ? "the scheme has no global scale"
                              : modeReason(scheme);
  if (failed(checkSlot(op, "scales", scalesSlot, getStaticScales(), getScales(),
                       modeReason(scheme))) ||
      failed(checkSlot(op, "zeros", zerosSlot, getStaticZeros(), getZeros(),
                       zerosWhy)) ||
      failed(checkSlot(op, "global scale", globalSlot, getStaticGlobal(),
                       getGlobal(), globalWhy)))
    return failure();

  if (failed(checkCodes(op, scheme, logical, getCodes())))
    return failure();
  Value scales = getStaticScales() ? getStaticScales() : getScales();
  Value zeros = getStaticZeros() ? getStaticZeros() : getZeros();
  Value global = getStaticGlobal() ? getStaticGlobal() : getGlobal();
  return checkSideTensors(op, scheme, logical, scales, zeros, global);
}

LogicalResult DequantizeOp::verify() {
  return verifyDequantizeOperands(getOperation(), getScheme().getScheme(),
                                  getResult().getType(), getCodes(),
                                  getScales(), getZeros(), getGlobal());
}

LogicalResult lowbit::dialect::verifyDequantizeOperands(
    Operation *op, const lowbit::Scheme &scheme, Type resultType, Value codes,
    Value scales, Value zeros, Value global) {
  LogicalShape logical(resultType);
  if (failed(checkSchemeForShape(op, scheme, logical)))
    return failure();
  Slot zerosSlot = scheme.scale.zeroPoint ? Slot::Operand : Slot::Absent;
  Slot globalSlot = scheme.scale.globalScale == lowbit::GlobalScale::None
                        ? Slot::Absent
                        : Slot::Operand;
  if (failed(checkSlot(op, "zeros", zerosSlot, zeros, Value(),
                       scheme.scale.zeroPoint
                           ? "the scheme has a zero point"
                           : "the scheme has no zero point")) ||
      failed(checkSlot(op, "global scale", globalSlot, global, Value(),
                       globalSlot == Slot::Absent
                           ? "the scheme has no global scale"
                           : "the scheme has a global scale")) ||
      failed(checkCodes(op, scheme, logical, codes)))
    return failure();
  return checkSideTensors(op, scheme, logical, scales, zeros, global);
}

//===----------------------------------------------------------------------===//
// Scalar conversions
//===----------------------------------------------------------------------===//

namespace {

/// PTX spells the roundings rn, rz and rp; so do the ops.
std::optional<lowbit::Rounding> parseRoundingName(StringRef name) {
  if (name == "rn")
    return lowbit::Rounding::NearestEven;
  if (name == "rz")
    return lowbit::Rounding::TowardZero;
  if (name == "rp")
    return lowbit::Rounding::TowardPosInf;
  return std::nullopt;
}

/// Codes live in the smallest of i8/i16 that holds the format; anything
/// else would leave the lowering guessing which bits are the code.
unsigned codeWidthFor(const lowbit::Format &format) {
  return format.bits() <= 8 ? 8 : 16;
}

/// Checks that `values` (f32 or vector of f32) and `codes` (iN or vector of
/// iN) have the same shape and that N fits `format`.
LogicalResult checkCodeType(Operation *op, const lowbit::Format &format,
                            Type values, Type codes) {
  auto valuesVector = dyn_cast<VectorType>(values);
  auto codesVector = dyn_cast<VectorType>(codes);
  if (bool(valuesVector) != bool(codesVector) ||
      (valuesVector && valuesVector.getShape() != codesVector.getShape()))
    return op->emitOpError()
           << "values " << values << " and codes " << codes
           << " must both be scalars or vectors of the same shape";
  unsigned width = getElementTypeOrSelf(codes).getIntOrFloatBitWidth();
  unsigned expected = codeWidthFor(format);
  if (width != expected)
    return op->emitOpError()
           << "codes of " << format.name() << " (" << format.bits()
           << " bits) must be i" << expected << ", got i" << width;
  return success();
}

} // namespace

lowbit::EncodeOptions EncodeOp::getEncodeOptions() {
  lowbit::EncodeOptions options;
  options.saturate = getSaturate();
  options.rounding =
      parseRoundingName(getRounding()).value_or(lowbit::Rounding::NearestEven);
  return options;
}

LogicalResult EncodeOp::verify() {
  if (!parseRoundingName(getRounding()))
    return emitOpError() << "rounding must be \"rn\", \"rz\" or \"rp\", got \""
                         << getRounding() << "\"";
  return checkCodeType(getOperation(), getModelFormat(), getInput().getType(),
                       getResult().getType());
}

LogicalResult DecodeOp::verify() {
  return checkCodeType(getOperation(), getModelFormat(), getResult().getType(),
                       getInput().getType());
}

#define GET_OP_CLASSES
#include "dialect/LowbitOps.cpp.inc"
