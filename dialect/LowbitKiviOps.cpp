//===- LowbitKiviOps.cpp - KIVI cache append and dequantize ---------------===//
//
// The verifiers: the attributes name a valid KIVI side (kv/KvKivi.h's
// limits), and every buffer has kv/KvKiviKernelSpec.h's shape relative to
// the tokens ([batch, kv_heads, tokens, head_dim]). Dimensions are compared
// where both are static; the messages name the buffer, the dimension and
// both values.
//
//===----------------------------------------------------------------------===//

#include "dialect/LowbitKiviOps.h"
#include "kv/SoftmaxScale.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/OpImplementation.h"

#include <cmath>

using namespace mlir;
using namespace lowbit::dialect;

namespace {

FailureOr<lowbit::kv::KiviSide> readSide(Operation *op, StringRef scheme,
                                         int64_t groupSize, int64_t residual,
                                         bool perChannel, bool integerZero) {
  std::optional<int> bits = lowbit::kv::parseKiviSchemeBits(scheme);
  if (!bits)
    return op->emitOpError() << "unknown KIVI scheme '" << scheme
                             << "' (kv_kivi_int4, kv_kivi_int2)";
  lowbit::kv::KiviSide side;
  side.bits = *bits;
  side.groupSize = groupSize;
  side.residual = residual;
  side.perChannel = perChannel;
  side.zero =
      integerZero ? lowbit::kv::KiviZero::Integer : lowbit::kv::KiviZero::Float;
  std::string error;
  if (!lowbit::kv::validateKiviSide(side, &error))
    return op->emitOpError() << error;
  return side;
}

template <typename KiviOp> FailureOr<lowbit::kv::KiviSide> readSide(KiviOp op) {
  return readSide(op, op.getScheme(), op.getGroupSize(), op.getResidualWindow(),
                  op.getPerChannel(), op.getIntegerZero());
}

/// Checks the cache buffers against the tokens `values` (append's input or
/// dequantize's output); `name` is prefixed to the buffers' names in the
/// messages ("key " and "value " for decode attention).
LogicalResult verifyKiviCache(Operation *op, const lowbit::kv::KiviSide &side,
                              MemRefType values, MemRefType codes,
                              MemRefType scales, MemRefType zeros,
                              MemRefType residual, MemRefType lengths,
                              MemRefType blockTable, StringRef name = "") {
  ArrayRef<int64_t> tokens = values.getShape();
  int64_t batch = tokens[0], heads = tokens[1], headDim = tokens[3];
  bool paged = blockTable != nullptr;
  bool known = !ShapedType::isDynamic(headDim);
  // Expects dimension `axis` of `buffer` to be `want` (when both static).
  auto expect = [&](StringRef buffer, MemRefType type, int axis, int64_t want,
                    StringRef why) -> LogicalResult {
    int64_t have = type.getShape()[axis];
    if (ShapedType::isDynamic(have) || ShapedType::isDynamic(want) ||
        have == want)
      return success();
    // lengths and the block table are both sides' own.
    bool shared = buffer == "lengths" || buffer == "block table";
    return op->emitOpError()
           << (shared ? StringRef() : name) << buffer << " dimension " << axis
           << " is " << have << "; " << why << " needs " << want;
  };
  int64_t codeWidth =
      known ? side.codeWidth(headDim) : int64_t(ShapedType::kDynamic);
  int64_t paramWidth =
      known ? side.paramWidth(headDim) : int64_t(ShapedType::kDynamic);
  std::string widthWhy = side.bits == 4 ? "head_dim nibble-packed (ceil(D / 2))"
                                        : "head_dim at one 2-bit code per byte";
  std::string paramWhy = side.perChannel
                             ? std::string("per_channel (one per channel)")
                             : "groups of " + std::to_string(side.groupSize) +
                                   " channels (ceil(D / G))";
  if (failed(expect("codes", codes, 1, heads, "kv_heads")) ||
      failed(expect("codes", codes, 3, codeWidth, widthWhy)) ||
      failed(expect("residual", residual, 0, batch, "the batch")) ||
      failed(expect("residual", residual, 1, heads, "kv_heads")) ||
      failed(expect("residual", residual, 2, side.residualSlots(),
                    "the ring of R + G tokens")) ||
      failed(expect("residual", residual, 3, headDim, "head_dim")) ||
      failed(expect("lengths", lengths, 0, batch, "the batch")) ||
      failed(expect("scales", scales, 1, heads, "kv_heads")) ||
      failed(expect("scales", scales, 3, paramWidth, paramWhy)))
    return failure();
  if (paged) {
    if (failed(expect("codes", codes, 2, lowbit::kv::kPageTokens,
                      "a page of 16 tokens")) ||
        failed(expect("block table", blockTable, 0, batch, "the batch")))
      return failure();
  } else if (failed(expect("codes", codes, 0, batch, "the batch"))) {
    return failure();
  }
  if (side.perChannel) {
    if (failed(expect("scales", scales, 0, codes.getShape()[0],
                      "the codes' dimension 0")))
      return failure();
    if (paged && failed(expect("scales", scales, 2, side.pageParamRows(),
                               "one row per group starting in a page "
                               "(ceil(16 / G))")))
      return failure();
  } else {
    for (int axis = 0; axis < 3; ++axis)
      if (failed(expect("scales", scales, axis, codes.getShape()[axis],
                        "the codes' layout")))
        return failure();
  }
  if (zeros.getShape() != scales.getShape())
    return op->emitOpError() << "the " << name << "zeros' shape must be the "
                             << name << "scales'";
  return success();
}

MemRefType typeOrNull(Value value) {
  return value ? cast<MemRefType>(value.getType()) : MemRefType();
}

template <typename KiviOp> lowbit::kv::KiviSide sideOf(KiviOp op) {
  // An op that did not verify has no meaning; the defaults stand in.
  FailureOr<lowbit::kv::KiviSide> side = readSide(op);
  return succeeded(side) ? *side : lowbit::kv::KiviSide{};
}

} // namespace

