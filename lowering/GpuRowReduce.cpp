//===- GpuRowReduce.cpp - Per-token dynamic quantize, one warp per row ----===//
//
// Dynamic quantize with one scale per row (per_token, per_channel axis 0)
// in the bandwidth-shaped GPU mapping (docs/gpu.md, "Per-row scales"), in
// one launch: each row belongs to one warp (8 rows per 256-thread block).
//   pass 1  the warp's lanes stride over the row in 16-byte vectors (lane
//           l takes vectors l, l + 32, ...; a warp load is 512 consecutive
//           bytes), fold their elements, and combine with xor shuffles;
//   scale   every lane computes it (ScaleMath::pickScale), lane 0 stores
//           it and the zero point;
//   pass 2  the same vectors again (L1/L2 hits), element pairs through one
//           vector<2xf32> lowbit.encode, each vector's codes stored at once.
// Rows that are not whole 16-byte vectors from an aligned base take element
// pairs instead (two per lane per step), so the cvt stays x2.
//
//===----------------------------------------------------------------------===//

#include "lowering/GpuReductionBuilder.h"
#include "lowering/Passes.h"

#include "dialect/LowbitOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
namespace ld = lowbit::dialect;

namespace lowbit::gpu_mapping {
namespace {

class RowReduceEmitter : public GpuReductionBuilder {
public:
  using GpuReductionBuilder::GpuReductionBuilder;

  void emitQuantizeRows(Value input, Value codes, Value scales, Value zeros) {
    Type inputType = cast<MemRefType>(input.getType()).getElementType();
    int64_t width = kVectorBytes / bytesOf(inputType);
    bool nibble = scheme.packing == lowbit::Packing::Nibble;
    bool withMinMax = usesMinMax();

    Value rows = dimOf(b, input, 0);
    Value cols = dimOf(b, input, 1);
    gpu::LaunchOp launch =
        createLaunch(arith::MulIOp::create(b, rows, idx(kWarpSize)));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(launch.getBody().front().getTerminator());

    Value thread = globalThread(launch);
    Value row = arith::DivUIOp::create(b, thread, idx(kWarpSize));
    Value lane = arith::RemUIOp::create(b, thread, idx(kWarpSize));
    Value valid =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row, rows);
    // A warp past the last row runs its loops zero times (and still takes
    // part in the shuffles, with zeros).
    Value rowCols = arith::SelectOp::create(b, valid, cols, idx(0));
    // Whole vectors need every row to start 16-byte aligned (and its codes
    // at a multiple of the vector's code bytes).
    Value fast = andAll({isAligned(input, kVectorBytes),
                         isAligned(codes, nibble ? width / 2 : width),
                         divides(width, cols)});
    Value vectorCount = arith::SelectOp::create(
        b, fast, arith::DivUIOp::create(b, rowCols, idx(width)), idx(0));
    Value rest = arith::MulIOp::create(b, vectorCount, idx(width));
    Value warpStride = idx(kWarpSize);

    // Pass 1: statistics.
    SmallVector<Value> init(withMinMax ? 3 : 1, f32(0.0f));
    auto vectorLoop = scf::ForOp::create(
        b, lane, vectorCount, warpStride, init,
        [&](OpBuilder &, Location, Value vectorIndex, ValueRange acc) {
          SmallVector<Value> next(acc);
          for (Value element : loadWidened(input, row, vectorIndex, width))
            next = accumulate(next, element, withMinMax);
          scf::YieldOp::create(b, next);
        });
    auto scalarLoop = scf::ForOp::create(
        b, arith::AddIOp::create(b, rest, lane), rowCols, warpStride,
        vectorLoop.getResults(),
        [&](OpBuilder &, Location, Value col, ValueRange acc) {
          Value value =
              widen(memref::LoadOp::create(b, input, ValueRange{row, col}));
          scf::YieldOp::create(b, accumulate(acc, value, withMinMax));
        });
    // The row's scale, stored by lane 0.
    lowbit::GroupParams params = pickLaneGroupScale(
        SmallVector<Value>(scalarLoop.getResults()), kWarpSize, Value(), {},
        valid, lane, scales, zeros, row, idx(0));

