//===- GpuMatmulGemv.cpp - The quantized-weight matmul on CUDA cores ------===//
//
// One gpu.launch (docs/matmul-gpu.md, "GEMV"):
//
//   blocks of 8 warps; warp w of block b owns output column n = 8 b + w;
//   for each pass over 16 rows of X (one pass for M <= 16):
//     lane s (slice s): p[r] = +0; for chunk j = s, s + 32, ...: for k of
//       the chunk ascending: w = the dequantized weight (ScaleMath, then
//       rounded to X's dtype), p[r] = fma(x[r, k], w, p[r]) for each row;
//     the lanes' p go to shared memory; lane r adds p[0..31] of row r from
//     +0 in slice order, adds bias[n], rounds to Y's dtype and stores.
//
// A whole chunk's codes are one or two 16-byte loads when the codes rows
// are 16-byte aligned; a chunk cut by K walks its elements one by one.
//
//===----------------------------------------------------------------------===//

#include "lowering/GpuMatmulGemv.h"

#include "lowering/GpuKernelBuilder.h"
#include "matmul/MatmulOrder.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <array>

using namespace mlir;

namespace lowbit {

namespace {

using kit::dimOf;
using kit::kVectorBytes;
using matmul::kChunk;
using matmul::kSlices;

static_assert(kSlices == kit::kWarpSize, "lane s of a warp owns slice s");
inline constexpr int64_t kWarpsPerBlock = 8;
/// Rows of X one pass keeps partials for (the GEMV's M range).
inline constexpr int64_t kRowsPerPass = 16;
/// Static row counts a pass is specialised for: a pass of r rows takes the
/// first that is >= r, so M = 1 does one fma per weight, not 16.
inline constexpr std::array<int64_t, 3> kRowBuckets = {1, 4, kRowsPerPass};

class GemvEmitter : public MatmulKernelBuilder {
public:
  GemvEmitter(ImplicitLocOpBuilder &builder, const Scheme &scheme,
              const MatmulBuffers &buffers)
      : MatmulKernelBuilder(builder, scheme, buffers,
                            kWarpsPerBlock * kit::kWarpSize),
        nibble(scheme.packing == Packing::Nibble),
        perGroup(scheme.scale.granularity == Granularity::Group ||
                 scheme.scale.granularity == Granularity::Block),
        groupSize(scheme.scale.granularity == Granularity::Group
                      ? scheme.scale.groupSize
                      : scheme.scale.blockCols) {
    // Integer codes by the magic number, not I2F (exact, the same bits).
    setMagicIntegerDecode(true);
  }

  void emit(Value enabled) {
    Value n = dimOf(b, buffers.output, 1);
    Value blocks = ceilDiv(n, idx(kWarpsPerBlock));
    if (enabled)
      blocks = select(enabled, blocks, idx(0));
    auto partialsType = kit::workgroupMemRefType(
        b.getContext(), {kWarpsPerBlock, kRowsPerPass, kSlices + 1},
        b.getF32Type());
    gpu::LaunchOp launch =
        launchBlocks(blocks, threadsPerBlock, TypeRange{partialsType});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(launch.getBody().front().getTerminator());
    partials = launch.getWorkgroupAttributions().front();
    Value thread = launch.getThreadIds().x;
    warp = arith::DivUIOp::create(b, thread, idx(kit::kWarpSize));
    lane = arith::RemUIOp::create(b, thread, idx(kit::kWarpSize));
    column = add(mul(launch.getBlockIds().x, idx(kWarpsPerBlock)), warp);
    // A warp past N has no column: it skips everything (its lanes agree,
    // and the kernel has no block-wide barrier).
    auto inside = scf::IfOp::create(
        b, arith::CmpIOp::create(b, arith::CmpIPredicate::ult, column, n),
        false);
    b.setInsertionPoint(inside.thenBlock()->getTerminator());
    emitColumn();
  }

private:
  /// Everything warp `warp` does for its column.
  void emitColumn() {
    m = dimOf(b, buffers.x, 0);
    k = dimOf(b, buffers.x, 1);
    numChunks = ceilDiv(k, idx(kChunk));
    if (hasGlobal())
      global = loadScalar(buffers.global);
    if (!perGroup)
      columnParams = paramsAt(idx(0));
    // 16-byte code loads need a 16-byte aligned base and row stride.
    aligned = andAll({isAligned(buffers.codes, kVectorBytes),
                      divides(kVectorBytes, dimOf(b, buffers.codes, 1))});

    auto passes = scf::ForOp::create(b, idx(0), m, idx(kRowsPerPass));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(passes.getBody()->getTerminator());
    Value rowBase = passes.getInductionVar();
    Value rows = arith::MinUIOp::create(b, arith::SubIOp::create(b, m, rowBase),
                                        idx(kRowsPerPass));
    emitBucketedPass(rowBase, rows, 0);
    warpSync();
    // Lane r < rows adds row r's slice partials in slice order.
    auto summing = scf::IfOp::create(
        b, arith::CmpIOp::create(b, arith::CmpIPredicate::ult, lane, rows),
        false);
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPoint(summing.thenBlock()->getTerminator());
      auto slices = scf::ForOp::create(b, idx(0), idx(kSlices), idx(1),
                                       ValueRange{f32(0.0f)});
      {
        OpBuilder::InsertionGuard sliceGuard(b);
        b.setInsertionPointToStart(slices.getBody());
        Value partial = memref::LoadOp::create(
            b, partials, ValueRange{warp, lane, slices.getInductionVar()});
        scf::YieldOp::create(
            b, arith::AddFOp::create(b, slices.getRegionIterArg(0), partial)
                   .getResult());
      }
      Value acc = addBias(slices.getResult(0), column);
      memref::StoreOp::create(b, roundOutput(acc), buffers.output,
                              ValueRange{add(rowBase, lane), column});
    }
    // The next pass overwrites the partials.
    warpSync();
  }

