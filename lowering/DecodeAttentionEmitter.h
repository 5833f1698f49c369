//===- DecodeAttentionEmitter.h - kv_decode_attention's emitters -*- C++
//-*-===//
//
// What lowbit-attention-to-loops (both stages as loops) and
// GpuDecodeAttention.cpp (stage 1 as the FlashDecoding kernel, stage 2 as
// the same loops) share: the buffers at the bufferization boundary, reads
// of the 2-D kernel parameters through the op's N-D views, the cache's
// rows and their dequantization, lowbit's exp and max, and the two stages
// as loops (docs/decode-attention.md). The index math, launches, shared
// memory, barriers and shuffles are kit::KernelEmitter's.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_DECODEATTENTIONEMITTER_H
#define LOWBIT_LOWERING_DECODEATTENTIONEMITTER_H

#include "lowering/GpuKernelBuilder.h"
#include "lowering/LowbitFusionBody.h"
#include "lowering/RunningMax.h"
#include "lowering/kit/KernelEmitter.h"

#include "dialect/LowbitAttentionOps.h"
#include "kv/KvDecodeOrder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"

namespace lowbit::attention {

using namespace mlir;
namespace ld = lowbit::dialect;

constexpr int64_t kPageTokens = 16;

/// ((p0 + p4) + (p2 + p6)) + ((p1 + p5) + (p3 + p7)): what every lane of an
/// 8-lane group holds after xor shuffles over offsets 4, 2, 1.
inline Value laneTree(ImplicitLocOpBuilder &b, ArrayRef<Value> lanes) {
  auto sum = [&](Value x, Value y) -> Value {
    return arith::AddFOp::create(b, x, y);
  };
  return sum(sum(sum(lanes[0], lanes[4]), sum(lanes[2], lanes[6])),
             sum(sum(lanes[1], lanes[5]), sum(lanes[3], lanes[7])));
}

/// Emits both stages for one op; buffers are memrefs from the boundary.
class AttentionEmitter : public kit::KernelEmitter {
public:
  AttentionEmitter(ImplicitLocOpBuilder &b, ld::KvDecodeAttentionOp op)
      : KernelEmitter(b), op(op) {
    lowbit::Format format = op.getFormat().getFormat();
    isInt8 = format.isInt();
    multiplier = op.getConvention() == "multiplier";
    perHead = op.getScale() == "per_head";
    groupSize = op.getGroupSize();
    splitTokens = op.getSplitTokens();
  }

  Value query, keyCodes, keyScales, valueCodes, valueScales, seqLens,
      blockTable, output, partials, scratch;

  /// Both stages as loops (the CPU tail's form).
  void emit() {
    emitSizes();
    emitSplits();
    emitMerge();
  }

  /// The sizes the stages read: batch, heads, head_dim, group, splits.
  void emitSizes() {
    batch = sizeOf(query, 0);
    qHeads = sizeOf(query, 1);
    headDim = sizeOf(query, 2);
    kvHeads = sizeOf(keyCodes, 1);
    group = arith::DivUIOp::create(b, qHeads, kvHeads);
    splits = sizeOf(partials, 2);
  }

protected:
  /// Size `dim` of a buffer, read through a reshape from its source's
  /// sizes (no memref.dim of the view, which would make kernels take it).
  Value sizeOf(Value buffer, int64_t dim) {
    if (auto expand = buffer.getDefiningOp<memref::ExpandShapeOp>())
      return getValueOrCreateConstantIndexOp(b, b.getLoc(),
                                             expand.getMixedOutputShape()[dim]);
    if (auto collapse = buffer.getDefiningOp<memref::CollapseShapeOp>()) {
      Value size = idx(1);
      for (int64_t source : collapse.getReassociationIndices()[dim])
        size = mul(size, sizeOf(collapse.getSrc(), source));
      return size;
    }
    return kit::dimOf(b, buffer, dim);
  }

