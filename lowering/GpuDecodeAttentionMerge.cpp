//===- GpuDecodeAttentionMerge.cpp - FlashDecoding stage 2 on the GPU -----===//
//
// lowbit.kv_decode_attention's second stage as one 32-thread block per
// (sequence, query head, 32 channels) (docs/decode-attention.md, "The
// merge kernel"): thread t of chunk c holds channel 32 c + t of the head,
// so a head of 128 channels is spread over 4 SMs. Every thread walks
// the used splits in order, as the loops do, so each channel's output is
// the same chain of operations as kv::decodeAttentionKernelOrder's:
//   M = the running max of the splits' m, from -inf;
//   out[d] = fma(acc_s[d], exp(m_s - M), out[d]) and
//   L = fma(l_s, exp(m_s - M), L), split by split from 0;
//   out[d] / L when the sequence is not empty.
// A trip takes kSplitsPerTrip splits and reads all of them before the
// first one's math (bytes in flight); a split past the used ones reads the
// last used one and is dropped by a select, so the chains are unchanged.
// The m and l of a split are the same word for every thread of the block
// (one line, broadcast); acc_s[d] is read by adjacent threads at adjacent
// channels.
//
//===----------------------------------------------------------------------===//

#include "lowering/DecodeAttentionEmitter.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace lowbit::attention {
namespace {

constexpr int64_t kMergeThreads = kit::kWarpSize;
constexpr int64_t kSplitsPerTrip = 16;

class MergeKernelEmitter : public AttentionEmitter {
public:
  MergeKernelEmitter(const AttentionEmitter &base, int64_t staticHeadDim)
      : AttentionEmitter(base), staticHeadDim(staticHeadDim) {}

  void emitKernel() {
    Value one = idx(1);
    int64_t chunks = (staticHeadDim + kMergeThreads - 1) / kMergeThreads;
    auto launch =
        launchBlocks(mul(mul(batch, qHeads), idx(chunks)), kMergeThreads);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(launch.getBody().front().getTerminator());
    Value block = launch.getBlockIds().x;
    Value chunk = arith::RemUIOp::create(b, block, idx(chunks));
    Value unit = arith::DivUIOp::create(b, block, idx(chunks));
    Value head = arith::RemUIOp::create(b, unit, qHeads);
    sequence = arith::DivUIOp::create(b, unit, qHeads);
    kvHead = arith::DivUIOp::create(b, head, group);
    member = arith::RemUIOp::create(b, head, group);
    Value length = lengthOf(sequence);
    used = arith::CeilDivUIOp::create(b, length, idx(splitTokens));
    last = arith::SubIOp::create(b, used, one);
    trips = arith::CeilDivUIOp::create(b, used, idx(kSplitsPerTrip));

    // The thread's channel; one past head_dim reads channel 0 and is not
    // stored.
    Value channel =
        add(mul(chunk, idx(kMergeThreads)), launch.getThreadIds().x);
    Value inside;
    if (staticHeadDim % kMergeThreads != 0) {
      inside = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, channel,
                                     idx(staticHeadDim));
      channel = arith::SelectOp::create(b, inside, channel, idx(0));
    }
    channels.push_back(channel);
    SmallVector<Value> exists{inside};

    Value globalMax = emitMax();
    SmallVector<Value> sums = emitSums(globalMax);
    Value total = sums.back();
    Value nonEmpty =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ne, length, idx(0));
    for (size_t c = 0; c < channels.size(); ++c) {
      // A sequence of length 0 keeps its zeros (0 / 0 would be NaN).
      Value value = arith::SelectOp::create(
          b, nonEmpty, arith::DivFOp::create(b, sums[c], total), sums[c]);
      OpBuilder::InsertionGuard inner(b);
      if (exists[c]) {
        auto ifOp = scf::IfOp::create(b, exists[c], /*withElseRegion=*/false);
        b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
      }
      store(value, output, {sequence, head, channels[c]});
    }
  }

private:
  /// Split u of trip `trip`: whether it is used, and the split read (the
  /// last used one when it is not).
  std::pair<Value, Value> splitOf(Value trip, int64_t u) {
    Value split = add(mul(trip, idx(kSplitsPerTrip)), idx(u));
    Value valid =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, split, used);
    return {valid, arith::SelectOp::create(b, valid, split, last)};
  }
  Value partial(Value split, Value channel) {
    return load(partials, {sequence, kvHead, split, member, channel});
  }

  /// The running max of the used splits' m, in split order.
  Value emitMax() {
    auto loop = scf::ForOp::create(
        b, idx(0), trips, idx(1),
        ValueRange{f32(-std::numeric_limits<float>::infinity())});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    SmallVector<std::pair<Value, Value>> read;
    for (int64_t u = 0; u < kSplitsPerTrip; ++u) {
      auto [valid, split] = splitOf(loop.getInductionVar(), u);
      read.emplace_back(valid, partial(split, headDim));
    }
    Value m = loop.getRegionIterArg(0);
    for (auto [valid, splitMax] : read)
      m = arith::SelectOp::create(b, valid, larger(m, splitMax), m);
    scf::YieldOp::create(b, m);
    return loop.getResult(0);
  }

  /// The channels' fma chains and the weight sum's, over the used splits
  /// in order (results: one per channel, then L).
  SmallVector<Value> emitSums(Value globalMax) {
    SmallVector<Value> init(channels.size() + 1, f32(0.0f));
    auto loop = scf::ForOp::create(b, idx(0), trips, idx(1), init);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    struct Read {
      Value valid, m, l;
      SmallVector<Value> acc;
    };
    SmallVector<Read> reads;
    for (int64_t u = 0; u < kSplitsPerTrip; ++u) {
      auto [valid, split] = splitOf(loop.getInductionVar(), u);
      Read read{valid,
                partial(split, headDim),
                partial(split, add(headDim, idx(1))),
                {}};
      for (Value channel : channels)
        read.acc.push_back(partial(split, channel));
      reads.push_back(std::move(read));
    }
    SmallVector<Value> sums(loop.getRegionIterArgs());
    for (const Read &read : reads) {
      Value factor = exp(arith::SubFOp::create(b, read.m, globalMax));
      for (size_t c = 0; c < channels.size(); ++c)
        sums[c] = arith::SelectOp::create(
            b, read.valid, fma(read.acc[c], factor, sums[c]), sums[c]);
      sums.back() = arith::SelectOp::create(
          b, read.valid, fma(read.l, factor, sums.back()), sums.back());
    }
    scf::YieldOp::create(b, sums);
    return SmallVector<Value>(loop.getResults());
  }

  int64_t staticHeadDim;
  Value sequence, kvHead, member, used, last, trips;
  SmallVector<Value> channels;
};

} // namespace

void emitGpuMerge(const AttentionEmitter &emitter, int64_t headDim) {
  MergeKernelEmitter(emitter, headDim).emitKernel();
}

} // namespace lowbit::attention
