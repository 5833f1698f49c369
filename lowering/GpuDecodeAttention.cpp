//===- GpuDecodeAttention.cpp - FlashDecoding stage 1 on the GPU ----------===//
//
// lowbit.kv_decode_attention's first stage as one 128-thread block per
// (sequence, kv head, split) (docs/decode-attention.md, "The GPU kernel").
// Thread tid is lane tid % 8 of token slot tid / 8; slot r takes tokens
// begin + r, begin + r + 16, ..., and lane j holds channels
// [16 j + 128 k, 16 j + 128 k + 16) of each row (one 16-byte load of codes
// per slice when head_dim is a multiple of 16). Every load of K and V
// serves the G query heads of the group.
//   pass K   per token: each lane's fma chain over its channels per head,
//            the xor-shuffle tree over the 8 lanes, * softmax_scale; lane 0
//            stores the logits in shared memory;
//   max      per head over the split's logits (strided, then shuffles and
//            the 4 warps' maxima; + 0 makes a zero max +0 in any order);
//   weights  exp(logit - max) in place;
//   pass V   per token: acc = fma(w, v, acc) per head and channel, l += w,
//            in registers per slot;
//   merge    per head: the slots' sums added in slot order through shared
//            memory, the partials written once.
// This is kv::decodeAttentionKernelOrder's arithmetic op for op, so the
// emulator's results equal the CPU tail's bit for bit. Tokens past the end
// of the split read the last token again (no branch around the loads) and
// count with weight 0, which leaves every sum's bits as they are (a sum
// that starts at +0 and adds fma results is never -0).
//
//===----------------------------------------------------------------------===//

#include "lowering/GpuDecodeAttention.h"
#include "lowering/DecodeAttentionEmitter.h"
#include "target/NativeConversionTable.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
namespace ld = lowbit::dialect;

namespace lowbit::attention {
namespace {

constexpr int64_t kSlots = kv::kDecodeSlots;
constexpr int64_t kLanes = kv::kDecodeLanes;
constexpr int64_t kSliceChannels = kv::kDecodeLaneChannels;
constexpr int64_t kThreads = kSlots * kLanes;
constexpr int64_t kRowChannels = kLanes * kSliceChannels;
constexpr int64_t kWarps = kThreads / kit::kWarpSize;
/// Tokens per slot and trip of the K and V loops: their 16-byte loads are
/// issued before the first token's math, so a thread has this many loads
/// in flight (docs/decode-attention.md, "Bytes in flight").
constexpr int64_t kTokensPerTrip = 4;

/// The static sizes the kernel unrolls over.
struct KernelShape {
  int64_t group = 0, headDim = 0, splitTokens = 0;
  /// Pass K on tensor cores (the op's dot = "mma").
  bool mma = false;
  int64_t slicesPerLane() const {
    return (headDim + kRowChannels - 1) / kRowChannels;
  }
  int64_t sharedFloats() const {
    return splitTokens * group + kWarps * group + kSlots * headDim + kSlots;
  }
};

FailureOr<KernelShape> kernelShapeOf(ld::KvDecodeAttentionOp op,
                                     std::string &why) {
  auto query = cast<RankedTensorType>(op.getQuery().getType());
  auto keys = cast<RankedTensorType>(op.getKeyCodes().getType());
  if (query.isDynamicDim(1) || query.isDynamicDim(2) || keys.isDynamicDim(1)) {
    why = "the FlashDecoding kernel needs static heads and head_dim";
    return failure();
  }
  KernelShape shape;
  shape.group = query.getDimSize(1) / keys.getDimSize(1);
  shape.headDim = query.getDimSize(2);
  shape.splitTokens = int64_t(op.getSplitTokens());
  shape.mma = op.getDot() == "mma";
  int64_t bytes = 4 * shape.sharedFloats();
  if (bytes > kMaxDecodeAttentionSharedBytes) {
    why = "the FlashDecoding kernel's shared memory (" + std::to_string(bytes) +
          " B for split " + std::to_string(shape.splitTokens) + ", " +
          std::to_string(shape.group) + " heads per kv head, head_dim " +
          std::to_string(shape.headDim) + ") is over the " +
          std::to_string(kMaxDecodeAttentionSharedBytes) + " B limit";
    return failure();
  }
  return shape;
}

class FlashDecodeEmitter : public AttentionEmitter {
public:
  FlashDecodeEmitter(const AttentionEmitter &base, KernelShape shape)
      : AttentionEmitter(base), shape(shape) {}