  /// The buffer and indices a load or store at `indices` of `buffer`
  /// touches: through an expand_shape or collapse_shape of a kernel
  /// parameter, the parameter itself at linearized (delinearized) indices,
  /// so the GPU tail's kernels take the 2-D parameters the launch plans
  /// describe (docs/decode-attention.md, "Kernel ABI").
  std::pair<Value, SmallVector<Value, 5>> access(Value buffer,
                                                 ArrayRef<Value> indices) {
    SmallVector<Value, 5> source;
    if (auto expand = buffer.getDefiningOp<memref::ExpandShapeOp>()) {
      for (const ReassociationIndices &group :
           expand.getReassociationIndices()) {
        Value linear = indices[group.front()];
        for (int64_t dim : ArrayRef<int64_t>(group).drop_front())
          linear = add(mul(linear, sizeOf(buffer, dim)), indices[dim]);
        source.push_back(linear);
      }
      return {expand.getSrc(), source};
    }
    if (auto collapse = buffer.getDefiningOp<memref::CollapseShapeOp>()) {
      for (auto [position, group] :
           llvm::enumerate(collapse.getReassociationIndices())) {
        Value rest = indices[position];
        SmallVector<Value, 4> parts(group.size());
        for (size_t k = group.size(); k-- > 1;) {
          Value size = sizeOf(collapse.getSrc(), group[k]);
          parts[k] = arith::RemUIOp::create(b, rest, size);
          rest = arith::DivUIOp::create(b, rest, size);
        }
        parts[0] = rest;
        source.append(parts.begin(), parts.end());
      }
      return {collapse.getSrc(), source};
    }
    return {buffer, SmallVector<Value, 5>(indices)};
  }
  Value load(Value buffer, ArrayRef<Value> indices) {
    auto [source, at] = access(buffer, indices);
    return memref::LoadOp::create(b, source, at);
  }
  void store(Value value, Value buffer, ArrayRef<Value> indices) {
    auto [source, at] = access(buffer, indices);
    memref::StoreOp::create(b, value, source, at);
  }

  Value fma(Value x, Value y, Value z) {
    return math::FmaOp::create(b, x, y, z);
  }
  Value exp(Value x) { return lowbit::emitPrologueExp(b, b.getLoc(), x); }
  Value larger(Value m, Value x) { return emitLarger(b, m, x); }

  /// seq_lens[sequence] as an index.
  Value lengthOf(Value sequence) {
    Value length = load(seqLens, {sequence});
    return arith::IndexCastOp::create(b, b.getIndexType(), length);
  }

  /// The first three indices of token `token` of (sequence, kvHead) in the
  /// cache's storage: (b, h, t) contiguous, (page, h, slot) paged.
  SmallVector<Value, 4> cacheRow(Value sequence, Value kvHead, Value token) {
    if (!blockTable)
      return {sequence, kvHead, token};
    Value block = arith::DivUIOp::create(b, token, idx(kPageTokens));
    Value page = arith::IndexCastOp::create(
        b, b.getIndexType(), load(blockTable, {sequence, block}));
    Value slot = arith::RemUIOp::create(b, token, idx(kPageTokens));
    return {page, kvHead, slot};
  }

  /// The scale of element `channel` of a cache row.
  Value scaleOf(Value scales, ArrayRef<Value> row, Value channel) {
    if (!isInt8)
      return load(scales, {perHead ? row[1] : idx(0)});
    SmallVector<Value, 4> at(row);
    at.push_back(arith::DivUIOp::create(b, channel, idx(groupSize)));
    return load(scales, at);
  }

  /// A code dequantized with its scale: int8 code / s (multiplier) or
  /// code * s (divisor), FP8 decode(code) * s.
  Value dequantizeCode(Value code, Value scale) {
    if (isInt8) {
      Value value = arith::SIToFPOp::create(b, b.getF32Type(), code);
      return multiplier ? Value(arith::DivFOp::create(b, value, scale))
                        : Value(arith::MulFOp::create(b, value, scale));
    }
    Value value = ld::DecodeOp::create(b, b.getF32Type(), code, op.getFormat());
    return arith::MulFOp::create(b, value, scale);
  }

  /// The dequantized f32 element `channel` of a cache row.
  Value dequantize(Value codes, Value scales, ArrayRef<Value> row,
                   Value channel) {
    SmallVector<Value, 4> at(row);
    at.push_back(channel);
    return dequantizeCode(load(codes, at), scaleOf(scales, row, channel));
  }

  /// Element `channel` of a cache row as the attention loops multiply it:
  /// int8 dequantized with its group scale, FP8 decoded only (its one
  /// scale per kv head or tensor is applied once to the dot and to the
  /// summed values, rowScale).
  Value rowValue(Value codes, Value scales, ArrayRef<Value> row,
                 Value channel) {
    if (isInt8)
      return dequantize(codes, scales, row, channel);
    SmallVector<Value, 4> at(row);
    at.push_back(channel);
    return ld::DecodeOp::create(b, b.getF32Type(), load(codes, at),
                                op.getFormat());
  }

