//===- LowbitKvOps.cpp - KV-cache append and dequantize -------------------===//
//
// The verifiers: the scheme attributes parse as kv/KvKernelSpec.h says,
// and every buffer has the layout of kv/KvPaged.h (paged) or [batch,
// kv_heads, max_tokens, head_dim] (contiguous). Dimensions are compared
// where both are static.
//
//===----------------------------------------------------------------------===//

#include "dialect/LowbitKvOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/OpImplementation.h"

#include <cmath>

using namespace mlir;
using namespace lowbit::dialect;

namespace {

std::string dimText(int64_t dim) {
  return ShapedType::isDynamic(dim) ? "?" : std::to_string(dim);
}

/// Both static and different.
bool conflicts(int64_t lhs, int64_t rhs) {
  return !ShapedType::isDynamic(lhs) && !ShapedType::isDynamic(rhs) &&
         lhs != rhs;
}

/// The scheme attributes as kv/KvKernelSpec.h's parameters, or an error.
FailureOr<lowbit::kv::KvSchemeParams>
readScheme(Operation *op, StringRef scheme, std::optional<StringRef> convention,
           std::optional<float> epsilon, bool perHead) {
  std::string error;
  std::optional<lowbit::kv::KvSchemeParams> params =
      lowbit::kv::parseKvSchemeName(scheme.str(), &error);
  if (!params)
    return op->emitOpError() << error;
  if (params->isInt8()) {
    if (!convention)
      return op->emitOpError()
             << "needs convention = \"multiplier\" or \"divisor\" for "
             << scheme << " (the two give different bits)";
    std::optional<lowbit::kv::ScaleConvention> parsed =
        lowbit::kv::parseScaleConvention(convention->str());
    if (!parsed)
      return op->emitOpError() << "convention '" << *convention
                               << "' is neither multiplier nor divisor";
    params->int8.convention = *parsed;
    if (epsilon) {
      if (!(*epsilon > 0.0f) || !std::isfinite(*epsilon))
        return op->emitOpError() << "epsilon must be finite and > 0";
      params->int8.epsilon = *epsilon;
    }
    if (perHead)
      return op->emitOpError() << "per_head belongs to kv_fp8 schemes; "
                               << scheme << " computes a scale per group";
    return *params;
  }
  if (convention || epsilon)
    return op->emitOpError() << "convention and epsilon belong to kv_int8 "
                                "schemes; "
                             << scheme << " has static scales";
  params->perHead = perHead;
  return *params;
}

/// Checks the cache buffers against the token tensor `values` ([batch,
/// kv_heads, tokens, head_dim]: append's input or dequantize's output).
LogicalResult verifyCache(Operation *op,
                          const lowbit::kv::KvSchemeParams &params,
                          MemRefType values, MemRefType codes,
                          MemRefType scales, MemRefType positions,
                          MemRefType blockTable) {
  ArrayRef<int64_t> valueShape = values.getShape();
  ArrayRef<int64_t> codeShape = codes.getShape();
  int64_t batch = valueShape[0], heads = valueShape[1];
  int64_t tokens = valueShape[2], headDim = valueShape[3];
  const char *axisNames[] = {"batch", "kv_heads", "tokens", "head_dim"};
  bool paged = blockTable != nullptr;
  // The codes: [batch, H, max_tokens, D] or [pages, H, 16, D].
  for (int axis : {paged ? 1 : 0, 1, 3})
    if (conflicts(codeShape[axis], valueShape[axis]))
      return op->emitOpError()
             << "the codes' " << axisNames[axis] << " (dimension " << axis
             << ") is " << dimText(codeShape[axis]) << "; the tokens have "
             << dimText(valueShape[axis]);
  if (paged) {
    if (conflicts(codeShape[2], lowbit::kv::kPageTokens))
      return op->emitOpError()
             << "paged codes are [pages, kv_heads, 16, head_dim]; dimension "
                "2 is "
             << dimText(codeShape[2]);
    if (conflicts(blockTable.getShape()[0], batch))
      return op->emitOpError()
             << "the block table has " << dimText(blockTable.getShape()[0])
             << " rows for a batch of " << dimText(batch);
    int64_t blocks = blockTable.getShape()[1];
    if (!ShapedType::isDynamic(blocks) && !ShapedType::isDynamic(tokens) &&
        tokens > blocks * lowbit::kv::kPageTokens)
      return op->emitOpError()
             << tokens << " tokens per sequence do not fit in " << blocks
             << " blocks of 16";
  } else if (!ShapedType::isDynamic(codeShape[2]) &&
             !ShapedType::isDynamic(tokens) && tokens > codeShape[2]) {
    return op->emitOpError() << tokens << " tokens per sequence do not fit in "
                             << "a cache of " << codeShape[2] << " tokens";
  }
  if (conflicts(positions.getShape()[0], batch))
    return op->emitOpError()
           << "positions has " << dimText(positions.getShape()[0])
           << " entries for a batch of " << dimText(batch);

  ArrayRef<int64_t> scaleShape = scales.getShape();
  if (params.isInt8()) {
    if (scales.getRank() != 4)
      return op->emitOpError() << params.name()
                               << " stores per-group scales with the codes' "
                                  "layout (rank 4); got rank "
                               << scales.getRank();
    for (int axis = 0; axis < 3; ++axis)
      if (conflicts(scaleShape[axis], codeShape[axis]))
        return op->emitOpError()
               << "the scales' dimension " << axis << " is "
               << dimText(scaleShape[axis]) << "; the codes' is "
               << dimText(codeShape[axis]);
    if (!ShapedType::isDynamic(headDim)) {
      int64_t groupSize = params.int8.groupSize;
      int64_t width = (headDim + groupSize - 1) / groupSize;
      if (conflicts(scaleShape[3], width))
        return op->emitOpError()
               << "the scales' last dimension is " << dimText(scaleShape[3])
               << "; head_dim " << headDim << " in groups of " << groupSize
               << " needs ceil(" << headDim << " / " << groupSize
               << ") = " << width;
    }
    return success();
  }
  if (scales.getRank() != 1)
    return op->emitOpError()
           << params.name()
           << " takes its static scales as a rank-1 buffer; got rank "
           << scales.getRank();
  if (!params.perHead && conflicts(scaleShape[0], 1))
    return op->emitOpError()
           << "a per-tensor scale is one f32; got " << dimText(scaleShape[0]);
  if (params.perHead && conflicts(scaleShape[0], heads))
    return op->emitOpError()
           << "per_head needs one scale per kv head (" << dimText(heads)
           << "); got " << dimText(scaleShape[0]);
  return success();
}

template <typename KvOp>
FailureOr<lowbit::kv::KvSchemeParams> readOpScheme(KvOp op) {
  std::optional<float> epsilon;
  if (FloatAttr attr = op.getEpsilonAttr())
    epsilon = attr.getValue().convertToFloat();
  return readScheme(op, op.getScheme(), op.getConvention(), epsilon,
                    op.getPerHead());
}

template <typename KvOp> lowbit::kv::KvSchemeParams schemeParamsOf(KvOp op) {
  // An op that did not verify has no meaning; the defaults stand in.
  FailureOr<lowbit::kv::KvSchemeParams> params = readOpScheme(op);
  return succeeded(params) ? *params : lowbit::kv::KvSchemeParams{};
}

MemRefType typeOrNull(Value value) {
  return value ? cast<MemRefType>(value.getType()) : MemRefType();
}

} // namespace

#define GET_OP_CLASSES
#include "dialect/LowbitKvOps.cpp.inc"

lowbit::kv::KvSchemeParams KvAppendOp::getSchemeParams() {
  return schemeParamsOf(*this);
}

lowbit::kv::KvSchemeParams KvDequantizeOp::getSchemeParams() {
  return schemeParamsOf(*this);
}

LogicalResult KvAppendOp::verify() {
  FailureOr<lowbit::kv::KvSchemeParams> params = readOpScheme(*this);
  if (failed(params))
    return failure();
  return verifyCache(*this, *params, getInput().getType(), getCodes().getType(),
                     getScales().getType(), getPositions().getType(),
                     typeOrNull(getBlockTable()));
}

LogicalResult KvDequantizeOp::verify() {
  FailureOr<lowbit::kv::KvSchemeParams> params = readOpScheme(*this);
  if (failed(params))
    return failure();
  return verifyCache(*this, *params, getOutput().getType(),
                     getCodes().getType(), getScales().getType(),
                     getPositions().getType(), typeOrNull(getBlockTable()));
}