  void emitSplitsKernel() {
    auto launch = launchBlocks(mul(mul(batch, kvHeads), splits), kThreads);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(launch.getBody().front().getTerminator());
    logits = sharedFloats(launch, shape.splitTokens * shape.group);
    warpMaxima = sharedFloats(launch, kWarps * shape.group);
    slotSums = sharedFloats(launch, kSlots * shape.headDim);
    slotWeights = sharedFloats(launch, kSlots);

    Value unit = launch.getBlockIds().x;
    split = arith::RemUIOp::create(b, unit, splits);
    Value rest = arith::DivUIOp::create(b, unit, splits);
    kvHead = arith::RemUIOp::create(b, rest, kvHeads);
    sequence = arith::DivUIOp::create(b, rest, kvHeads);
    thread = launch.getThreadIds().x;
    slot = arith::DivUIOp::create(b, thread, idx(kLanes));
    lane = arith::RemUIOp::create(b, thread, idx(kLanes));
    begin = mul(split, idx(shape.splitTokens));
    end = arith::MinSIOp::create(b, lengthOf(sequence),
                                 add(begin, idx(shape.splitTokens)));
    count =
        arith::MaxSIOp::create(b, arith::SubIOp::create(b, end, begin), idx(0));
    Value trips = arith::CeilDivUIOp::create(b, count, idx(kSlots));
    // An FP8 scale is one per kv head (or tensor): read once, not per row.
    if (!isInt8) {
      keyScale = load(keyScales, {perHead ? kvHead : idx(0)});
      valueScale = load(valueScales, {perHead ? kvHead : idx(0)});
    }

    if (shape.mma)
      emitMmaLogits(*this, {shape.group, shape.headDim, sequence, kvHead, begin,
                            end, count, thread, logits, keyScale});
    else
      emitLogits(trips);
    barrier();
    SmallVector<Value> maxima = emitMaxima();
    emitWeights(maxima);
    barrier();
    emitValuesAndMerge(trips, maxima);
  }

private:
  Value cmp(arith::CmpIPredicate predicate, Value x, Value y) {
    return arith::CmpIOp::create(b, predicate, x, y);
  }
  /// Channel i of the lane's slice s.
  Value channelOf(int64_t slice, int64_t i) {
    return add(add(mul(lane, idx(kSliceChannels)), idx(slice * kRowChannels)),
               idx(i));
  }
  /// Whether every lane's slice s lies inside head_dim (no channel test).
  bool sliceIsFull(int64_t slice) const {
    return (slice + 1) * kRowChannels <= shape.headDim;
  }
  /// Whether channel i of slice s exists (null when every lane's does).
  Value channelExists(int64_t slice, int64_t i) {
    if (sliceIsFull(slice))
      return {};
    return cmp(arith::CmpIPredicate::ult, channelOf(slice, i),
               idx(shape.headDim));
  }

  /// The slot's token of trip `trip`, whether it is in the split, and the
  /// cache row read for it (the split's last token when it is not).
  struct SlotToken {
    Value token, valid;
    SmallVector<Value, 4> row;
  };
  SlotToken slotToken(Value trip) {
    SlotToken result;
    result.token = add(add(begin, slot), mul(trip, idx(kSlots)));
    result.valid = cmp(arith::CmpIPredicate::slt, result.token, end);
    Value last = arith::SubIOp::create(b, end, idx(1));
    Value read = select(result.valid, result.token, last);
    result.row = cacheRow(sequence, kvHead, read);
    return result;
  }

  /// What a lane reads of one row before dequantizing it: per slice, its
  /// first channel, and its 16 codes when head_dim is a multiple of 16 (a
  /// slice past head_dim reads slice 0 instead; its values are never
  /// used).
  struct RowCodes {
    SmallVector<Value, 4> row;
    SmallVector<Value> starts, vectors;
  };
  RowCodes loadRow(Value codes, ArrayRef<Value> row) {
    RowCodes read;
    read.row.assign(row.begin(), row.end());
    bool vectorLoads = shape.headDim % kSliceChannels == 0;
    for (int64_t s = 0; s < shape.slicesPerLane(); ++s) {
      Value start = channelOf(s, 0);
      if (!sliceIsFull(s))
        start =
            select(cmp(arith::CmpIPredicate::ult, start, idx(shape.headDim)),
                   start, idx(0));
      read.starts.push_back(start);
      if (!vectorLoads)
        continue;
      SmallVector<Value, 5> at(row);
      at.push_back(start);
      auto [source, indices] = access(codes, at);
      read.vectors.push_back(loadVector(
          VectorType::get({kSliceChannels}, b.getI8Type()), source, indices));
    }
    return read;
  }