  /// The FP8 scale of a row's kv head (row[1] in both layouts).
  Value rowScale(Value scales, ArrayRef<Value> row) {
    return load(scales, {perHead ? row[1] : idx(0)});
  }

  /// q[sequence, head] . k(token) * softmax_scale, as the GPU kernel's 8
  /// lanes form it (kv/KvDecodeOrder.h): lane j's fma chain over its
  /// 16-channel slices j, j + 8, ... from 0 (+0 past head_dim), the xor
  /// tree ((p0 + p4) + (p2 + p6)) + ((p1 + p5) + (p3 + p7)), one multiply.
  Value logit(Value sequence, Value head, ArrayRef<Value> row) {
    SmallVector<Value, 8> lanes;
    for (int64_t lane = 0; lane < lowbit::kv::kDecodeLanes; ++lane) {
      auto slices = scf::ForOp::create(
          b, idx(lane * lowbit::kv::kDecodeLaneChannels), headDim,
          idx(lowbit::kv::kDecodeLanes * lowbit::kv::kDecodeLaneChannels),
          ValueRange{f32(0.0f)});
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(slices.getBody());
      Value start = slices.getInductionVar();
      Value stop = arith::MinUIOp::create(
          b, headDim, add(start, idx(lowbit::kv::kDecodeLaneChannels)));
      auto chain = scf::ForOp::create(b, start, stop, idx(1),
                                      ValueRange{slices.getRegionIterArg(0)});
      {
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPointToStart(chain.getBody());
        Value channel = chain.getInductionVar();
        Value q = load(query, {sequence, head, channel});
        if (q.getType() != b.getF32Type())
          q = arith::ExtFOp::create(b, b.getF32Type(), q);
        Value k = rowValue(keyCodes, keyScales, row, channel);
        scf::YieldOp::create(b, fma(q, k, chain.getRegionIterArg(0)));
      }
      scf::YieldOp::create(b, chain.getResult(0));
      lanes.push_back(slices.getResult(0));
    }
    return scaleLogit(laneTree(b, lanes),
                      [&] { return rowScale(keyScales, row); });
  }

  /// The lanes' dot times the key scale (FP8), then softmax_scale.
  Value scaleLogit(Value dot, function_ref<Value()> keyScale) {
    if (!isInt8)
      dot = arith::MulFOp::create(b, dot, keyScale());
    return arith::MulFOp::create(b, dot, f32(softmaxScale()));
  }

  float softmaxScale() { return op.getSoftmaxScale().convertToFloat(); }

  Value maxOver(Value begin, Value end, function_ref<Value(Value)> value) {
    return emitMaxOver(b, begin, end, value);
  }

