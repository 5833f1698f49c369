//===- LowbitKiviAttentionToLoops.cpp - kivi_decode_attention to loops ----===//
//
// lowbit.kivi_decode_attention as two flat scf.parallel nests, the CPU
// tail's loops and the GPU tail's generic mapping (one thread per unit);
// lowbit-kivi-to-loops calls emitKiviDecodeAttention. The arithmetic, in
// order, is kv/KiviDecodeOrder.h's (docs/decode-attention.md, KIVI):
//
//   stage 1, one unit per (sequence, kv head, split), each query head of
//     the group: logit(t) = (the fma chain of q[d] k[t, d] over d from 0)
//     * softmax_scale; m = the running max of the split's logits from -inf,
//     + 0; then in token order w = exp(logit - m), acc[d] = fma(w, v[t, d],
//     acc[d]) in the partials, l = l + w; the partials' row is (acc, m, l);
//   stage 2, one unit per (sequence, query head): kv_decode_attention's
//     merge (M = max of the used splits' m, out = fma(acc_s, f, out) and
//     L = fma(l_s, f, L) with f = exp(m_s - M), out / L when len > 0).
//
// Dequantization is fused into both token loops: a token of the quantized
// prefix reads its codes and its group's scale and zero point (keys per
// channel or per token, values per token), a newer one the ring, widened.
// exp is lowbit's own (emitPrologueExp), so both tails give the same bits.
//
//===----------------------------------------------------------------------===//

#include "lowering/KiviCacheAccess.h"
#include "lowering/LowbitFusionBody.h"
#include "lowering/RunningMax.h"

#include "dialect/LowbitKiviOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
namespace ld = lowbit::dialect;

namespace {

/// Emits both stages; the base class reads the keys' side, `values` the
/// values' (the same lengths and block table).
class KiviAttentionEmitter : public lowbit::kivi::KiviCacheAccess {
public:
  KiviAttentionEmitter(ImplicitLocOpBuilder &builder,
                       ld::KiviDecodeAttentionOp op)
      : KiviCacheAccess(builder, op.getKeySide(), op.getKeyCodes(),
                        op.getKeyScales(), op.getKeyZeros(),
                        op.getKeyResidual(), op.getLengths(),
                        op.getBlockTable()),
        values(builder, op.getValueSide(), op.getValueCodes(),
               op.getValueScales(), op.getValueZeros(), op.getValueResidual(),
               op.getLengths(), op.getBlockTable()),
        query(op.getQuery()), output(op.getOutput()),
        partials(op.getPartials()),
        softmaxScale(op.getSoftmaxScale().convertToFloat()),
        splitTokens(op.getSplitTokens()) {
    batch = dim(query, 0);
    qHeads = dim(query, 1);
    headDim = dim(query, 2);
    kvHeads = dim(op.getKeyResidual(), 1);
    group = arith::DivUIOp::create(b, qHeads, kvHeads);
    splits = dim(partials, 2);
  }

  void emitSplits();
  void emitMerge();

private:
  /// lengths[seq] as an index, a negative length read as 0.
  Value lengthOf(Value seq) {
    return arith::MaxSIOp::create(b, loadIndex(lengths, {seq}), idx(0));
  }

  /// Folds `body(channel, x, acc)` over the channels of token `token` of
  /// `side` (kv head `kvHead` of `seq`) from `init`, x the token's f32
  /// element: from the ring when token >= `prefix` (the quantized prefix),
  /// else dequantized from its codes. A quantized token whose rows are
  /// outside the cache (a hole the caller left) is not read: the fold
  /// returns `init`.
  SmallVector<Value>
  foldToken(lowbit::kivi::KiviCacheAccess &side, Value seq, Value kvHead,
            Value token, Value prefix, ValueRange init,
            function_ref<SmallVector<Value>(Value, Value, ValueRange)> body) {
    auto channels = [&](function_ref<Value(Value)> element) {
      auto loop = scf::ForOp::create(b, idx(0), headDim, idx(1), init);
      yieldFrom(loop.getBody(), [&] {
        Value channel = loop.getInductionVar();
        return body(channel, element(channel), loop.getRegionIterArgs());
      });
      return SmallVector<Value>(loop.getResults());
    };
    auto inRing = scf::IfOp::create(
        b, init.getTypes(), cmp(arith::CmpIPredicate::sge, token, prefix),
        /*withElseRegion=*/true);
    yieldFrom(inRing.thenBlock(), [&] {
      return channels([&](Value channel) {
        return side.ringElement(seq, kvHead, token, channel);
      });
    });
    yieldFrom(inRing.elseBlock(), [&] {
      auto [inside, row, paramRow] = side.quantizedRows(seq, kvHead, token);
      auto inCache = scf::IfOp::create(b, init.getTypes(), inside,
                                       /*withElseRegion=*/true);
      yieldFrom(inCache.thenBlock(), [&] {
        return channels([&](Value channel) {
          return side.dequantizeAt(row, paramRow, channel);
        });
      });
      yieldFrom(inCache.elseBlock(), [&] { return SmallVector<Value>(init); });
      return SmallVector<Value>(inCache.getResults());
    });
    return SmallVector<Value>(inRing.getResults());
  }

  /// q[seq, head] . k(token) * softmax_scale: one fma chain in channel
  /// order from 0, then one multiply.
  Value logit(Value seq, Value head, Value kvHead, Value token, Value prefix) {
    Value dot = foldToken(
        *this, seq, kvHead, token, prefix, ValueRange{f32(0.0f)},
        [&](Value channel, Value k, ValueRange acc) {
          Value q = widen(
              memref::LoadOp::create(b, query, ValueRange{seq, head, channel}));
          return SmallVector<Value>{math::FmaOp::create(b, q, k, acc[0])};
        })[0];
    return arith::MulFOp::create(b, dot, f32(softmaxScale));
  }

