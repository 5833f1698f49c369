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

#include "mlir/IR/Builders.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace lowbit::dialect;

namespace {

template <typename KiviOp> FailureOr<lowbit::kv::KiviSide> readSide(KiviOp op) {
  std::optional<int> bits = lowbit::kv::parseKiviSchemeBits(op.getScheme());
  if (!bits)
    return op.emitOpError() << "unknown KIVI scheme '" << op.getScheme()
                            << "' (kv_kivi_int4, kv_kivi_int2)";
  lowbit::kv::KiviSide side;
  side.bits = *bits;
  side.groupSize = op.getGroupSize();
  side.residual = op.getResidualWindow();
  side.perChannel = op.getPerChannel();
  std::string error;
  if (!lowbit::kv::validateKiviSide(side, &error))
    return op.emitOpError() << error;
  return side;
}

/// Checks the cache buffers against the tokens `values` (append's input or
/// dequantize's output).
LogicalResult verifyKiviCache(Operation *op, const lowbit::kv::KiviSide &side,
                              MemRefType values, MemRefType codes,
                              MemRefType scales, MemRefType zeros,
                              MemRefType residual, MemRefType lengths,
                              MemRefType blockTable) {
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
    return op->emitOpError() << buffer << " dimension " << axis << " is "
                             << have << "; " << why << " needs " << want;
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
    return op->emitOpError() << "the zeros' shape must be the scales'";
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
