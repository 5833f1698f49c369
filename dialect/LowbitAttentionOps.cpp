//===- LowbitAttentionOps.cpp - kv_decode_attention's verifier ------------===//
//
// Refuses what the kernels cannot mean: heads that do not divide, shapes
// that disagree, a format or scale layout the op does not take
// (docs/decode-attention.md).
//
//===----------------------------------------------------------------------===//

#include "dialect/LowbitAttentionOps.h"

#include "format/Format.h"
#include "kv/SoftmaxScale.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"

#include <cmath>

using namespace mlir;
using namespace lowbit::dialect;

namespace {

constexpr int64_t kPageTokens = 16;

bool isDynamic(int64_t size) { return ShapedType::isDynamic(size); }

/// Two sizes agree when either is dynamic or they are equal.
bool compatible(int64_t a, int64_t b) {
  return isDynamic(a) || isDynamic(b) || a == b;
}

int64_t ceilDivStatic(int64_t a, int64_t b) {
  if (isDynamic(a) || isDynamic(b))
    return ShapedType::kDynamic;
  return (a + b - 1) / b;
}

/// Prints a size as the type does ('?' for dynamic).
std::string sizeText(int64_t size) {
  return isDynamic(size) ? std::string("?") : std::to_string(size);
}

enum class KvKind { Int8, Fp8 };

} // namespace

int64_t KvDecodeAttentionOp::getGroupHeads() {
  int64_t qHeads = getQuery().getType().getDimSize(1);
  int64_t kvHeads = getKeyCodes().getType().getDimSize(1);
  if (isDynamic(qHeads) || isDynamic(kvHeads) || kvHeads == 0)
    return 0;
  return qHeads / kvHeads;
}