  Value maxOver(Value begin, Value end, function_ref<Value(Value)> value) {
    return lowbit::emitMaxOver(b, begin, end, value);
  }

  Value exp(Value x) { return lowbit::emitPrologueExp(b, b.getLoc(), x); }

  lowbit::kivi::KiviCacheAccess values;
  Value query, output, partials;
  float softmaxScale;
  int64_t splitTokens;
  Value batch, qHeads, kvHeads, headDim, group, splits;
};

void KiviAttentionEmitter::emitSplits() {
  emitFlatLoop({batch, kvHeads, splits}, [&](ArrayRef<Value> units) {
    Value seq = units[0], kvHead = units[1], split = units[2];
    Value length = lengthOf(seq);
    Value prefix = quantizedPrefix(length);
    Value begin = mul(split, idx(splitTokens));
    Value end = arith::MinSIOp::create(b, length, add(begin, idx(splitTokens)));
    emitFor(idx(0), group, [&](Value member) {
      Value head = add(mul(kvHead, group), member);
      auto slot = [&](Value column) {
        return SmallVector<Value>{seq, kvHead, split, member, column};
      };
      // + 0 makes a zero max +0 (the kernels' contract; see stage 2).
      Value splitMax = arith::AddFOp::create(
          b,
          maxOver(begin, end,
                  [&](Value token) {
                    return logit(seq, head, kvHead, token, prefix);
                  }),
          f32(0.0f));
      emitFor(idx(0), headDim, [&](Value channel) {
        memref::StoreOp::create(b, f32(0.0f), partials, slot(channel));
      });
      auto tokens =
          scf::ForOp::create(b, begin, end, idx(1), ValueRange{f32(0.0f)});
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(tokens.getBody());
        Value token = tokens.getInductionVar();
        Value weight = exp(arith::SubFOp::create(
            b, logit(seq, head, kvHead, token, prefix), splitMax));
        foldToken(
            values, seq, kvHead, token, prefix, ValueRange{},
            [&](Value channel, Value v, ValueRange) {
              Value acc = memref::LoadOp::create(b, partials, slot(channel));
              memref::StoreOp::create(b, math::FmaOp::create(b, weight, v, acc),
                                      partials, slot(channel));
              return SmallVector<Value>{};
            });
        scf::YieldOp::create(b, ValueRange{arith::AddFOp::create(
                                    b, tokens.getRegionIterArg(0), weight)});
      }
      memref::StoreOp::create(b, splitMax, partials, slot(headDim));
      memref::StoreOp::create(b, tokens.getResult(0), partials,
                              slot(add(headDim, idx(1))));
    });
  });
}

void KiviAttentionEmitter::emitMerge() {
  emitFlatLoop({batch, qHeads}, [&](ArrayRef<Value> units) {
    Value seq = units[0], head = units[1];
    Value kvHead = arith::DivUIOp::create(b, head, group);
    Value member = arith::RemUIOp::create(b, head, group);
    Value length = lengthOf(seq);
    // The splits holding tokens, never more than the partials hold.
    Value used = arith::MinSIOp::create(
        b, arith::CeilDivSIOp::create(b, length, idx(splitTokens)), splits);
    auto slot = [&](Value split, Value column) {
      return SmallVector<Value>{seq, kvHead, split, member, column};
    };
    auto out = [&](Value channel) {
      return SmallVector<Value>{seq, head, channel};
    };
    Value globalMax = maxOver(idx(0), used, [&](Value split) {
      return memref::LoadOp::create(b, partials, slot(split, headDim));
    });
    emitFor(idx(0), headDim, [&](Value channel) {
      memref::StoreOp::create(b, f32(0.0f), output, out(channel));
    });
    auto sum =
        scf::ForOp::create(b, idx(0), used, idx(1), ValueRange{f32(0.0f)});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(sum.getBody());
      Value split = sum.getInductionVar();
      Value m = memref::LoadOp::create(b, partials, slot(split, headDim));
      Value l = memref::LoadOp::create(b, partials,
                                       slot(split, add(headDim, idx(1))));
      Value factor = exp(arith::SubFOp::create(b, m, globalMax));
      emitFor(idx(0), headDim, [&](Value channel) {
        Value acc = memref::LoadOp::create(b, partials, slot(split, channel));
        Value total = memref::LoadOp::create(b, output, out(channel));
        memref::StoreOp::create(b, math::FmaOp::create(b, acc, factor, total),
                                output, out(channel));
      });
      scf::YieldOp::create(b, ValueRange{math::FmaOp::create(
                                  b, l, factor, sum.getRegionIterArg(0))});
    }
    // A sequence of length 0 keeps its zeros (0 / 0 would be NaN).
    emitIf(cmp(arith::CmpIPredicate::ne, length, idx(0)), [&] {
      emitFor(idx(0), headDim, [&](Value channel) {
        Value total = memref::LoadOp::create(b, output, out(channel));
        memref::StoreOp::create(
            b, arith::DivFOp::create(b, total, sum.getResult(0)), output,
            out(channel));
      });
    });
  });
}

} // namespace

void lowbit::kivi::emitKiviDecodeAttention(ImplicitLocOpBuilder &builder,
                                           ld::KiviDecodeAttentionOp op) {
  KiviAttentionEmitter emitter(builder, op);
  emitter.emitSplits();
  emitter.emitMerge();
}