  /// The pass specialised for the smallest bucket >= rows (buckets from
  /// `first` on): its partials stored for the summing lanes.
  void emitBucketedPass(Value rowBase, Value rows, size_t first) {
    int64_t bucket = kRowBuckets[first];
    if (first + 1 == kRowBuckets.size()) {
      storePartials(chunkLoop(rowBase, bucket));
      return;
    }
    auto fits = scf::IfOp::create(
        b,
        arith::CmpIOp::create(b, arith::CmpIPredicate::ule, rows, idx(bucket)),
        true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(fits.thenBlock()->getTerminator());
    storePartials(chunkLoop(rowBase, bucket));
    b.setInsertionPoint(fits.elseBlock()->getTerminator());
    emitBucketedPass(rowBase, rows, first + 1);
  }

  void storePartials(ArrayRef<Value> sums) {
    for (auto [row, sum] : llvm::enumerate(sums))
      memref::StoreOp::create(b, sum, partials,
                              ValueRange{warp, idx(int64_t(row)), lane});
  }

  /// This lane's slice: p[r] for `count` rows from rowBase (rows past M
  /// read row M - 1, and their partials are never summed).
  SmallVector<Value> chunkLoop(Value rowBase, int64_t count) {
    Value lastRow = arith::SubIOp::create(b, m, idx(1));
    xRows.clear();
    for (int64_t r = 0; r < count; ++r)
      xRows.push_back(arith::MinUIOp::create(b, add(rowBase, idx(r)), lastRow));
    SmallVector<Value> zeros(count, f32(0.0f));
    auto chunks = scf::ForOp::create(b, lane, numChunks, idx(kSlices), zeros);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(chunks.getBody());
    Value chunk = chunks.getInductionVar();
    SmallVector<Value> sums(chunks.getRegionIterArgs());
    Value kBegin = mul(chunk, idx(kChunk));
    Value whole = arith::CmpIOp::create(b, arith::CmpIPredicate::ule,
                                        add(kBegin, idx(kChunk)), k);
    auto split = scf::IfOp::create(b, TypeRange(ValueRange(sums)), whole, true);
    b.setInsertionPointToStart(split.thenBlock());
    scf::YieldOp::create(b, wholeChunk(chunk, kBegin, sums));
    b.setInsertionPointToStart(split.elseBlock());
    scf::YieldOp::create(b, cutChunk(kBegin, sums));
    b.setInsertionPointAfter(split);
    scf::YieldOp::create(b, split.getResults());
    return SmallVector<Value>(chunks.getResults());
  }

  /// A chunk of kChunk codes: their bytes (16-byte loads when aligned),
  /// then the elements in pairs.
  SmallVector<Value> wholeChunk(Value chunk, Value kBegin,
                                SmallVector<Value> sums) {
    int64_t bytes = nibble ? kChunk / 2 : kChunk;
    int64_t vectors = bytes / kVectorBytes;
    Value byteBegin = mul(chunk, idx(bytes));
    auto vectorType = VectorType::get({kVectorBytes}, b.getI8Type());
    SmallVector<Type> loadedTypes(vectors, vectorType);
    auto loaded = scf::IfOp::create(b, loadedTypes, aligned, true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loaded.thenBlock());
      SmallVector<Value> pieces;
      for (int64_t v = 0; v < vectors; ++v)
        pieces.push_back(loadVector(
            vectorType, buffers.codes,
            ValueRange{column, add(byteBegin, idx(v * kVectorBytes))}));
      scf::YieldOp::create(b, pieces);
      b.setInsertionPointToStart(loaded.elseBlock());
      pieces.clear();
      for (int64_t v = 0; v < vectors; ++v) {
        SmallVector<Value> elements;
        for (int64_t i = 0; i < kVectorBytes; ++i)
          elements.push_back(memref::LoadOp::create(
              b, buffers.codes,
              ValueRange{column, add(byteBegin, idx(v * kVectorBytes + i))}));
        pieces.push_back(
            vector::FromElementsOp::create(b, vectorType, elements));
      }
      scf::YieldOp::create(b, pieces);
    }
    SmallVector<Value> codes;
    for (int64_t i = 0; i < bytes; ++i) {
      Value byte = vector::ExtractOp::create(
          b, loaded.getResult(i / kVectorBytes), i % kVectorBytes);
      if (!nibble) {
        codes.push_back(byte);
        continue;
      }
      codes.push_back(arith::AndIOp::create(b, byte, i8(0xF)));
      codes.push_back(arith::ShRUIOp::create(b, byte, i8(4)));
    }
    // Pairs share their parameters when a group holds both (an even group
    // size: pairs start at even k); the parameters are read again only
    // where a new group starts.
    bool pairs = !perGroup || groupSize % 2 == 0;
    GroupParams params = columnParams;
    // Chunks start at multiples of kChunk, so a group starts at element i
    // of the chunk when i % groupSize == 0 for groups dividing the chunk,
    // only at 0 for groups the chunk divides; other sizes read every time.
    auto startsGroup = [&](int64_t i) {
      if (groupSize % kChunk == 0)
        return i == 0;
      return kChunk % groupSize != 0 || i % groupSize == 0;
    };
    for (int64_t i = 0; i < kChunk; i += pairs ? 2 : 1) {
      Value at = add(kBegin, idx(i));
      if (perGroup && startsGroup(i))
        params = paramsAt(at);
      if (!pairs) {
        accumulate(sums, at, toInputType(dequantizeValue(codes[i], params)));
        continue;
      }
      auto [first, second] = dequantizePair(codes[i], codes[i + 1], params);
      Value firstWeight = toInputType(first),
            secondWeight = toInputType(second);
      for (size_t r = 0; r < sums.size(); ++r) {
        sums[r] = fmaRow(r, at, firstWeight, sums[r]);
        sums[r] = fmaRow(r, add(at, idx(1)), secondWeight, sums[r]);
      }
    }
    return sums;
  }

