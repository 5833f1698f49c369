//===- GpuKvAppend.cpp - KV-cache append/dequantize, one warp per row -----===//
//
// lowbit.kv_append and lowbit.kv_dequantize as gpu.launch ops shaped for
// bandwidth (docs/kv-kernels.md, "GPU mapping"). A warp owns one
// (sequence, kv head, token) row, 8 rows per 256-thread block; all its
// lanes read the position (and the block-table entry) of the row, one
// transaction, and take the same branch, so shuffles are warp-uniform.
// The row is cut into chunks of `width` elements (kvRowMapping: up to 16
// bytes, narrower where that leaves lanes idle), loaded and stored as one
// vector each:
//   kv_int8_g<G>  a group's chunks belong to an aligned run of
//                 lanesPerGroup lanes (32 / lanesPerGroup groups per trip
//                 of the warp); each lane folds |x| over its chunks, the
//                 run combines by xor shuffles, every lane of the run
//                 computes the scale, its first lane stores it, and the
//                 same chunks (L1 hits) are quantized and stored;
//   kv_fp8        lanes stride over the chunks, x2 encodes;
//   dequantize    lanes stride over the chunks, the scale of a chunk's
//                 group loaded once per chunk.
// Buffers whose base is not aligned to a chunk take the same mapping with
// scalar accesses.
//
//===----------------------------------------------------------------------===//

#include "lowering/GpuKvAppend.h"
#include "lowering/GpuReductionBuilder.h"
#include "lowering/KvArithmetic.h"

#include "dialect/LowbitKvOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <numeric>

using namespace mlir;
namespace ld = lowbit::dialect;

lowbit::KvRowMapping lowbit::kvRowMapping(int64_t headDim, int64_t groupSize,
                                          int64_t wideBytes) {
  using gpu_mapping::kVectorBytes;
  using gpu_mapping::kWarpSize;
  KvRowMapping mapping;
  int64_t divisible = groupSize ? std::gcd(headDim, groupSize) : headDim;
  while (mapping.width * 2 * wideBytes <= kVectorBytes &&
         divisible % (mapping.width * 2) == 0 &&
         headDim / (mapping.width * 2) >= kWarpSize)
    mapping.width *= 2;
  mapping.chunksPerRow = headDim / mapping.width;
  if (!groupSize) {
    mapping.chunksPerGroup = mapping.chunksPerRow;
    return mapping;
  }
  mapping.chunksPerGroup = groupSize / mapping.width;
  mapping.groupsPerRow = (headDim + groupSize - 1) / groupSize;
  mapping.lanesPerGroup = 1;
  while (mapping.lanesPerGroup < kWarpSize &&
         mapping.lanesPerGroup < mapping.chunksPerGroup)
    mapping.lanesPerGroup *= 2;
  mapping.groupsPerTrip = kWarpSize / mapping.lanesPerGroup;
  mapping.trips = (mapping.groupsPerRow + mapping.groupsPerTrip - 1) /
                  mapping.groupsPerTrip;
  return mapping;
}

namespace lowbit::gpu_mapping {
namespace {

Type elementTypeOf(Value buffer) {
  return cast<MemRefType>(buffer.getType()).getElementType();
}

class KvRowEmitter : public KvArithmetic<GpuReductionBuilder> {
public:
  KvRowEmitter(ImplicitLocOpBuilder &builder, const kv::KvSchemeParams &params,
               int64_t threadsPerBlock)
      : KvArithmetic(builder, kvElementScheme(params), threadsPerBlock),
        params(params) {}

  void emitAppend(Value input, Value codes, Value scales, Value positions,
                  Value blockTable) {
    int64_t headDim = cast<MemRefType>(input.getType()).getDimSize(3);
    Type inputType = elementTypeOf(input);
    KvRowMapping mapping =
        kvRowMapping(headDim, params.isInt8() ? params.int8.groupSize : 0,
                     bytesOf(inputType));
    chunkWidth = mapping.width;
    emitRows(input, codes, positions, blockTable, mapping, {input, codes},
             [&](ValueRange row, ValueRange slot, Value lane, bool vectorized) {
               Chunks chunks{mapping.width, vectorized};
               if (params.isInt8())
                 emitInt8Append(chunks, mapping, input, codes, scales, row,
                                slot, lane);
               else
                 emitFp8Append(chunks, mapping, input, codes, scales, row, slot,
                               lane);
             },
             {});
  }