LogicalResult KvDecodeAttentionOp::verify() {
  lowbit::Format format = getFormat().getFormat();
  KvKind kind;
  if (format == *lowbit::lookupFormat("int8")) {
    kind = KvKind::Int8;
  } else if (format == *lowbit::lookupFormat("e4m3") ||
             format == *lowbit::lookupFormat("e5m2")) {
    kind = KvKind::Fp8;
  } else {
    return emitOpError() << "takes int8 groups (kv_int8_g<G>) or FP8 e4m3/e5m2 "
                            "codes (kv_fp8_*), not "
                         << format.name();
  }

  StringRef scale = getScale();
  if (kind == KvKind::Int8 && scale != "per_group")
    return emitOpError()
           << "with int8 codes takes scale = \"per_group\", not \"" << scale
           << "\"";
  if (kind == KvKind::Fp8 && scale != "per_tensor" && scale != "per_head")
    return emitOpError() << "with FP8 codes takes scale = \"per_tensor\" or "
                            "\"per_head\", not \""
                         << scale << "\"";
  if (kind == KvKind::Int8 && getGroupSize() < 1)
    return emitOpError() << "group_size must be >= 1, got " << getGroupSize();
  if (getConvention() != "multiplier" && getConvention() != "divisor")
    return emitOpError() << "convention must be \"multiplier\" or \"divisor\", "
                            "not \""
                         << getConvention() << "\"";
  if (std::string refusal =
          lowbit::kv::softmaxScaleRefusal(getSoftmaxScale().convertToFloat());
      !refusal.empty())
    return emitOpError() << refusal;
  if (getSplitTokens() < 1)
    return emitOpError() << "split_tokens must be >= 1, got "
                         << getSplitTokens();

  ArrayRef<int64_t> query = getQuery().getType().getShape();
  ArrayRef<int64_t> keys = getKeyCodes().getType().getShape();
  ArrayRef<int64_t> values = getValueCodes().getType().getShape();
  int64_t batch = query[0], qHeads = query[1], headDim = query[2];
  int64_t kvHeads = keys[1];

  if (getDot() != "fma" && getDot() != "mma")
    return emitOpError() << "dot must be \"fma\" or \"mma\", not \"" << getDot()
                         << "\"";
  if (getDot() == "mma") {
    if (kind != KvKind::Fp8)
      return emitOpError() << "dot = \"mma\" takes FP8 codes (exact in f16)";
    if (!getQuery().getType().getElementType().isF16() &&
        !getQuery().getType().getElementType().isBF16())
      return emitOpError() << "dot = \"mma\" takes an f16 or bf16 query, not "
                           << getQuery().getType().getElementType();
    if (isDynamic(headDim) || headDim % 16 != 0)
      return emitOpError() << "dot = \"mma\" needs a static head_dim that "
                              "is a multiple of 16, not "
                           << sizeText(headDim);
  }

  if (keys != values)
    return emitOpError() << "key and value codes differ in shape: "
                         << getKeyCodes().getType() << " and "
                         << getValueCodes().getType();
  if (!isDynamic(qHeads) && !isDynamic(kvHeads) &&
      (kvHeads == 0 || qHeads % kvHeads != 0))
    return emitOpError() << "query heads (" << qHeads
                         << ") must be a multiple of kv heads (" << kvHeads
                         << ")";
  if (!compatible(keys[3], headDim))
    return emitOpError() << "the cache's head_dim (" << sizeText(keys[3])
                         << ") differs from the query's (" << sizeText(headDim)
                         << ")";

  int64_t maxTokens;
  if (isPaged()) {
    ArrayRef<int64_t> table = getBlockTable().getType().getShape();
    if (!compatible(keys[2], kPageTokens))
      return emitOpError() << "a paged cache holds pages of " << kPageTokens
                           << " tokens ([pages, kv_heads, 16, head_dim]), got "
                           << sizeText(keys[2]) << " tokens per page";
    if (!compatible(table[0], batch))
      return emitOpError() << "the block table has " << sizeText(table[0])
                           << " rows for a batch of " << sizeText(batch);
    maxTokens = isDynamic(table[1]) ? table[1] : table[1] * kPageTokens;
  } else {
    if (!compatible(keys[0], batch))
      return emitOpError() << "the cache holds " << sizeText(keys[0])
                           << " sequences for a batch of " << sizeText(batch);
    maxTokens = keys[2];
  }
  int64_t lengths = getSeqLens().getType().getDimSize(0);
  if (!compatible(lengths, batch))
    return emitOpError() << "got " << sizeText(lengths)
                         << " sequence lengths for a batch of "
                         << sizeText(batch);

  for (auto [name, scales] :
       {std::pair<StringRef, Value>{"key", getKeyScales()},
        {"value", getValueScales()}}) {
    auto type = cast<RankedTensorType>(scales.getType());
    ArrayRef<int64_t> shape = type.getShape();
    if (kind == KvKind::Int8) {
      int64_t groups = ceilDivStatic(headDim, getGroupSize());
      bool ok = shape.size() == 4 && compatible(shape[0], keys[0]) &&
                compatible(shape[1], keys[1]) &&
                compatible(shape[2], keys[2]) && compatible(shape[3], groups);
      if (!ok)
        return emitOpError()
               << name << " scales " << type
               << " must be the codes' shape with the last axis ceil(head_dim "
                  "/ group_size) = "
               << sizeText(groups);
    } else {
      int64_t expected = scale == "per_tensor" ? 1 : kvHeads;
      if (shape.size() != 1 || !compatible(shape[0], expected))
        return emitOpError()
               << name << " scales " << type << " must be ["
               << sizeText(expected) << "] for " << scale << " FP8 scales";
    }
  }

  SmallVector<int64_t> output = {batch, qHeads, headDim};
  if (failed(verifyCompatibleShape(getOutput().getType().getShape(), output)))
    return emitOpError() << "output " << getOutput().getType()
                         << " must be [batch, q_heads, head_dim] = ["
                         << sizeText(batch) << ", " << sizeText(qHeads) << ", "
                         << sizeText(headDim) << "]";
  int64_t group = getGroupHeads();
  SmallVector<int64_t> partials = {batch, kvHeads,
                                   ceilDivStatic(maxTokens, getSplitTokens()),
                                   group == 0 ? ShapedType::kDynamic : group,
                                   isDynamic(headDim) ? headDim : headDim + 2};
  if (failed(
          verifyCompatibleShape(getPartials().getType().getShape(), partials)))
    return emitOpError()
           << "partials " << getPartials().getType()
           << " must be [batch, kv_heads, ceil(max_tokens / "
              "split_tokens), q_heads / kv_heads, head_dim + 2] = ["
           << sizeText(partials[0]) << ", " << sizeText(partials[1]) << ", "
           << sizeText(partials[2]) << ", " << sizeText(partials[3]) << ", "
           << sizeText(partials[4]) << "]";
  return success();
}

#define GET_OP_CLASSES
#include "dialect/LowbitAttentionOps.cpp.inc"