  /// The chunk K cuts: its elements one at a time up to K.
  SmallVector<Value> cutChunk(Value kBegin, SmallVector<Value> sums) {
    auto elements = scf::ForOp::create(b, kBegin, k, idx(1), sums);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(elements.getBody());
    Value at = elements.getInductionVar();
    Value code;
    if (nibble) {
      Value byte = memref::LoadOp::create(
          b, buffers.codes,
          ValueRange{column, arith::DivUIOp::create(b, at, idx(2))});
      Value shift = arith::MulIOp::create(
          b,
          arith::IndexCastUIOp::create(b, b.getI8Type(),
                                       arith::RemUIOp::create(b, at, idx(2))),
          i8(4));
      code = arith::AndIOp::create(b, arith::ShRUIOp::create(b, byte, shift),
                                   i8(0xF));
    } else {
      code = memref::LoadOp::create(b, buffers.codes, ValueRange{column, at});
    }
    GroupParams params = perGroup ? paramsAt(at) : columnParams;
    sums.assign(elements.getRegionIterArgs().begin(),
                elements.getRegionIterArgs().end());
    accumulate(sums, at, toInputType(dequantizeValue(code, params)));
    scf::YieldOp::create(b, sums);
    return SmallVector<Value>(elements.getResults());
  }

  void accumulate(SmallVector<Value> &sums, Value at, Value weight) {
    for (size_t r = 0; r < sums.size(); ++r)
      sums[r] = fmaRow(r, at, weight, sums[r]);
  }
  /// p = fma(x[row r, at], weight, p): one rounding, as the order says.
  Value fmaRow(size_t r, Value at, Value weight, Value sum) {
    Value x =
        widen(memref::LoadOp::create(b, buffers.x, ValueRange{xRows[r], at}));
    return math::FmaOp::create(b, x, weight, sum);
  }

  /// The parameters of weight (column, at), with the global scale.
  GroupParams paramsAt(Value at) {
    GroupParams params = loadParams(buffers.scales, buffers.zeros, column, at);
    params.global = global;
    return params;
  }

  bool nibble;
  /// Whether the parameters change along K, every `groupSize` elements
  /// (groups along K, blocks).
  bool perGroup;
  int64_t groupSize;
  // Set while emitting the kernel body.
  Value partials, warp, lane, column, m, k, numChunks, global, aligned;
  GroupParams columnParams;
  SmallVector<Value> xRows;
};

} // namespace

bool gemvCoversScheme(const Scheme &scheme) {
  const ScaleSpec &scale = scheme.scale;
  if (scale.layout != ScaleLayout::RowMajor || containerBits(scheme) > 8)
    return false;
  switch (scale.granularity) {
  case Granularity::PerTensor:
  case Granularity::PerToken:
    return true;
  case Granularity::PerChannel:
    return scale.axis == 0;
  case Granularity::Group:
    return scale.axis == 1;
  case Granularity::Block:
    return true;
  }
  return false;
}

void emitMatmulGemv(ImplicitLocOpBuilder &builder, const Scheme &scheme,
                    const MatmulBuffers &buffers, Value enabled) {
  GemvEmitter(builder, scheme, buffers).emit(enabled);
}

} // namespace lowbit