#define GET_OP_CLASSES
#include "dialect/LowbitKiviOps.cpp.inc"

lowbit::kv::KiviSide KiviAppendOp::getSide() { return sideOf(*this); }

lowbit::kv::KiviSide KiviDequantizeOp::getSide() { return sideOf(*this); }

LogicalResult KiviAppendOp::verify() {
  FailureOr<lowbit::kv::KiviSide> side = readSide(*this);
  if (failed(side))
    return failure();
  if (getResidual().getType().getElementType() !=
      getInput().getType().getElementType())
    return emitOpError() << "the residual holds the input's element type";
  return verifyKiviCache(*this, *side, getInput().getType(),
                         getCodes().getType(), getScales().getType(),
                         getZeros().getType(), getResidual().getType(),
                         getLengths().getType(), typeOrNull(getBlockTable()));
}

LogicalResult KiviDequantizeOp::verify() {
  FailureOr<lowbit::kv::KiviSide> side = readSide(*this);
  if (failed(side))
    return failure();
  int64_t positions = getPositions().getType().getShape()[0];
  int64_t batch = getOutput().getType().getShape()[0];
  if (!ShapedType::isDynamic(positions) && !ShapedType::isDynamic(batch) &&
      positions != batch)
    return emitOpError() << "the positions' dimension 0 is " << positions
                         << "; the batch needs " << batch;
  return verifyKiviCache(*this, *side, getOutput().getType(),
                         getCodes().getType(), getScales().getType(),
                         getZeros().getType(), getResidual().getType(),
                         getLengths().getType(), typeOrNull(getBlockTable()));
}

lowbit::kv::KiviSide KiviDecodeAttentionOp::getKeySide() {
  FailureOr<lowbit::kv::KiviSide> side =
      readSide(*this, getScheme(), getGroupSize(), getResidualWindow(),
               getPerChannelKeys(), getIntegerZero());
  return succeeded(side) ? *side : lowbit::kv::KiviSide{};
}

lowbit::kv::KiviSide KiviDecodeAttentionOp::getValueSide() {
  FailureOr<lowbit::kv::KiviSide> side =
      readSide(*this, getScheme(), getGroupSize(), getResidualWindow(), false,
               getIntegerZero());
  return succeeded(side) ? *side : lowbit::kv::KiviSide{};
}