  /// The lane's dequantized channels of a row read by loadRow (one load
  /// per channel when head_dim is not a multiple of 16).
  SmallVector<Value> sliceValues(Value codes, Value scales,
                                 const RowCodes &read) {
    SmallVector<Value> values;
    ArrayRef<Value> row = read.row;
    bool sliceScale = isInt8 && groupSize % kSliceChannels == 0;
    for (int64_t s = 0; s < shape.slicesPerLane(); ++s) {
      Value start = read.starts[s];
      Value scale;
      if (sliceScale)
        scale = scaleOf(scales, row, start);
      Value vector = read.vectors.empty() ? Value() : read.vectors[s];
      // FP8: the slice's codes decoded as one vector (the GPU tail's
      // native path converts two codes per cvt).
      // A NaN code makes the output NaN whatever its bits, so the native
      // cvt's NaN is kept (no per-code rebuild of the codec's NaN).
      Value decoded;
      if (vector && !isInt8) {
        auto decode = ld::DecodeOp::create(
            b, VectorType::get({kSliceChannels}, b.getF32Type()), vector,
            op.getFormat());
        decode->setAttr(kDecodeAnyNanAttr, b.getUnitAttr());
        decoded = decode;
      }
      for (int64_t i = 0; i < kSliceChannels; ++i) {
        Value channel = add(start, idx(i));
        // FP8 values stay unscaled (the scale is applied once per dot
        // and per summed value).
        if (decoded) {
          values.push_back(vector::ExtractOp::create(b, decoded, i));
          continue;
        }
        if (!vector) {
          // Channels past head_dim read channel 0 (never used).
          if (Value exists = channelExists(s, i))
            channel = select(exists, channel, idx(0));
          values.push_back(rowValue(codes, scales, row, channel));
          continue;
        }
        Value code = vector::ExtractOp::create(b, vector, i);
        values.push_back(dequantizeCode(
            code, scale ? scale : scaleOf(scales, row, channel)));
      }
    }
    return values;
  }

  /// The kTokensPerTrip tokens of one trip of a slot (trip t holds the
  /// slot's tokens of trips kTokensPerTrip t + u), each row's codes read
  /// before any is dequantized.
  SmallVector<std::pair<SlotToken, RowCodes>> loadTrip(Value trip,
                                                       Value codes) {
    SmallVector<std::pair<SlotToken, RowCodes>> tokens;
    for (int64_t u = 0; u < kTokensPerTrip; ++u) {
      SlotToken token = slotToken(add(mul(trip, idx(kTokensPerTrip)), idx(u)));
      RowCodes read = loadRow(codes, token.row);
      tokens.emplace_back(std::move(token), std::move(read));
    }
    return tokens;
  }