  void emitDequantize(Value codes, Value scales, Value positions, Value output,
                      Value blockTable) {
    int64_t headDim = cast<MemRefType>(output.getType()).getDimSize(3);
    Type outputType = elementTypeOf(output);
    int64_t groupSize = params.isInt8() ? params.int8.groupSize : 0;
    KvRowMapping mapping =
        kvRowMapping(headDim, groupSize, bytesOf(outputType));
    chunkWidth = mapping.width;
    auto storeValues = [&](const Chunks &chunks, ArrayRef<Value> values,
                           ValueRange row, Value first) {
      SmallVector<Value> narrowed;
      for (Value value : values)
        narrowed.push_back(narrow(value, outputType));
      chunks.store(*this, narrowed, output, row, first);
    };
    emitRows(
        output, codes, positions, blockTable, mapping, {codes, output},
        [&](ValueRange row, ValueRange slot, Value lane, bool vectorized) {
          Chunks chunks{mapping.width, vectorized};
          Value scale = params.isInt8() ? Value() : staticScale(scales, row[1]);
          forEachChunk(lane, idx(0), idx(mapping.chunksPerRow), kWarpSize,
                       [&](Value first) {
                         SmallVector<Value> loaded =
                             chunks.load(*this, codes, slot, first);
                         SmallVector<Value> values;
                         if (!params.isInt8()) {
                           values = decodeFp8(loaded, scale);
                         } else {
                           Value group =
                               arith::DivUIOp::create(b, first, idx(groupSize));
                           Value groupScale = memref::LoadOp::create(
                               b, scales, at(slot, group));
                           for (Value code : loaded)
                             values.push_back(
                                 dequantizeInt8(code, groupScale, params.int8));
                         }
                         storeValues(chunks, values, row, first);
                       });
        },
        [&](ValueRange row, Value lane, bool vectorized) {
          Chunks chunks{mapping.width, vectorized};
          SmallVector<Value> zeros(mapping.width, f32(0.0f));
          forEachChunk(
              lane, idx(0), idx(mapping.chunksPerRow), kWarpSize,
              [&](Value first) { storeValues(chunks, zeros, row, first); });
        });
  }

private:
  /// Loads and stores of one lane's chunk of `width` elements starting at
  /// element `first` of a row: one vector access, or scalar ones where the
  /// buffers are not aligned to the vector.
  struct Chunks {
    int64_t width;
    bool vectorized;

    SmallVector<Value> load(KvRowEmitter &e, Value buffer, ValueRange row,
                            Value first) const {
      SmallVector<Value> elements;
      if (vectorized && width > 1) {
        Type type = elementTypeOf(buffer);
        Value vector = e.loadVector(VectorType::get({width}, type), buffer,
                                    e.at(row, first));
        for (int64_t i = 0; i < width; ++i)
          elements.push_back(vector::ExtractOp::create(e.b, vector, i));
        return elements;
      }
      for (int64_t i = 0; i < width; ++i)
        elements.push_back(
            memref::LoadOp::create(e.b, buffer, e.at(row, e.offset(first, i))));
      return elements;
    }

    void store(KvRowEmitter &e, ArrayRef<Value> elements, Value buffer,
               ValueRange row, Value first) const {
      if (vectorized && width > 1) {
        Type type = elementTypeOf(buffer);
        Value packed = vector::FromElementsOp::create(
            e.b, VectorType::get({width}, type), elements);
        e.storeVector(packed, buffer, e.at(row, first));
        return;
      }
      for (int64_t i = 0; i < width; ++i)
        memref::StoreOp::create(e.b, elements[i], buffer,
                                e.at(row, e.offset(first, i)));
    }
  };

  using RowBody = function_ref<void(ValueRange row, ValueRange slot, Value lane,
                                    bool vectorized)>;
  using OutsideBody =
      function_ref<void(ValueRange row, Value lane, bool vectorized)>;

  SmallVector<Value> at(ValueRange row, Value last) {
    SmallVector<Value> indices(row);
    indices.push_back(last);
    return indices;
  }
  Value offset(Value first, int64_t delta) {
    return delta ? arith::AddIOp::create(b, first, idx(delta)).getResult()
                 : first;
  }

