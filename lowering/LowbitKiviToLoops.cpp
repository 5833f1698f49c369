//===- LowbitKiviToLoops.cpp - lowbit.kivi_append/dequantize to loops -----===//
//
// Rewrites the KIVI cache ops into scf.parallel nests that both tails map
// (the CPU tail to loops, the GPU tail to threads), with the reference's
// arithmetic emitted by ScaleMath for the side's scheme (kv/KvKivi.h:
// lowbit's min/max rule, statistics from 0 skipping NaN, f32 scale, u8
// zero point), so codes, scales and zeros equal KiviStream's bit for bit.
//
// kivi_append is two nests, in order (docs/kv-kernels.md, KIVI):
//   1. the flush: the groups of G tokens in [Q(T), Q(T + N)) (Q(t) =
//      floor(max(0, t - R) / G) * G, T the sequence's length, N the new
//      tokens), each element read from the ring (position < T) or the
//      input. Per channel: one iteration per (group, code byte), the byte's
//      channels' statistics over the group's G tokens, then the G bytes.
//      Per token: one iteration per token row, its groups' statistics, then
//      the row's bytes. Every byte has one writer.
//   2. the ring write: new tokens at or past Q(T + N) to slot p mod (R+G).
// The flush reads ring slots the ring write may reuse, so they are two
// nests (two launches on the GPU), never one.
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"
#include "lowering/ScaleMath.h"

#include "dialect/LowbitKiviOps.h"
#include "dialect/LowbitOps.h"
#include "kv/KvPaged.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace lowbit {
#define GEN_PASS_DEF_LOWBITKIVITOLOOPS
#include "lowering/Passes.h.inc"
} // namespace lowbit

using namespace mlir;
namespace ld = lowbit::dialect;

namespace {

class KiviEmitter : public lowbit::ScaleMath {
public:
  KiviEmitter(ImplicitLocOpBuilder &builder, const lowbit::kv::KiviSide &side,
              Value codes, Value scales, Value zeros, Value residual,
              Value lengths, Value blockTable)
      : ScaleMath(builder, side.scheme()), side(side), codes(codes),
        scales(scales), zeros(zeros), residual(residual), lengths(lengths),
        blockTable(blockTable) {}

  void emitAppend(Value input);
  void emitDequantize(Value positions, Value output);

private:
  static constexpr int64_t kPage = lowbit::kv::kPageTokens;

  Value idx(int64_t value) { return arith::ConstantIndexOp::create(b, value); }
  Value dim(Value buffer, int64_t axis) {
    return memref::DimOp::create(b, buffer, axis);
  }
  Value cmp(arith::CmpIPredicate predicate, Value lhs, Value rhs) {
    return arith::CmpIOp::create(b, predicate, lhs, rhs);
  }
  Value both(Value lhs, Value rhs) {
    return arith::AndIOp::create(b, lhs, rhs);
  }
  Value add(Value lhs, Value rhs) { return arith::AddIOp::create(b, lhs, rhs); }
  Value mul(Value lhs, Value rhs) { return arith::MulIOp::create(b, lhs, rhs); }
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

