//===- LowbitAttentionToLoops.cpp - kv_decode_attention to split-K loops --===//
//
// Rewrites lowbit.kv_decode_attention into two scf.parallel nests whose
// arithmetic, operation for operation, is the kernel contract of
// docs/decode-attention.md (kv::decodeAttentionKernelOrder is the same in
// plain C++):
//
//   stage 1, one unit per (sequence, kv head, split): for each query head
//     of the group, m = max over the split's tokens of (q . k) * scale (the
//     dot an fma chain in channel order), then l = sum exp(logit - m) and
//     acc = fma(exp(logit - m), v, acc) in token order, written to the
//     partials as [acc..., m, l];
//   stage 2, one unit per (sequence, query head): M = max of the used
//     splits' m, then in split order f = exp(m_s - M), L = fma(l_s, f, L),
//     out = fma(acc_s, f, out); finally out / L (zeros for length 0).
//
// K and V codes are dequantized where the loops read them (int8 groups:
// code / scale or code * scale; FP8: decode(code) * scale), and exp is
// lowbit's own (emitPrologueExp), so the CPU tail and the GPU tail's
// mapping of these loops give the same bits.
//
//===----------------------------------------------------------------------===//

#include "lowering/GpuKernelBuilder.h"
#include "lowering/LowbitFusionBody.h"
#include "lowering/Passes.h"

#include "dialect/LowbitAttentionOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/Iterators.h"

#include <limits>

namespace lowbit {
#define GEN_PASS_DEF_LOWBITATTENTIONTOLOOPS
#include "lowering/Passes.h.inc"
} // namespace lowbit

using namespace mlir;
namespace ld = lowbit::dialect;

namespace {

constexpr int64_t kPageTokens = 16;

/// Emits both stages for one op; buffers are memrefs from the boundary.
class AttentionEmitter {
public:
  AttentionEmitter(ImplicitLocOpBuilder &b, ld::KvDecodeAttentionOp op)
      : b(b), op(op) {
    lowbit::Format format = op.getFormat().getFormat();
    isInt8 = format.isInt();
    multiplier = op.getConvention() == "multiplier";
    perHead = op.getScale() == "per_head";
    groupSize = op.getGroupSize();
    splitTokens = op.getSplitTokens();
  }

  Value query, keyCodes, keyScales, valueCodes, valueScales, seqLens,
      blockTable, output, partials;

  void emit() {
    batch = sizeOf(query, 0);
    qHeads = sizeOf(query, 1);
    headDim = sizeOf(query, 2);
    kvHeads = sizeOf(keyCodes, 1);
    group = arith::DivUIOp::create(b, qHeads, kvHeads);
    splits = sizeOf(partials, 2);
    emitSplits();
    emitMerge();
  }

private:
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
    return lowbit::gpu_mapping::dimOf(b, buffer, dim);
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
      for (ReassociationIndices group : expand.getReassociationIndices()) {
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

  Value idx(int64_t value) { return arith::ConstantIndexOp::create(b, value); }
  Value f32(float value) {
    return arith::ConstantOp::create(b, b.getF32FloatAttr(value));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, x, y); }
  Value fma(Value x, Value y, Value z) {
    return math::FmaOp::create(b, x, y, z);
  }
  Value exp(Value x) { return lowbit::emitPrologueExp(b, b.getLoc(), x); }
  /// x > m ? x : m: a NaN never wins, and no libdevice call (fmaxf) is
  /// left for the GPU tail.
  Value larger(Value m, Value x) {
    Value greater = arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, x, m);
    return arith::SelectOp::create(b, greater, x, m);
  }

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

  /// The dequantized f32 element `channel` of a cache row.
  Value dequantize(Value codes, Value scales, ArrayRef<Value> row,
                   Value channel) {
    SmallVector<Value, 4> at(row);
    at.push_back(channel);
    Value code = load(codes, at);
    if (isInt8) {
      Value value = arith::SIToFPOp::create(b, b.getF32Type(), code);
      at.back() = arith::DivUIOp::create(b, channel, idx(groupSize));
      Value scale = load(scales, at);
      return multiplier ? Value(arith::DivFOp::create(b, value, scale))
                        : Value(arith::MulFOp::create(b, value, scale));
    }
    Value value = ld::DecodeOp::create(b, b.getF32Type(), code, op.getFormat());
    Value scale = load(scales, {perHead ? row[1] : idx(0)});
    return arith::MulFOp::create(b, value, scale);
  }

