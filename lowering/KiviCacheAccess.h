//===- KiviCacheAccess.h - Reads and writes of a KIVI cache side -*- C++
//-*-===//
//
// What the KIVI cache kernels share (lowering/LowbitKiviToLoops.cpp's
// append and dequantize, lowering/LowbitKiviAttentionToLoops.cpp's decode
// attention): one side of the cache in the buffers of kv/KvKiviKernelSpec.h
// (codes, scales, zeros, the residual ring, the lengths and the block
// table), the rows a token's codes, parameters and ring slot are at, and
// the side's arithmetic (docs/kv-kernels.md, KIVI): KIVI's own float zero
// (kv/KvKivi.h's quantizeKiviTile), or ScaleMath's for the scheme with
// zero=int.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_KIVICACHEACCESS_H
#define LOWBIT_LOWERING_KIVICACHEACCESS_H

#include "lowering/ScaleMath.h"

#include "dialect/LowbitKiviOps.h"
#include "kv/KvKiviKernelSpec.h"
#include "kv/KvPaged.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <cmath>
#include <tuple>

namespace lowbit::kivi {

using namespace mlir;

class KiviCacheAccess : public lowbit::ScaleMath {
public:
  KiviCacheAccess(ImplicitLocOpBuilder &builder,
                  const lowbit::kv::KiviSide &side, Value codes, Value scales,
                  Value zeros, Value residual, Value lengths, Value blockTable)
      : ScaleMath(builder, side.scheme()), side(side), codes(codes),
        scales(scales), zeros(zeros), residual(residual), lengths(lengths),
        blockTable(blockTable) {}

public:
  static constexpr int64_t kPage = lowbit::kv::kPageTokens;

  Value dim(Value buffer, int64_t axis) {
    return memref::DimOp::create(b, buffer, axis);
  }
  Value cmp(arith::CmpIPredicate predicate, Value lhs, Value rhs) {
    return arith::CmpIOp::create(b, predicate, lhs, rhs);
  }
  Value both(Value lhs, Value rhs) {
    return arith::AndIOp::create(b, lhs, rhs);
  }
  Value div(Value lhs, Value rhs) {
    return arith::DivSIOp::create(b, lhs, rhs);
  }
  Value rem(Value lhs, Value rhs) {
    return arith::RemSIOp::create(b, lhs, rhs);
  }
  Value loadIndex(Value buffer, ValueRange indices) {
    return arith::IndexCastOp::create(
        b, b.getIndexType(), memref::LoadOp::create(b, buffer, indices));
  }
  Value widen(Value value) {
    if (value.getType().isF32())
      return value;
    return arith::ExtFOp::create(b, b.getF32Type(), value);
  }
  static SmallVector<Value> at(ValueRange prefix, Value last) {
    SmallVector<Value> indices(prefix);
    indices.push_back(last);
    return indices;
  }

  /// One flat scf.parallel over the product of `extents` (a 3-D or 4-D
  /// nest would put its innermost dimension on threadIdx.z, limit 64);
  /// `body` gets the delinearized indices, first extent outermost.
  void emitFlatLoop(ArrayRef<Value> extents,
                    function_ref<void(ArrayRef<Value>)> body) {
    Value total = extents[0];
    for (Value extent : extents.drop_front())
      total = mul(total, extent);
    auto loop = scf::ParallelOp::create(b, ValueRange{idx(0)},
                                        ValueRange{total}, ValueRange{idx(1)});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    Value rest = loop.getInductionVars()[0];
    SmallVector<Value> indices(extents.size());
    for (size_t axis = extents.size(); axis-- > 1;) {
      indices[axis] = arith::RemUIOp::create(b, rest, extents[axis]);
      rest = arith::DivUIOp::create(b, rest, extents[axis]);
    }
    indices[0] = rest;
    body(indices);
  }

  /// scf.if `condition` with `thenBody` (and `elseBody` when given).
  void emitIf(Value condition, function_ref<void()> thenBody,
              function_ref<void()> elseBody = {}) {
    auto ifOp = scf::IfOp::create(b, condition, bool(elseBody));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    thenBody();
    if (elseBody) {
      b.setInsertionPoint(ifOp.elseBlock()->getTerminator());
      elseBody();
    }
  }