    // Pass 2: codes, a vector's worth at a time ...
    scf::ForOp::create(
        b, lane, vectorCount, warpStride, ValueRange{},
        [&](OpBuilder &, Location, Value vectorIndex, ValueRange) {
          SmallVector<Value> elements =
              loadWidened(input, row, vectorIndex, width);
          SmallVector<Value> bytes = codeBytes(elements, params, nibble);
          int64_t byteCount = bytes.size();
          Value packed = vector::FromElementsOp::create(
              b, VectorType::get({byteCount}, b.getI8Type()), bytes);
          storeVector(packed, codes,
                      ValueRange{row, arith::MulIOp::create(b, vectorIndex,
                                                            idx(byteCount))});
          scf::YieldOp::create(b);
        });
    // ... and the rest as element pairs.
    emitPairs(
        row,
        arith::AddIOp::create(b, rest, arith::MulIOp::create(b, lane, idx(2))),
        rowCols, idx(2 * kWarpSize),
        [&](Value col) {
          return widen(memref::LoadOp::create(b, input, ValueRange{row, col}));
        },
        params, codes, nibble);
  }

private:
  /// The `width` elements of 16-byte vector `vectorIndex` of `row`, as f32.
  SmallVector<Value> loadWidened(Value input, Value row, Value vectorIndex,
                                 int64_t width) {
    Type inputType = cast<MemRefType>(input.getType()).getElementType();
    Value vector = loadVector(
        VectorType::get({width}, inputType), input,
        ValueRange{row, arith::MulIOp::create(b, vectorIndex, idx(width))});
    SmallVector<Value> elements;
    for (int64_t i = 0; i < width; ++i)
      elements.push_back(widen(vector::ExtractOp::create(b, vector, i)));
    return elements;
  }
};

/// Whether each row has exactly one scale, stored as [rows, 1].
bool hasRowScales(const lowbit::ScaleSpec &scale) {
  if (scale.layout != lowbit::ScaleLayout::RowMajor)
    return false;
  return scale.granularity == lowbit::Granularity::PerToken ||
         (scale.granularity == lowbit::Granularity::PerChannel &&
          scale.axis == 0);
}

struct QuantizeRowsToGpu : OpRewritePattern<ld::QuantizeOp> {
  QuantizeRowsToGpu(MLIRContext *context, int64_t threadsPerBlock)
      : OpRewritePattern(context), threadsPerBlock(threadsPerBlock) {}

  LogicalResult matchAndRewrite(ld::QuantizeOp op,
                                PatternRewriter &rewriter) const override {
    lowbit::Scheme scheme = ld::toScheme(op.getScheme());
    if (scheme.scale.mode != lowbit::ScaleMode::Dynamic ||
        !hasRowScales(scheme.scale) || lowbit::containerBits(scheme) > 8 ||
        op.getGlobal() || op.getStaticGlobal())
      return rewriter.notifyMatchFailure(op, "not a per-row dynamic scheme");
    Value input = operandBuffer(op.getInput());
    if (!input)
      return rewriter.notifyMatchFailure(op, "input not from a memref");
    FailureOr<QuantizeDestinations> destinations =
        QuantizeDestinations::find(op);
    if (failed(destinations))
      return rewriter.notifyMatchFailure(op, "results not materialized");

    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    b.setInsertionPoint(op);
    RowReduceEmitter emitter(b, scheme, threadsPerBlock);
    emitter.emitQuantizeRows(input, destinations->codes.getDest(),
                             destinations->scales.getDest(),
                             destinations->zerosBuffer());
    destinations->eraseWith(rewriter, op);
    return success();
  }

  int64_t threadsPerBlock;
};

} // namespace
} // namespace lowbit::gpu_mapping

void lowbit::populateLowbitRowReducePatterns(RewritePatternSet &patterns,
                                             int64_t threadsPerBlock) {
  patterns.add<gpu_mapping::QuantizeRowsToGpu>(patterns.getContext(),
                                               threadsPerBlock);
}