  /// q[sequence, head] . k(token) * softmax_scale: an fma chain in channel
  /// order from 0, then one multiply.
  Value logit(Value sequence, Value head, ArrayRef<Value> row) {
    auto loop =
        scf::ForOp::create(b, idx(0), headDim, idx(1), ValueRange{f32(0.0f)});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value channel = loop.getInductionVar();
      Value q = load(query, {sequence, head, channel});
      if (q.getType() != b.getF32Type())
        q = arith::ExtFOp::create(b, b.getF32Type(), q);
      Value k = dequantize(keyCodes, keyScales, row, channel);
      scf::YieldOp::create(b, fma(q, k, loop.getRegionIterArg(0)));
    }
    return arith::MulFOp::create(b, loop.getResult(0), f32(softmaxScale()));
  }

  float softmaxScale() { return op.getSoftmaxScale().convertToFloat(); }

  /// The running max (`larger`) of value(i) for i in [begin, end), from
  /// -inf.
  Value maxOver(Value begin, Value end, function_ref<Value(Value)> value) {
    auto loop = scf::ForOp::create(
        b, begin, end, idx(1),
        ValueRange{f32(-std::numeric_limits<float>::infinity())});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    scf::YieldOp::create(
        b, larger(loop.getRegionIterArg(0), value(loop.getInductionVar())));
    return loop.getResult(0);
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
    auto heads = scf::ForOp::create(b, idx(0), group, idx(1));
    b.setInsertionPointToStart(heads.getBody());
    Value member = heads.getInductionVar();
    Value head = add(mul(kvHead, group), member);
    auto slot = [&](Value channel) {
      return SmallVector<Value, 5>{sequence, kvHead, split, member, channel};
    };

    // The split's max logit (-inf when it holds no token).
    Value splitMax = maxOver(begin, end, [&](Value token) {
      return logit(sequence, head, cacheRow(sequence, kvHead, token));
    });
    zeroChannels(partials, slot);

    // Weights and the weighted values, in token order.
    auto sumLoop =
        scf::ForOp::create(b, begin, end, idx(1), ValueRange{f32(0.0f)});
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(sumLoop.getBody());
      SmallVector<Value, 4> row =
          cacheRow(sequence, kvHead, sumLoop.getInductionVar());
      Value weight =
          exp(arith::SubFOp::create(b, logit(sequence, head, row), splitMax));
      auto channels = scf::ForOp::create(b, idx(0), headDim, idx(1));
      {
        OpBuilder::InsertionGuard innermost(b);
        b.setInsertionPointToStart(channels.getBody());
        Value channel = channels.getInductionVar();
        Value v = dequantize(valueCodes, valueScales, row, channel);
        Value acc = load(partials, slot(channel));
        store(fma(weight, v, acc), partials, slot(channel));
      }
      scf::YieldOp::create(
          b, arith::AddFOp::create(b, sumLoop.getRegionIterArg(0), weight)
                 .getResult());
    }
    store(splitMax, partials, slot(headDim));
    store(sumLoop.getResult(0), partials, slot(add(headDim, idx(1))));
  }

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

  ImplicitLocOpBuilder &b;
  ld::KvDecodeAttentionOp op;
  bool isInt8 = false, multiplier = true, perHead = false;
  int64_t groupSize = 64, splitTokens = 1;
  Value batch, qHeads, kvHeads, headDim, group, splits;
};

/// The buffer an operand is read from: its to_tensor's memref, or a
/// read-only to_buffer.
Value operandMemref(ImplicitLocOpBuilder &b, Value tensor) {
  if (!tensor)
    return {};
  if (Value buffer = lowbit::gpu_mapping::operandBuffer(tensor))
    return buffer;
  auto type = cast<RankedTensorType>(tensor.getType());
  return bufferization::ToBufferOp::create(
      b, MemRefType::get(type.getShape(), type.getElementType()), tensor,
      /*read_only=*/true);
}

LogicalResult lowerAttention(ld::KvDecodeAttentionOp op) {
  ImplicitLocOpBuilder b(op.getLoc(), op);
  // Results are written into their materialize_in_destination memrefs;
  // without one they are refused, since the partials must be where stage 2
  // reads them and the caller must be able to size them.
  SmallVector<Value, 2> destinations;
  SmallVector<Operation *, 2> boundary;
  for (Value result : op->getResults()) {
    auto materialize = lowbit::gpu_mapping::resultDestination(result, op);
    if (!materialize)
      return op.emitOpError()
             << "lowers only with each result written by one "
                "bufferization.materialize_in_destination into a memref "
                "defined before it (the kernel function's parameters)";
    destinations.push_back(materialize.getDest());
    boundary.push_back(materialize);
  }
  AttentionEmitter emitter(b, op);
  emitter.query = operandMemref(b, op.getQuery());
  emitter.keyCodes = operandMemref(b, op.getKeyCodes());
  emitter.keyScales = operandMemref(b, op.getKeyScales());
  emitter.valueCodes = operandMemref(b, op.getValueCodes());
  emitter.valueScales = operandMemref(b, op.getValueScales());
  emitter.seqLens = operandMemref(b, op.getSeqLens());
  emitter.blockTable = operandMemref(b, op.getBlockTable());
  emitter.output = destinations[0];
  emitter.partials = destinations[1];
  emitter.emit();
  for (Operation *materialize : boundary)
    materialize->erase();
  op.erase();
  return success();
}

struct LowbitAttentionToLoopsPass
    : public lowbit::impl::LowbitAttentionToLoopsBase<
          LowbitAttentionToLoopsPass> {
  void runOnOperation() override {
    SmallVector<ld::KvDecodeAttentionOp> targets;
    getOperation().walk(
        [&](ld::KvDecodeAttentionOp op) { targets.push_back(op); });
    bool failedAny = false;
    for (ld::KvDecodeAttentionOp op : targets)
      failedAny |= failed(lowerAttention(op));
    if (failedAny)
      return signalPassFailure();
    // Inputs read through their buffers leave dead to_tensor ops, and the
    // reshaped views of the parameters dead reshapes, behind.
    SmallVector<Operation *> dead;
    getOperation().walk<WalkOrder::PostOrder, ReverseIterator>(
        [&](Operation *op) {
          if (isa<bufferization::ToTensorOp, memref::ExpandShapeOp,
                  memref::CollapseShapeOp>(op))
            dead.push_back(op);
        });
    for (Operation *op : dead)
      if (op->use_empty())
        op->erase();
  }
};

} // namespace