  /// One launch, one warp per (sequence, head, token) row of `values`;
  /// warps past the last row do nothing. `body` runs where the row's cache
  /// slot is inside the cache, `outside` (if given) where it is not, each
  /// with vector accesses when every buffer of `streamed` is aligned to
  /// its chunk, else with scalar ones. Every lane of a warp takes the same
  /// branches.
  void emitRows(Value values, Value codes, Value positions, Value blockTable,
                const KvRowMapping &mapping, ArrayRef<Value> streamed,
                RowBody body, OutsideBody outside) {
    Value heads = dimOf(b, values, 1), tokens = dimOf(b, values, 2);
    Value headTokens = arith::MulIOp::create(b, heads, tokens);
    Value rows = arith::MulIOp::create(b, dimOf(b, values, 0), headTokens);
    gpu::LaunchOp launch =
        createLaunch(arith::MulIOp::create(b, rows, idx(kWarpSize)));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(launch.getBody().front().getTerminator());

    // The row and lane from the block and the thread index apart (the
    // block size is a multiple of the warp): every address is then a
    // warp-uniform base plus the lane's chunk, which the report's address
    // analysis reads as adjacent lanes.
    Value threadInBlock = launch.getThreadIds().x;
    Value warp = arith::DivUIOp::create(b, threadInBlock, idx(kWarpSize));
    Value firstRow = arith::MulIOp::create(b, launch.getBlockIds().x,
                                           idx(threadsPerBlock / kWarpSize));
    Value row = arith::AddIOp::create(b, firstRow, warp);
    Value lane = arith::RemUIOp::create(b, threadInBlock, idx(kWarpSize));
    auto rowIf = scf::IfOp::create(
        b, arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row, rows),
        /*withElseRegion=*/false);
    b.setInsertionPoint(rowIf.thenBlock()->getTerminator());
    Value seq = arith::DivUIOp::create(b, row, headTokens);
    Value head = arith::RemUIOp::create(
        b, arith::DivUIOp::create(b, row, tokens), heads);
    Value token = arith::RemUIOp::create(b, row, tokens);
    SmallVector<Value> rowIndices{seq, head, token};
    KvCacheSlot slot =
        findCacheSlot(codes, positions, blockTable, seq, head, token);

    // Rows start at multiples of the chunk (width divides head_dim), so
    // the bases' alignment decides for every row.
    SmallVector<Value> aligned;
    for (Value buffer : streamed)
      aligned.push_back(
          isAligned(buffer, mapping.width * bytesOf(elementTypeOf(buffer))));
    Value vectorized = andAll(aligned);
    auto bothWays = [&](function_ref<void(bool)> emit) {
      if (mapping.width == 1) {
        emit(false);
        return;
      }
      auto vectorIf = scf::IfOp::create(b, vectorized, /*withElseRegion=*/true);
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPoint(vectorIf.thenBlock()->getTerminator());
      emit(true);
      b.setInsertionPoint(vectorIf.elseBlock()->getTerminator());
      emit(false);
    };
    auto insideIf = scf::IfOp::create(b, slot.inside, bool(outside));
    b.setInsertionPoint(insideIf.thenBlock()->getTerminator());
    bothWays([&](bool wide) { body(rowIndices, slot.indices, lane, wide); });
    if (outside) {
      b.setInsertionPoint(insideIf.elseBlock()->getTerminator());
      bothWays([&](bool wide) { outside(rowIndices, lane, wide); });
    }
  }

  /// `body(first element)` for chunks begin + start, + step, ... < end.
  void forEachChunk(Value start, Value begin, Value end, int64_t step,
                    function_ref<void(Value first)> body) {
    auto loop = scf::ForOp::create(b, arith::AddIOp::create(b, begin, start),
                                   end, idx(step));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    body(arith::MulIOp::create(b, loop.getInductionVar(), idx(chunkWidth)));
  }

  Value staticScale(Value scales, Value head) {
    return memref::LoadOp::create(b, scales,
                                  ValueRange{params.perHead ? head : idx(0)});
  }

  SmallVector<Value> widenAll(ArrayRef<Value> values) {
    SmallVector<Value> wide;
    for (Value value : values)
      wide.push_back(widen(value));
    return wide;
  }