LogicalResult KiviDecodeAttentionOp::verify() {
  FailureOr<lowbit::kv::KiviSide> keySide =
      readSide(*this, getScheme(), getGroupSize(), getResidualWindow(),
               getPerChannelKeys(), getIntegerZero());
  if (failed(keySide))
    return failure();
  lowbit::kv::KiviSide valueSide = *keySide;
  valueSide.perChannel = false;
  if (std::string refusal =
          lowbit::kv::softmaxScaleRefusal(getSoftmaxScale().convertToFloat());
      !refusal.empty())
    return emitOpError() << refusal;
  if (getSplitTokens() < 1)
    return emitOpError() << "split_tokens is " << getSplitTokens()
                         << "; it must be >= 1";
  MemRefType keyRing = getKeyResidual().getType();
  if (getValueResidual().getType().getElementType() != keyRing.getElementType())
    return emitOpError()
           << "the value residual holds the key residual's element type";
  if (getValueCodes().getType().getShape() !=
      getKeyCodes().getType().getShape())
    return emitOpError() << "key and value codes have different shapes";
  ArrayRef<int64_t> query = getQuery().getType().getShape();
  int64_t batch = query[0], qHeads = query[1], headDim = query[2];
  int64_t kvHeads = keyRing.getShape()[1];
  auto known = [](int64_t size) { return !ShapedType::isDynamic(size); };
  if (known(qHeads) && known(kvHeads) && qHeads % kvHeads != 0)
    return emitOpError() << "query heads (" << qHeads
                         << ") are not a multiple of kv_heads (" << kvHeads
                         << ")";
  // The tokens both sides hold: [batch, kv_heads, ?, head_dim].
  auto tokens = MemRefType::get({batch, kvHeads, ShapedType::kDynamic, headDim},
                                keyRing.getElementType());
  MemRefType table = typeOrNull(getBlockTable());
  if (failed(verifyKiviCache(*this, *keySide, tokens, getKeyCodes().getType(),
                             getKeyScales().getType(), getKeyZeros().getType(),
                             keyRing, getLengths().getType(), table, "key ")) ||
      failed(
          verifyKiviCache(*this, valueSide, tokens, getValueCodes().getType(),
                          getValueScales().getType(), getValueZeros().getType(),
                          getValueResidual().getType(), getLengths().getType(),
                          table, "value ")))
    return failure();
  // Expects `buffer`'s dimension `axis` to be `want` (when both are known).
  auto expect = [&](StringRef buffer, ArrayRef<int64_t> shape, int axis,
                    int64_t want, StringRef why) -> LogicalResult {
    if (!known(shape[axis]) || !known(want) || shape[axis] == want)
      return success();
    return emitOpError() << buffer << " dimension " << axis << " is "
                         << shape[axis] << "; " << why << " needs " << want;
  };
  ArrayRef<int64_t> output = getOutput().getType().getShape();
  ArrayRef<int64_t> partials = getPartials().getType().getShape();
  int64_t group = known(qHeads) && known(kvHeads)
                      ? qHeads / kvHeads
                      : int64_t(ShapedType::kDynamic);
  int64_t maxTokens = getKeyCodes().getType().getShape()[2];
  if (table)
    maxTokens = known(table.getShape()[1])
                    ? lowbit::kv::kPageTokens * table.getShape()[1]
                    : int64_t(ShapedType::kDynamic);
  int64_t splits = known(maxTokens)
                       ? (maxTokens + getSplitTokens() - 1) / getSplitTokens()
                       : int64_t(ShapedType::kDynamic);
  int64_t row = known(headDim) ? headDim + 2 : int64_t(ShapedType::kDynamic);
  if (failed(expect("output", output, 0, batch, "the batch")) ||
      failed(expect("output", output, 1, qHeads, "the query heads")) ||
      failed(expect("output", output, 2, headDim, "head_dim")) ||
      failed(expect("partials", partials, 0, batch, "the batch")) ||
      failed(expect("partials", partials, 1, kvHeads, "kv_heads")) ||
      failed(expect("partials", partials, 2, splits,
                    "ceil(max tokens / split_tokens)")) ||
      failed(
          expect("partials", partials, 3, group, "query heads per kv head")) ||
      failed(expect("partials", partials, 4, row, "head_dim + 2")))
    return failure();
  return success();
}
