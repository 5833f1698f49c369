//===- LowbitKiviToLoops.cpp - lowbit.kivi_append/dequantize to loops -----===//
//
// Rewrites the KIVI cache ops into scf.parallel nests that both tails map
// (the CPU tail to loops, the GPU tail to threads), with the reference's
// arithmetic (kv/KvKivi.h: KIVI's raw min/max and float zero, or with
// zero=int lowbit's min/max rule emitted by ScaleMath; NaN skipped, f32
// scale and zero), so codes, scales and zeros equal KiviStream's bit for
// bit.
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

#include "lowering/KiviCacheAccess.h"
#include "lowering/Passes.h"

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

class KiviEmitter : public lowbit::kivi::KiviCacheAccess {
public:
  using KiviCacheAccess::KiviCacheAccess;

  void emitAppend(Value input);
  void emitDequantize(Value positions, Value output);

private:
  void emitFlushPerChannel(Value input, Value newTokens, Value flushGroups);
  void emitFlushPerToken(Value input, Value newTokens, Value flushGroups);
  void emitRingWrite(Value input, Value newTokens);
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
              Value low = quantizeCode(
                  sourceValue(input, seq, head, length, position, first),
                  firstParams);
              Value high;
              if (second)
                high = select(secondExists,
                              quantizeCode(sourceValue(input, seq, head, length,
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
                return quantizeCode(element(channel),
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
                    auto [inside, row, paramRow] =
                        quantizedRows(seq, head, position);
                    emitIf(
                        inside,
                        [&] {
                          storeRow([&](Value channel) {
                            return dequantizeAt(row, paramRow, channel);
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
      if (isa<ld::KiviAppendOp, ld::KiviDequantizeOp,
              ld::KiviDecodeAttentionOp>(op))
        kiviOps.push_back(op);
    });
    for (Operation *op : kiviOps) {
      ImplicitLocOpBuilder builder(op->getLoc(), op);
      if (auto attention = dyn_cast<ld::KiviDecodeAttentionOp>(op)) {
        lowbit::kivi::emitKiviDecodeAttention(builder, attention);
      } else if (auto append = dyn_cast<ld::KiviAppendOp>(op)) {
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