  void emitInt8Append(const Chunks &chunks, const KvRowMapping &mapping,
                      Value input, Value codes, Value scales, ValueRange row,
                      ValueRange slot, Value lane) {
    Value run = arith::DivUIOp::create(b, lane, idx(mapping.lanesPerGroup));
    Value member = arith::RemUIOp::create(b, lane, idx(mapping.lanesPerGroup));
    auto trips = scf::ForOp::create(b, idx(0), idx(mapping.trips), idx(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(trips.getBody()->getTerminator());
    Value group =
        arith::AddIOp::create(b,
                              arith::MulIOp::create(b, trips.getInductionVar(),
                                                    idx(mapping.groupsPerTrip)),
                              run);
    // A group past the row (or a ragged last group's missing chunks)
    // leaves its lanes with nothing to fold: they bring +0 to the
    // shuffles, which no |x| loses to.
    Value begin = arith::MulIOp::create(b, group, idx(mapping.chunksPerGroup));
    Value end = arith::MinUIOp::create(
        b, arith::AddIOp::create(b, begin, idx(mapping.chunksPerGroup)),
        idx(mapping.chunksPerRow));
    auto fold =
        scf::ForOp::create(b, arith::AddIOp::create(b, begin, member), end,
                           idx(mapping.lanesPerGroup), ValueRange{f32(0.0f)});
    {
      OpBuilder::InsertionGuard foldGuard(b);
      b.setInsertionPointToStart(fold.getBody());
      Value first =
          arith::MulIOp::create(b, fold.getInductionVar(), idx(mapping.width));
      Value absMax = fold.getRegionIterArgs()[0];
      for (Value value : widenAll(chunks.load(*this, input, row, first)))
        absMax = absMaxStep(absMax, value);
      scf::YieldOp::create(b, ValueRange{absMax});
    }
    Value absMax =
        reduceWarp({fold.getResult(0)}, mapping.lanesPerGroup, false)[0];
    Value scale = int8GroupScale(absMax, params.int8);
    auto storeScale = scf::IfOp::create(
        b,
        andAll(
            {arith::CmpIOp::create(b, arith::CmpIPredicate::eq, member, idx(0))
                 .getResult(),
             arith::CmpIOp::create(b, arith::CmpIPredicate::ult, group,
                                   idx(mapping.groupsPerRow))
                 .getResult()}),
        /*withElseRegion=*/false);
    {
      OpBuilder::InsertionGuard storeGuard(b);
      b.setInsertionPoint(storeScale.thenBlock()->getTerminator());
      memref::StoreOp::create(b, scale, scales, at(slot, group));
    }
    forEachChunk(member, begin, end, mapping.lanesPerGroup, [&](Value first) {
      SmallVector<Value> quantized;
      for (Value value : widenAll(chunks.load(*this, input, row, first)))
        quantized.push_back(quantizeInt8(value, scale, params.int8));
      chunks.store(*this, quantized, codes, slot, first);
    });
  }

  void emitFp8Append(const Chunks &chunks, const KvRowMapping &mapping,
                     Value input, Value codes, Value scales, ValueRange row,
                     ValueRange slot, Value lane) {
    Value scale = staticScale(scales, row[1]);
    // One reciprocal per row instead of a division per element.
    lowbit::PreparedDivisor divisor = fp8Divisor(scale);
    forEachChunk(lane, idx(0), idx(mapping.chunksPerRow), kWarpSize,
                 [&](Value first) {
                   SmallVector<Value> values =
                       widenAll(chunks.load(*this, input, row, first));
                   chunks.store(*this, encodeFp8(values, scale, divisor), codes,
                                slot, first);
                 });
  }

  kv::KvSchemeParams params;
  /// The kernel's mapping.width, for forEachChunk.
  int64_t chunkWidth = 1;
};

/// The schemes this mapping covers; KIVI takes the generic mapping.
bool coveredScheme(const kv::KvSchemeParams &params) {
  return params.scheme == kv::KvScheme::Int8Groups ||
         params.scheme == kv::KvScheme::Fp8E4M3 ||
         params.scheme == kv::KvScheme::Fp8E5M2;
}

void emitKvOp(KvRowEmitter &emitter, ld::KvAppendOp op) {
  emitter.emitAppend(op.getInput(), op.getCodes(), op.getScales(),
                     op.getPositions(), op.getBlockTable());
}
void emitKvOp(KvRowEmitter &emitter, ld::KvDequantizeOp op) {
  emitter.emitDequantize(op.getCodes(), op.getScales(), op.getPositions(),
                         op.getOutput(), op.getBlockTable());
}
/// The values' buffer: the append's input, dequantize's output.
Value valuesOf(ld::KvAppendOp op) { return op.getInput(); }
Value valuesOf(ld::KvDequantizeOp op) { return op.getOutput(); }

/// kv_append / kv_dequantize (`KvOp`) -> one gpu.launch.
template <typename KvOp> struct KvOpToGpu : OpRewritePattern<KvOp> {
  KvOpToGpu(MLIRContext *context, int64_t threadsPerBlock)
      : OpRewritePattern<KvOp>(context), threadsPerBlock(threadsPerBlock) {}

  LogicalResult matchAndRewrite(KvOp op,
                                PatternRewriter &rewriter) const override {
    kv::KvSchemeParams params = op.getSchemeParams();
    if (!coveredScheme(params))
      return rewriter.notifyMatchFailure(op, "not an int8 or fp8 KV scheme");
    if (cast<MemRefType>(valuesOf(op).getType()).isDynamicDim(3))
      return rewriter.notifyMatchFailure(op, "head_dim is dynamic");
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    b.setInsertionPoint(op);
    KvRowEmitter emitter(b, params, threadsPerBlock);
    emitKvOp(emitter, op);
    rewriter.eraseOp(op);
    return success();
  }

  int64_t threadsPerBlock;
};

} // namespace
} // namespace lowbit::gpu_mapping

void lowbit::populateGpuKvPatterns(RewritePatternSet &patterns,
                                   int64_t threadsPerBlock) {
  patterns.add<gpu_mapping::KvOpToGpu<ld::KvAppendOp>,
               gpu_mapping::KvOpToGpu<ld::KvDequantizeOp>>(
      patterns.getContext(), threadsPerBlock);
}