  /// An scf.for over [begin, end) with `body` at its insertion point.
  void emitFor(Value begin, Value end, function_ref<void(Value)> body) {
    auto loop = scf::ForOp::create(b, begin, end, idx(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    body(loop.getInductionVar());
  }

  /// floor(max(0, tokens - R) / G) * G (KiviSide::quantizedPrefix).
  Value quantizedPrefix(Value tokens) {
    Value beyond = arith::MaxSIOp::create(
        b, arith::SubIOp::create(b, tokens, idx(side.residual)), idx(0));
    return mul(div(beyond, idx(side.groupSize)), idx(side.groupSize));
  }

  /// The page holding `position` (>= 0) of `seq`, and whether it is one:
  /// the table entry is read only when the block is inside the table.
  std::pair<Value, Value> pageOf(Value seq, Value position) {
    Value block = div(position, idx(kPage));
    Value blockInTable =
        cmp(arith::CmpIPredicate::slt, block, dim(blockTable, 1));
    auto pageIf = scf::IfOp::create(b, b.getIndexType(), blockInTable,
                                    /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(pageIf.thenBlock());
      scf::YieldOp::create(b, ValueRange{loadIndex(blockTable, {seq, block})});
      b.setInsertionPointToStart(pageIf.elseBlock());
      scf::YieldOp::create(b, ValueRange{idx(-1)});
    }
    Value page = pageIf.getResult(0);
    Value valid = both(cmp(arith::CmpIPredicate::sge, page, idx(0)),
                       cmp(arith::CmpIPredicate::slt, page, dim(codes, 0)));
    return {valid, page};
  }

  /// The code row of token `position` (>= 0): whether it is inside the
  /// cache, and [seq, head, position] or [page, head, slot].
  std::pair<Value, SmallVector<Value>> tokenRow(Value seq, Value head,
                                                Value position) {
    if (!blockTable)
      return {cmp(arith::CmpIPredicate::slt, position, dim(codes, 2)),
              {seq, head, position}};
    auto [valid, page] = pageOf(seq, position);
    return {valid, {page, head, rem(position, idx(kPage))}};
  }

  /// The per-channel parameter row of the group starting at `start`:
  /// [seq, head, start / G] or [page, head, (start mod 16) / G].
  std::pair<Value, SmallVector<Value>> groupRow(Value seq, Value head,
                                                Value start) {
    Value group = idx(side.groupSize);
    if (!blockTable) {
      Value index = div(start, group);
      return {cmp(arith::CmpIPredicate::slt, index, dim(scales, 2)),
              {seq, head, index}};
    }
    auto [valid, page] = pageOf(seq, start);
    return {valid, {page, head, div(rem(start, idx(kPage)), group)}};
  }

  /// The ring row of `position`: [seq, head, position mod (R + G)].
  SmallVector<Value> ringRow(Value seq, Value head, Value position) {
    return {seq, head, rem(position, idx(side.residualSlots()))};
  }

  /// The f32 value of channel `channel` of token `position` during an
  /// append: from the ring when the sequence already held it (< length),
  /// else from the input.
  Value sourceValue(Value input, Value seq, Value head, Value length,
                    Value position, Value channel) {
    Type element = cast<MemRefType>(input.getType()).getElementType();
    auto sourceIf = scf::IfOp::create(
        b, element, cmp(arith::CmpIPredicate::slt, position, length),
        /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(sourceIf.thenBlock());
      scf::YieldOp::create(
          b, ValueRange{memref::LoadOp::create(
                 b, residual, at(ringRow(seq, head, position), channel))});
      b.setInsertionPointToStart(sourceIf.elseBlock());
      Value token = arith::SubIOp::create(b, position, length);
      scf::YieldOp::create(
          b, ValueRange{memref::LoadOp::create(
                 b, input, ValueRange{seq, head, token, channel})});
    }
    return widen(sourceIf.getResult(0));
  }

  bool floatZero() const { return side.zero == lowbit::kv::KiviZero::Float; }

  /// The min/max statistics of `element(i)` for i in [begin, end): raw
  /// (from +-inf) for KIVI's float zero, from 0 for zero=int.
  lowbit::Stats emitStats(Value begin, Value end,
                          function_ref<Value(Value)> element) {
    SmallVector<Value> init(3, f32(0.0f));
    if (floatZero()) {
      init[1] = f32(INFINITY);
      init[2] = f32(-INFINITY);
    }
    auto loop = scf::ForOp::create(b, begin, end, idx(1), init);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      scf::YieldOp::create(b, accumulate(loop.getRegionIterArgs(),
                                         element(loop.getInductionVar()),
                                         /*withMinMax=*/true));
    }
    return toStats(loop.getResults(), /*withMinMax=*/true);
  }

  /// The scale and zero of a group from its statistics: the stored f32
  /// scale and f32 zero, and the parameters quantizeCode takes (zero: the
  /// f32 mn, or zero=int's i32 zero point).
  struct Picked {
    Value stored, zero;
    lowbit::GroupParams params;
  };
  Picked pick(const lowbit::Stats &stats) {
    Picked picked;
    if (floatZero()) {
      // KIVI: s = (mx - mn) / (2^b - 1); mn = mx = 0 when every element
      // was NaN (the statistics never left +-inf).
      Value none = cmpf(arith::CmpFPredicate::OLT, stats.max, stats.min);
      Value low = select(none, f32(0.0f), stats.min);
      Value high = select(none, f32(0.0f), stats.max);
      picked.stored =
          divf(arith::SubFOp::create(b, high, low), f32(quantMax()));
      picked.zero = low;
      picked.params.scale = picked.stored;
      picked.params.zero = low;
      return picked;
    }
    picked.stored = pickScale(stats, Value());
    picked.params.scale = decodeScale(picked.stored);
    Value zero = pickZero(stats.min, picked.params.scale);
    picked.zero = arith::UIToFPOp::create(b, b.getF32Type(), zero);
    picked.params.zero = arith::ExtUIOp::create(b, b.getI32Type(), zero);
    return picked;
  }

  /// The parameters stored at [row..., column].
  lowbit::GroupParams loadParams(ValueRange row, Value column) {
    lowbit::GroupParams params;
    params.scale =
        decodeScale(memref::LoadOp::create(b, scales, at(row, column)));
    params.zero = memref::LoadOp::create(b, zeros, at(row, column));
    if (!floatZero()) // an integer in [0, 2^b - 1], stored as f32
      params.zero = arith::FPToSIOp::create(b, b.getI32Type(), params.zero);
    return params;
  }

  /// One element's code (an i8 whose high bits are zero). KIVI: q =
  /// rne(clamp((x - mn) / s, 0, 2^b - 1)), NaN giving 0.
  Value quantizeCode(Value value, const lowbit::GroupParams &params) {
    if (!floatZero())
      return quantizeValue(value, params);
    Value scaled =
        divf(arith::SubFOp::create(b, value, params.zero), params.scale);
    scaled = select(isNan(scaled), f32(0.0f), scaled);
    scaled = stdClamp(scaled, f32(0.0f), f32(quantMax()));
    return arith::FPToUIOp::create(b, b.getI8Type(),
                                   math::RoundEvenOp::create(b, scaled));
  }

  /// The f32 value of a code (its bits above the element's are ignored).
  /// KIVI: q * s + mn, two roundings.
  Value dequantizeCode(Value code, const lowbit::GroupParams &params) {
    if (!floatZero())
      return dequantizeValue(code, params);
    Value masked = arith::AndIOp::create(
        b, arith::ExtUIOp::create(b, b.getI32Type(), code),
        i32(int32_t(scheme.element.codeMask())));
    Value product =
        mulf(arith::UIToFPOp::create(b, b.getF32Type(), masked), params.scale);
    return arith::AddFOp::create(b, product, params.zero);
  }

  /// The byte of two nibble codes (low: the even channel), or one code.
  Value packByte(Value low, Value high) {
    if (!high)
      return low;
    Value shifted = arith::ShLIOp::create(
        b, high, arith::ConstantIntOp::create(b, b.getI8Type(), 4));
    return arith::OrIOp::create(b, low, shifted);
  }

  /// Code bytes per token row: ceil(D / 2) (int4) or D, at most the
  /// codes' width, so that dynamic sizes the verifier could not compare
  /// never make a byte whose channel is past head_dim.
  Value codeBytes(Value headDim) {
    Value bytes = side.bits == 4 ? div(add(headDim, idx(1)), idx(2)) : headDim;
    return arith::MinSIOp::create(b, bytes, dim(codes, 3));
  }

  /// Channels of code byte `byteIndex`: (first, second, second exists);
  /// second is null for int2. A missing second channel (odd head_dim)
  /// reads the first so that every load stays in bounds.
  std::tuple<Value, Value, Value> byteChannels(Value byteIndex, Value headDim) {
    if (side.bits != 4)
      return {byteIndex, Value(), Value()};
    Value first = mul(byteIndex, idx(2));
    Value second = add(first, idx(1));
    Value exists = cmp(arith::CmpIPredicate::slt, second, headDim);
    return {first, arith::SelectOp::create(b, exists, second, first), exists};
  }

  /// The f32 element `channel` of token `position` in the ring (widened
  /// exactly from f16 or bf16).
  Value ringElement(Value seq, Value head, Value position, Value channel) {
    return widen(memref::LoadOp::create(
        b, residual, at(ringRow(seq, head, position), channel)));
  }

  /// Ends `block` with scf.yield of `values()` (built at the block's end,
  /// after an implicit terminator the block may have is removed).
  void yieldFrom(Block *block, function_ref<SmallVector<Value>()> values) {
    if (!block->empty() && block->back().hasTrait<OpTrait::IsTerminator>())
      block->back().erase();
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(block);
    SmallVector<Value> results = values();
    scf::YieldOp::create(b, results);
  }

  /// The rows of quantized token `position` (>= 0): whether its code
  /// row and its parameter row are inside the cache, the code row, and
  /// the parameter row (the code row per token; per channel, the row of
  /// the group holding it).
  std::tuple<Value, SmallVector<Value>, SmallVector<Value>>
  quantizedRows(Value seq, Value head, Value position) {
    auto [inside, row] = tokenRow(seq, head, position);
    SmallVector<Value> paramRow = row;
    if (side.perChannel) {
      Value start =
          mul(div(position, idx(side.groupSize)), idx(side.groupSize));
      auto [groupInside, groupParams] = groupRow(seq, head, start);
      inside = both(inside, groupInside);
      paramRow = groupParams;
    }
    return {inside, row, paramRow};
  }

  /// The f32 value of channel `channel` of a quantized token: its code
  /// (a nibble for int4, the even channel low) at `row`, dequantized with
  /// the parameters at `paramRow` (ScaleMath::dequantizeValue).
  Value dequantizeAt(ValueRange row, ValueRange paramRow, Value channel) {
    Value code;
    if (side.bits == 4) {
      Value byte =
          memref::LoadOp::create(b, codes, at(row, div(channel, idx(2))));
      Value shift = arith::IndexCastOp::create(
          b, b.getI8Type(), mul(rem(channel, idx(2)), idx(4)));
      code = arith::ShRUIOp::create(b, byte, shift);
    } else {
      code = memref::LoadOp::create(b, codes, at(row, channel));
    }
    Value column =
        side.perChannel ? channel : div(channel, idx(side.groupSize));
    return dequantizeCode(code, loadParams(paramRow, column));
  }

protected:
  lowbit::kv::KiviSide side;
  Value codes, scales, zeros, residual, lengths, blockTable;
};

/// lowbit.kivi_decode_attention's two stages as loops at `builder`'s
/// insertion point (lowering/LowbitKiviAttentionToLoops.cpp); the caller
/// erases the op.
void emitKiviDecodeAttention(ImplicitLocOpBuilder &builder,
                             dialect::KiviDecodeAttentionOp op);

} // namespace lowbit::kivi

#endif // LOWBIT_LOWERING_KIVICACHEACCESS_H