  /// Pass K: the logits of the split's tokens, stored by lane 0.
  void emitLogits(Value trips) {
    // The lane's query channels, per head (0 past head_dim).
    SmallVector<SmallVector<Value>> queries(shape.group);
    for (int64_t member = 0; member < shape.group; ++member) {
      Value head = add(mul(kvHead, idx(shape.group)), idx(member));
      for (int64_t s = 0; s < shape.slicesPerLane(); ++s)
        for (int64_t i = 0; i < kSliceChannels; ++i) {
          Value channel = channelOf(s, i);
          Value exists = channelExists(s, i);
          if (exists)
            channel = select(exists, channel, idx(0));
          Value q = load(query, {sequence, head, channel});
          if (q.getType() != b.getF32Type())
            q = arith::ExtFOp::create(b, b.getF32Type(), q);
          queries[member].push_back(exists ? select(exists, q, f32(0.0f)) : q);
        }
    }
    auto loop = scf::ForOp::create(
        b, idx(0), arith::CeilDivUIOp::create(b, trips, idx(kTokensPerTrip)),
        idx(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    for (auto &[token, read] : loadTrip(loop.getInductionVar(), keyCodes))
      emitLogit(token, sliceValues(keyCodes, keyScales, read), queries);
  }

  /// One token's logits, stored by lane 0 when the token is in the split.
  void emitLogit(const SlotToken &token, ArrayRef<Value> keys,
                 ArrayRef<SmallVector<Value>> queries) {
    OpBuilder::InsertionGuard guard(b);
    SmallVector<Value> results;
    for (int64_t member = 0; member < shape.group; ++member) {
      Value dot = f32(0.0f);
      for (int64_t s = 0, n = 0; s < shape.slicesPerLane(); ++s)
        for (int64_t i = 0; i < kSliceChannels; ++i, ++n) {
          Value next = fma(queries[member][n], keys[n], dot);
          Value exists = channelExists(s, i);
          dot = exists ? select(exists, next, dot) : next;
        }
      dot = butterfly(dot, kLanes, [&](Value own, Value other) {
        return arith::AddFOp::create(b, own, other);
      });
      results.push_back(scaleLogit(dot, [&] { return keyScale; }));
    }
    Value writer = arith::AndIOp::create(
        b, token.valid, cmp(arith::CmpIPredicate::eq, lane, idx(0)));
    auto ifOp = scf::IfOp::create(b, writer, /*withElseRegion=*/false);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    Value base =
        mul(arith::SubIOp::create(b, token.token, begin), idx(shape.group));
    for (int64_t member = 0; member < shape.group; ++member)
      memref::StoreOp::create(b, results[member], logits,
                              ValueRange{add(base, idx(member))});
  }

  /// Each head's max logit over the split, normalized with + 0.
  SmallVector<Value> emitMaxima() {
    Value warp = arith::DivUIOp::create(b, thread, idx(kit::kWarpSize));
    Value warpLane = arith::RemUIOp::create(b, thread, idx(kit::kWarpSize));
    const float negativeInfinity = -std::numeric_limits<float>::infinity();
    for (int64_t member = 0; member < shape.group; ++member) {
      auto loop = scf::ForOp::create(b, thread, count, idx(kThreads),
                                     ValueRange{f32(negativeInfinity)});
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(loop.getBody());
        Value at =
            add(mul(loop.getInductionVar(), idx(shape.group)), idx(member));
        Value logit = memref::LoadOp::create(b, logits, at);
        scf::YieldOp::create(b, larger(loop.getRegionIterArg(0), logit));
      }
      Value m = loop.getResult(0);
      m = butterfly(m, kit::kWarpSize,
                    [&](Value own, Value other) { return larger(own, other); });
      auto ifOp = scf::IfOp::create(
          b, cmp(arith::CmpIPredicate::eq, warpLane, idx(0)), false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
      memref::StoreOp::create(
          b, m, warpMaxima,
          ValueRange{add(mul(warp, idx(shape.group)), idx(member))});
    }
    barrier();
    SmallVector<Value> maxima;
    for (int64_t member = 0; member < shape.group; ++member) {
      Value m = f32(negativeInfinity);
      for (int64_t w = 0; w < kWarps; ++w)
        m = larger(m, memref::LoadOp::create(b, warpMaxima,
                                             idx(w * shape.group + member)));
      maxima.push_back(arith::AddFOp::create(b, m, f32(0.0f)));
    }
    return maxima;
  }

  /// The weights exp(logit - max), in place of the logits.
  void emitWeights(ArrayRef<Value> maxima) {
    for (int64_t member = 0; member < shape.group; ++member) {
      auto loop = scf::ForOp::create(b, thread, count, idx(kThreads));
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value at =
          add(mul(loop.getInductionVar(), idx(shape.group)), idx(member));
      Value logit = memref::LoadOp::create(b, logits, at);
      memref::StoreOp::create(
          b, exp(arith::SubFOp::create(b, logit, maxima[member])), logits, at);
    }
  }

  /// Pass V and the merge of the slots.
  void emitValuesAndMerge(Value trips, ArrayRef<Value> maxima) {
    int64_t channels = shape.slicesPerLane() * kSliceChannels;
    // Per head: the lane's channels' sums, then the slot's weight sum.
    SmallVector<Value> init(shape.group * (channels + 1), f32(0.0f));
    auto loop = scf::ForOp::create(
        b, idx(0), arith::CeilDivUIOp::create(b, trips, idx(kTokensPerTrip)),
        idx(1), init);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      SmallVector<Value> sums(loop.getRegionIterArgs());
      for (auto &[token, read] : loadTrip(loop.getInductionVar(), valueCodes))
        sums = accumulate(token, sliceValues(valueCodes, valueScales, read),
                          sums, channels);
      scf::YieldOp::create(b, sums);
    }

    Value firstLane = cmp(arith::CmpIPredicate::eq, lane, idx(0));
    for (int64_t member = 0; member < shape.group; ++member) {
      // The previous head's readers are done with the shared sums.
      barrier();
      auto acc = loop.getResults().slice(member * (channels + 1), channels);
      Value slotBase = mul(slot, idx(shape.headDim));
      for (int64_t s = 0, n = 0; s < shape.slicesPerLane(); ++s)
        for (int64_t i = 0; i < kSliceChannels; ++i, ++n) {
          Value at = add(slotBase, channelOf(s, i));
          if (Value exists = channelExists(s, i)) {
            auto ifOp = scf::IfOp::create(b, exists, false);
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
            memref::StoreOp::create(b, acc[n], slotSums, at);
          } else {
            memref::StoreOp::create(b, acc[n], slotSums, at);
          }
        }
      {
        auto ifOp = scf::IfOp::create(b, firstLane, false);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
        memref::StoreOp::create(
            b, loop.getResults()[member * (channels + 1) + channels],
            slotWeights, slot);
      }
      barrier();
      Value memberIndex = idx(member);
      auto at = [&](Value channel) {
        return SmallVector<Value, 5>{sequence, kvHead, split, memberIndex,
                                     channel};
      };
      // Each channel's slot sums, added in slot order.
      auto channelLoop =
          scf::ForOp::create(b, thread, idx(shape.headDim), idx(kThreads));
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(channelLoop.getBody());
        Value channel = channelLoop.getInductionVar();
        Value total = f32(0.0f);
        for (int64_t r = 0; r < kSlots; ++r)
          total = arith::AddFOp::create(
              b, total,
              memref::LoadOp::create(b, slotSums,
                                     add(idx(r * shape.headDim), channel)));
        if (!isInt8)
          total = arith::MulFOp::create(b, total, valueScale);
        store(total, partials, at(channel));
      }
      auto ifOp = scf::IfOp::create(
          b, cmp(arith::CmpIPredicate::eq, thread, idx(0)), false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
      Value sum = f32(0.0f);
      for (int64_t r = 0; r < kSlots; ++r)
        sum = arith::AddFOp::create(
            b, sum, memref::LoadOp::create(b, slotWeights, idx(r)));
      store(maxima[member], partials, at(idx(shape.headDim)));
      store(sum, partials, at(idx(shape.headDim + 1)));
    }
  }

  /// One token of pass V: per head, acc = fma(w, v, acc) per channel and
  /// l += w (w = 0 for a token past the split).
  SmallVector<Value> accumulate(const SlotToken &token, ArrayRef<Value> values,
                                ArrayRef<Value> sums, int64_t channels) {
    Value position = select(
        token.valid, arith::SubIOp::create(b, token.token, begin), idx(0));
    SmallVector<Value> next;
    for (int64_t member = 0; member < shape.group; ++member) {
      Value weight = memref::LoadOp::create(
          b, logits, add(mul(position, idx(shape.group)), idx(member)));
      weight = select(token.valid, weight, f32(0.0f));
      ArrayRef<Value> acc = sums.slice(member * (channels + 1), channels);
      for (int64_t n = 0; n < channels; ++n)
        next.push_back(fma(weight, values[n], acc[n]));
      next.push_back(arith::AddFOp::create(
          b, sums[member * (channels + 1) + channels], weight));
    }
    return next;
  }

  KernelShape shape;
  Value logits, warpMaxima, slotSums, slotWeights;
  Value split, kvHead, sequence, thread, slot, lane, begin, end, count;
  Value keyScale, valueScale;
};

struct DecodeAttentionToGpu : OpRewritePattern<ld::KvDecodeAttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ld::KvDecodeAttentionOp op,
                                PatternRewriter &rewriter) const override {
    std::string why;
    FailureOr<KernelShape> shape = kernelShapeOf(op, why);
    if (failed(shape))
      return rewriter.notifyMatchFailure(op, why);
    return rewriteDecodeAttention(op, rewriter, [&](AttentionEmitter &base) {
      FlashDecodeEmitter emitter(base, *shape);
      emitter.emitSizes();
      emitter.emitSplitsKernel();
      emitGpuMerge(emitter, shape->headDim);
    });
  }
};

} // namespace
} // namespace lowbit::attention

std::string lowbit::gpuDecodeAttentionRefusal(Operation *op) {
  auto attention = dyn_cast<ld::KvDecodeAttentionOp>(op);
  if (!attention)
    return "not a lowbit.kv_decode_attention";
  std::string why;
  (void)attention::kernelShapeOf(attention, why);
  return why;
}

void lowbit::populateGpuDecodeAttentionPatterns(RewritePatternSet &patterns) {
  patterns.add<attention::DecodeAttentionToGpu>(patterns.getContext());
}