  /// Stores 0 at at(channel) for every channel of the head.
  void zeroChannels(Value buffer,
                    function_ref<SmallVector<Value, 5>(Value)> at) {
    auto loop = scf::ForOp::create(b, idx(0), headDim, idx(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    store(f32(0.0f), buffer, at(loop.getInductionVar()));
  }

  /// One scf.parallel dimension over `units`: the GPU tail maps it to
  /// blocks of threads along x (a 3-D nest would put threads on z, whose
  /// limit is 64).
  scf::ParallelOp flatParallel(Value units) {
    return scf::ParallelOp::create(b, ValueRange{idx(0)}, ValueRange{units},
                                   ValueRange{idx(1)}, ValueRange{}, nullptr);
  }

public:
  /// Stage 1: every (sequence, kv head, split), unit = (b * Hkv + kvh) * S
  /// + split.
  void emitSplits() {
    auto parallel = flatParallel(mul(mul(batch, kvHeads), splits));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(parallel.getBody());
    Value unit = parallel.getInductionVars()[0];
    Value split = arith::RemUIOp::create(b, unit, splits);
    Value rest = arith::DivUIOp::create(b, unit, splits);
    Value kvHead = arith::RemUIOp::create(b, rest, kvHeads);
    Value sequence = arith::DivUIOp::create(b, rest, kvHeads);
    Value begin = mul(split, idx(splitTokens));
    Value end = arith::MinSIOp::create(b, lengthOf(sequence),
                                       add(begin, idx(splitTokens)));
    // One token slot's sums; the scope frees it after each unit.
    auto scope = memref::AllocaScopeOp::create(b, TypeRange{});
    b.setInsertionPointToStart(&scope.getBodyRegion().emplaceBlock());
    memref::AllocaScopeReturnOp::create(b);
    b.setInsertionPointToStart(&scope.getBodyRegion().front());
    scratch = memref::AllocaOp::create(
        b, MemRefType::get({ShapedType::kDynamic}, b.getF32Type()),
        ValueRange{headDim});
    auto heads = scf::ForOp::create(b, idx(0), group, idx(1));
    b.setInsertionPointToStart(heads.getBody());
    Value member = heads.getInductionVar();
    Value head = add(mul(kvHead, group), member);
    auto slot = [&](Value channel) {
      return SmallVector<Value, 5>{sequence, kvHead, split, member, channel};
    };

    // The split's max logit (-inf when it holds no token); + 0 makes a
    // zero max +0 whatever order the GPU's reduction found it in.
    Value splitMax = maxOver(begin, end, [&](Value token) {
      return logit(sequence, head, cacheRow(sequence, kvHead, token));
    });
    splitMax = arith::AddFOp::create(b, splitMax, f32(0.0f));
    zeroChannels(partials, slot);

    // Token slot r (the GPU's 8-lane group r) sums the weights and weighted
    // values of tokens begin + r, begin + r + 16, ... in `scratch`; the
    // slots' sums are added into the partials in slot order.
    auto slots = scf::ForOp::create(b, idx(0), idx(lowbit::kv::kDecodeSlots),
                                    idx(1), ValueRange{f32(0.0f)});
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(slots.getBody());
      auto at = [&](Value channel) { return SmallVector<Value, 5>{channel}; };
      zeroChannels(scratch, at);
      auto tokens = scf::ForOp::create(b, add(begin, slots.getInductionVar()),
                                       end, idx(lowbit::kv::kDecodeSlots),
                                       ValueRange{f32(0.0f)});
      {
        OpBuilder::InsertionGuard innermost(b);
        b.setInsertionPointToStart(tokens.getBody());
        SmallVector<Value, 4> row =
            cacheRow(sequence, kvHead, tokens.getInductionVar());
        Value weight =
            exp(arith::SubFOp::create(b, logit(sequence, head, row), splitMax));
        forChannels([&](Value channel) {
          Value v = rowValue(valueCodes, valueScales, row, channel);
          Value acc = memref::LoadOp::create(b, scratch, channel);
          memref::StoreOp::create(b, fma(weight, v, acc), scratch, channel);
        });
        scf::YieldOp::create(
            b, arith::AddFOp::create(b, tokens.getRegionIterArg(0), weight)
                   .getResult());
      }
      forChannels([&](Value channel) {
        Value total = load(partials, slot(channel));
        Value acc = memref::LoadOp::create(b, scratch, channel);
        store(arith::AddFOp::create(b, total, acc), partials, slot(channel));
      });
      scf::YieldOp::create(b,
                           arith::AddFOp::create(b, slots.getRegionIterArg(0),
                                                 tokens.getResult(0))
                               .getResult());
    }
    // FP8: the summed values times the value scale, once per channel.
    if (!isInt8) {
      Value valueScale = rowScale(valueScales, {sequence, kvHead});
      forChannels([&](Value channel) {
        Value total = load(partials, slot(channel));
        store(arith::MulFOp::create(b, total, valueScale), partials,
              slot(channel));
      });
    }
    store(splitMax, partials, slot(headDim));
    store(slots.getResult(0), partials, slot(add(headDim, idx(1))));
  }

protected:
  /// body(channel) for every channel of the head.
  void forChannels(function_ref<void(Value)> body) {
    auto loop = scf::ForOp::create(b, idx(0), headDim, idx(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    body(loop.getInductionVar());
  }

public:
  /// Stage 2: every (sequence, query head), unit = b * Hq + h, merges its
  /// used splits in order.
  void emitMerge() {
    auto parallel = flatParallel(mul(batch, qHeads));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(parallel.getBody());
    Value unit = parallel.getInductionVars()[0];
    Value head = arith::RemUIOp::create(b, unit, qHeads);
    Value sequence = arith::DivUIOp::create(b, unit, qHeads);
    Value kvHead = arith::DivUIOp::create(b, head, group);
    Value member = arith::RemUIOp::create(b, head, group);
    Value length = lengthOf(sequence);
    Value used = arith::CeilDivUIOp::create(b, length, idx(splitTokens));
    auto slot = [&](Value split, Value channel) {
      return SmallVector<Value, 5>{sequence, kvHead, split, member, channel};
    };
    auto out = [&](Value channel) {
      return SmallVector<Value, 5>{sequence, head, channel};
    };

    Value globalMax = maxOver(idx(0), used, [&](Value split) {
      return load(partials, slot(split, headDim));
    });
    zeroChannels(output, out);

    auto sumLoop =
        scf::ForOp::create(b, idx(0), used, idx(1), ValueRange{f32(0.0f)});
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(sumLoop.getBody());
      Value split = sumLoop.getInductionVar();
      Value m = load(partials, slot(split, headDim));
      Value l = load(partials, slot(split, add(headDim, idx(1))));
      Value factor = exp(arith::SubFOp::create(b, m, globalMax));
      auto channels = scf::ForOp::create(b, idx(0), headDim, idx(1));
      {
        OpBuilder::InsertionGuard innermost(b);
        b.setInsertionPointToStart(channels.getBody());
        Value channel = channels.getInductionVar();
        Value acc = load(partials, slot(split, channel));
        Value total = load(output, out(channel));
        store(fma(acc, factor, total), output, out(channel));
      }
      scf::YieldOp::create(b, fma(l, factor, sumLoop.getRegionIterArg(0)));
    }
    Value sum = sumLoop.getResult(0);

    // A sequence of length 0 keeps its zeros (0 / 0 would be NaN).
    Value nonEmpty =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ne, length, idx(0));
    auto ifOp = scf::IfOp::create(b, nonEmpty, /*withElseRegion=*/false);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    auto channels = scf::ForOp::create(b, idx(0), headDim, idx(1));
    b.setInsertionPointToStart(channels.getBody());
    Value channel = channels.getInductionVar();
    Value total = load(output, out(channel));
    store(arith::DivFOp::create(b, total, sum), output, out(channel));
  }

protected:
  ld::KvDecodeAttentionOp op;
  bool isInt8 = false, multiplier = true, perHead = false;
  int64_t groupSize = 64, splitTokens = 1;
  Value batch, qHeads, kvHeads, headDim, group, splits;
};

/// Stage 2 as one 128-thread block per (sequence, query head), thread t on
/// channels t, t + 128, ... of a head of `headDim` (static) channels
/// (GpuDecodeAttentionMerge.cpp); `emitter` has emitted its sizes.
void emitGpuMerge(const AttentionEmitter &emitter, int64_t headDim);

/// What the tensor-core pass K (GpuDecodeAttentionMma.cpp) reads of the
/// FlashDecoding block: the static group and head_dim, the block's
/// sequence, kv head and split bounds [begin, end) with count = its tokens,
/// the thread id, the shared logits [split x group] it writes, and the FP8
/// key scale.
struct MmaLogits {
  int64_t group = 0, headDim = 0;
  Value sequence, kvHead, begin, end, count, thread, logits, keyScale;
};
/// Pass K with mma.sync m16n8k16 (docs/decode-attention.md, "Tensor-core
/// q.K"); `emitter` has emitted its sizes.
void emitMmaLogits(const AttentionEmitter &emitter, const MmaLogits &args);

/// The buffer an operand is read from: its to_tensor's memref, or a
/// read-only to_buffer.
inline Value operandMemref(ImplicitLocOpBuilder &b, Value tensor) {
  if (!tensor)
    return {};
  if (Value buffer = lowbit::gpu_mapping::operandBuffer(tensor))
    return buffer;
  auto type = cast<RankedTensorType>(tensor.getType());
  return bufferization::ToBufferOp::create(
      b, MemRefType::get(type.getShape(), type.getElementType()), tensor,
      /*read_only=*/true);
}

/// Finds op's buffers (its operands' memrefs and its results'
/// materialize_in_destination memrefs), calls emit(emitter) to write the
/// stages, then erases the materialize ops and op. Without destinations it
/// refuses with a message, since the partials must be where stage 2 reads
/// them and the caller must be able to size them.
LogicalResult
rewriteDecodeAttention(ld::KvDecodeAttentionOp op, RewriterBase &rewriter,
                       function_ref<void(AttentionEmitter &)> emit);

} // namespace lowbit::attention

#endif // LOWBIT_LOWERING_DECODEATTENTIONEMITTER_H