  /// The min/max statistics of `element(i)` for i in [begin, end).
  lowbit::Stats emitStats(Value begin, Value end,
                          function_ref<Value(Value)> element) {
    SmallVector<Value> init(3, f32(0.0f));
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
  /// scale, the u8 zero (i8), and the parameters quantizeValue takes.
  struct Picked {
    Value stored, zero;
    lowbit::GroupParams params;
  };
  Picked pick(const lowbit::Stats &stats) {
    Picked picked;
    picked.stored = pickScale(stats, Value());
    picked.params.scale = decodeScale(picked.stored);
    picked.zero = pickZero(stats.min, picked.params.scale);
    picked.params.zero = arith::ExtUIOp::create(b, b.getI32Type(), picked.zero);
    return picked;
  }

  /// The parameters stored at [row..., column].
  lowbit::GroupParams loadParams(ValueRange row, Value column) {
    lowbit::GroupParams params;
    params.scale =
        decodeScale(memref::LoadOp::create(b, scales, at(row, column)));
    params.zero = arith::ExtUIOp::create(
        b, b.getI32Type(), memref::LoadOp::create(b, zeros, at(row, column)));
    return params;
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

  void emitFlushPerChannel(Value input, Value newTokens, Value flushGroups);
  void emitFlushPerToken(Value input, Value newTokens, Value flushGroups);
  void emitRingWrite(Value input, Value newTokens);

  lowbit::kv::KiviSide side;
  Value codes, scales, zeros, residual, lengths, blockTable;
};

void KiviEmitter::emitFlushPerChannel(Value input, Value newTokens,
                                      Value flushGroups) {
  Value headDim = dim(input, 3);
  Value group = idx(side.groupSize);
  emitFlatLoop(
      {dim(input, 0), dim(input, 1), flushGroups, codeBytes(headDim)},
      [&](ArrayRef<Value> ivs) {
        Value seq = ivs[0], head = ivs[1], byteIndex = ivs[3];
        Value length = loadIndex(lengths, {seq});
        Value start = add(quantizedPrefix(length), mul(ivs[2], group));
        Value end = quantizedPrefix(add(length, newTokens));
        emitIf(cmp(arith::CmpIPredicate::slt, start, end), [&] {
          auto [first, second, secondExists] = byteChannels(byteIndex, headDim);
          auto [rowInside, row] = groupRow(seq, head, start);
          // Each channel's group: statistics over the G tokens, then the
          // scale and zero stored in the group's parameter row.
          auto channelParams = [&](Value channel, Value exists) {
            lowbit::Stats stats = emitStats(idx(0), group, [&](Value token) {
              return sourceValue(input, seq, head, length, add(start, token),
                                 channel);
            });
            Picked picked = pick(stats);
            emitIf(exists ? both(rowInside, exists) : rowInside, [&] {
              memref::StoreOp::create(b, picked.stored, scales,
                                      at(row, channel));
              memref::StoreOp::create(b, picked.zero, zeros, at(row, channel));
            });
            return picked.params;
          };
          lowbit::GroupParams firstParams = channelParams(first, Value());
          lowbit::GroupParams secondParams;
          if (second)
            secondParams = channelParams(second, secondExists);
          emitFor(idx(0), group, [&](Value token) {
            Value position = add(start, token);
            auto [inside, codeRow] = tokenRow(seq, head, position);
            emitIf(inside, [&] {
              Value low = quantizeValue(
                  sourceValue(input, seq, head, length, position, first),
                  firstParams);
              Value high;
              if (second)
                high =
                    select(secondExists,
                           quantizeValue(sourceValue(input, seq, head, length,
                                                     position, second),
                                         secondParams),
                           i8(0));
              memref::StoreOp::create(b, packByte(low, high), codes,
                                      at(codeRow, byteIndex));
            });
          });
        });
      });
}

void KiviEmitter::emitFlushPerToken(Value input, Value newTokens,
                                    Value flushGroups) {
  Value headDim = dim(input, 3);
  Value group = idx(side.groupSize);
  emitFlatLoop(
      {dim(input, 0), dim(input, 1), mul(flushGroups, group)},
      [&](ArrayRef<Value> ivs) {
        Value seq = ivs[0], head = ivs[1];
        Value length = loadIndex(lengths, {seq});
        Value position = add(quantizedPrefix(length), ivs[2]);
        Value end = quantizedPrefix(add(length, newTokens));
        Value flushed = cmp(arith::CmpIPredicate::slt, position, end);
        emitIf(flushed, [&] {
          auto [inside, row] = tokenRow(seq, head, position);
          emitIf(inside, [&] {
            auto element = [&](Value channel) {
              return sourceValue(input, seq, head, length, position, channel);
            };
            // The row's groups of G channels (the last one may be short).
            emitFor(idx(0), dim(scales, 3), [&](Value column) {
              Value begin = mul(column, group);
              Value stop =
                  arith::MinSIOp::create(b, headDim, add(begin, group));
              Picked picked = pick(emitStats(begin, stop, element));
              memref::StoreOp::create(b, picked.stored, scales,
                                      at(row, column));
              memref::StoreOp::create(b, picked.zero, zeros, at(row, column));
            });
            emitFor(idx(0), codeBytes(headDim), [&](Value byteIndex) {
              auto [first, second, secondExists] =
                  byteChannels(byteIndex, headDim);
              auto code = [&](Value channel) {
                return quantizeValue(element(channel),
                                     loadParams(row, div(channel, group)));
              };
              Value high;
              if (second)
                high = select(secondExists, code(second), i8(0));
              memref::StoreOp::create(b, packByte(code(first), high), codes,
                                      at(row, byteIndex));
            });
          });
        });
      });
}

void KiviEmitter::emitRingWrite(Value input, Value newTokens) {
  emitFlatLoop(
      {dim(input, 0), dim(input, 1), newTokens}, [&](ArrayRef<Value> ivs) {
        Value seq = ivs[0], head = ivs[1], token = ivs[2];
        Value length = loadIndex(lengths, {seq});
        Value position = add(length, token);
        Value kept = cmp(arith::CmpIPredicate::sge, position,
                         quantizedPrefix(add(length, newTokens)));
        emitIf(kept, [&] {
          SmallVector<Value> row = ringRow(seq, head, position);
          emitFor(idx(0), dim(input, 3), [&](Value channel) {
            Value value = memref::LoadOp::create(
                b, input, ValueRange{seq, head, token, channel});
            memref::StoreOp::create(b, value, residual, at(row, channel));
          });
        });
      });
}

void KiviEmitter::emitAppend(Value input) {
  Value newTokens = dim(input, 2);
  // An append of N tokens completes at most ceil(N / G) groups.
  Value flushGroups =
      div(add(newTokens, idx(side.groupSize - 1)), idx(side.groupSize));
  if (side.perChannel)
    emitFlushPerChannel(input, newTokens, flushGroups);
  else
    emitFlushPerToken(input, newTokens, flushGroups);
  emitRingWrite(input, newTokens);
}

void KiviEmitter::emitDequantize(Value positions, Value output) {
  Type outputType = cast<MemRefType>(output.getType()).getElementType();
  Value headDim = dim(output, 3);
  emitFlatLoop(
      {dim(output, 0), dim(output, 1), dim(output, 2)},
      [&](ArrayRef<Value> ivs) {
        Value seq = ivs[0], head = ivs[1], token = ivs[2];
        ValueRange outRow = ivs;
        auto storeRow = [&](function_ref<Value(Value)> value) {
          emitFor(idx(0), headDim, [&](Value channel) {
            Value result = value(channel);
            if (!outputType.isF32())
              result = arith::TruncFOp::create(b, outputType, result);
            memref::StoreOp::create(b, result, output, at(outRow, channel));
          });
        };
        auto zeroRow = [&] { storeRow([&](Value) { return f32(0.0f); }); };
        Value length = loadIndex(lengths, {seq});
        Value position = add(loadIndex(positions, {seq}), token);
        Value held = both(cmp(arith::CmpIPredicate::sge, position, idx(0)),
                          cmp(arith::CmpIPredicate::slt, position, length));
        emitIf(
            held,
            [&] {
              Value inRing = cmp(arith::CmpIPredicate::sge, position,
                                 quantizedPrefix(length));
              emitIf(
                  inRing,
                  [&] {
                    SmallVector<Value> row = ringRow(seq, head, position);
                    storeRow([&](Value channel) {
                      return widen(memref::LoadOp::create(b, residual,
                                                          at(row, channel)));
                    });
                  },
                  [&] {
                    auto [inside, row] = tokenRow(seq, head, position);
                    SmallVector<Value> paramRow = row;
                    if (side.perChannel) {
                      Value start = mul(div(position, idx(side.groupSize)),
                                        idx(side.groupSize));
                      auto [groupInside, groupParams] =
                          groupRow(seq, head, start);
                      inside = both(inside, groupInside);
                      paramRow = groupParams;
                    }
                    emitIf(
                        inside,
                        [&] {
                          storeRow([&](Value channel) {
                            Value code;
                            if (side.bits == 4) {
                              Value byte = memref::LoadOp::create(
                                  b, codes, at(row, div(channel, idx(2))));
                              Value shift = arith::IndexCastOp::create(
                                  b, b.getI8Type(),
                                  mul(rem(channel, idx(2)), idx(4)));
                              code = arith::ShRUIOp::create(b, byte, shift);
                            } else {
                              code = memref::LoadOp::create(b, codes,
                                                            at(row, channel));
                            }
                            Value column =
                                side.perChannel
                                    ? channel
                                    : div(channel, idx(side.groupSize));
                            return dequantizeValue(
                                code, loadParams(paramRow, column));
                          });
                        },
                        zeroRow);
                  });
            },
            zeroRow);
      });
}

struct LowbitKiviToLoops
    : public lowbit::impl::LowbitKiviToLoopsBase<LowbitKiviToLoops> {
  void runOnOperation() override {
    SmallVector<Operation *> kiviOps;
    getOperation().walk([&](Operation *op) {
      if (isa<ld::KiviAppendOp, ld::KiviDequantizeOp>(op))
        kiviOps.push_back(op);
    });
    for (Operation *op : kiviOps) {
      ImplicitLocOpBuilder builder(op->getLoc(), op);
      if (auto append = dyn_cast<ld::KiviAppendOp>(op)) {
        KiviEmitter emitter(builder, append.getSide(), append.getCodes(),
                            append.getScales(), append.getZeros(),
                            append.getResidual(), append.getLengths(),
                            append.getBlockTable());
        emitter.emitAppend(append.getInput());
      } else {
        auto dequantize = cast<ld::KiviDequantizeOp>(op);
        KiviEmitter emitter(builder, dequantize.getSide(),
                            dequantize.getCodes(), dequantize.getScales(),
                            dequantize.getZeros(), dequantize.getResidual(),
                            dequantize.getLengths(),
                            dequantize.getBlockTable());
        emitter.emitDequantize(dequantize.getPositions(),
                               dequantize.getOutput());
      }
      op->erase();
    }
  }
};

} // namespace
