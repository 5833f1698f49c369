//===- GpuMatmulGemv.cpp - The quantized-weight matmul on CUDA cores ------===//
//
// One gpu.launch per row bucket (docs/matmul-gpu.md, "GEMV"), M picking
// the one whose grid is not empty:
//
//   blocks of 8 warps; warp w of block b owns output columns n = C (8 b +
//   w) + j, j < C (C = 2 for the buckets 1 and 2-4, 1 for 5-16);
//   for each pass over `bucket` rows of X (one pass for M <= bucket):
//     lane s (slice s): p[j, r] = +0; for chunk i = s, s + 32, ...: for k
//       of the chunk ascending: w[j] = the dequantized weight, rounded to
//       X's dtype; p[j, r] = fma(x[r, k], w[j], p[j, r]);
//     the lanes' p go to shared memory; lane j bucket + r adds p[j, r] of
//     slices 0..31 from +0 in slice order, adds bias[n], rounds to Y's
//     dtype and stores.
//
// When the codes and X rows are 16-byte aligned, a lane's whole chunks run
// in a loop of 16-byte loads only (codes and X); the chunk K cuts, and
// every chunk of unaligned buffers, walk their elements one by one.
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
/// The row buckets, one kernel each: the kernel of bucket B serves the M
/// above the previous bucket and up to B, so M = 1 runs one fma per weight
/// and holds one partial, not sixteen. The last one also serves M past it
/// (an f32 X at every M), in passes of B rows.
inline constexpr std::array<int64_t, 3> kRowBuckets = {1, 4, 16};
/// Output columns a warp owns in the kernel of `bucket`: two for the small
/// buckets, so each X value loaded and widened serves two weights (at
/// M = 1 that conversion is otherwise one instruction per weight); one for
/// the 16-row bucket, whose registers hold 16 rows' partials.
constexpr int64_t columnsPerWarp(int64_t bucket) { return bucket <= 4 ? 2 : 1; }

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
    Value rowsOfX = dimOf(b, buffers.x, 0);
    int64_t previous = 0;
    for (int64_t bucket : kRowBuckets) {
      // previous < M (<= bucket unless the last), as selects of the
      // launch plan (cmp, sel) that every launcher evaluates.
      Value grid = ceilDiv(n, idx(kWarpsPerBlock * columnsPerWarp(bucket)));
      if (bucket != kRowBuckets.back())
        grid = select(arith::CmpIOp::create(b, arith::CmpIPredicate::ule,
                                            rowsOfX, idx(bucket)),
                      grid, idx(0));
      grid = select(arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, rowsOfX,
                                          idx(previous)),
                    grid, idx(0));
      if (enabled)
        grid = select(enabled, grid, idx(0));
      emitKernel(grid, bucket);
      previous = bucket;
    }
  }

private:
  /// The launch of one row bucket over `blocks` blocks.
  void emitKernel(Value blocks, int64_t bucket) {
    columns = columnsPerWarp(bucket);
    auto partialsType = kit::workgroupMemRefType(
        b.getContext(), {kWarpsPerBlock, columns * bucket, kSlices + 1},
        b.getF32Type());
    gpu::LaunchOp launch =
        launchBlocks(blocks, threadsPerBlock, TypeRange{partialsType});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(launch.getBody().front().getTerminator());
    partials = launch.getWorkgroupAttributions().front();
    Value thread = launch.getThreadIds().x;
    warp = arith::DivUIOp::create(b, thread, idx(kit::kWarpSize));
    lane = arith::RemUIOp::create(b, thread, idx(kit::kWarpSize));
    Value n = dimOf(b, buffers.output, 1);
    firstColumn =
        mul(add(mul(launch.getBlockIds().x, idx(kWarpsPerBlock)), warp),
            idx(columns));
    // A column past N (the last warp's second, for an odd N) reads row
    // N - 1 and is never stored.
    weightRows.clear();
    for (int64_t j = 0; j < columns; ++j)
      weightRows.push_back(arith::MinUIOp::create(
          b, add(firstColumn, idx(j)), arith::SubIOp::create(b, n, idx(1))));
    // A warp past N has no column: it skips everything (its lanes agree,
    // and the kernel has no block-wide barrier).
    auto inside = scf::IfOp::create(
        b, arith::CmpIOp::create(b, arith::CmpIPredicate::ult, firstColumn, n),
        false);
    b.setInsertionPoint(inside.thenBlock()->getTerminator());
    emitColumns(bucket);
  }

  /// Everything warp `warp` does for its columns.
  void emitColumns(int64_t bucket) {
    m = dimOf(b, buffers.x, 0);
    k = dimOf(b, buffers.x, 1);
    numChunks = ceilDiv(k, idx(kChunk));
    if (hasGlobal())
      global = loadScalar(buffers.global);
    columnParams.clear();
    if (!perGroup)
      for (int64_t j = 0; j < columns; ++j)
        columnParams.push_back(paramsAt(j, idx(0)));
    // 16-byte loads need 16-byte aligned bases and row strides: the codes'
    // (a row's bytes) and X's (K elements).
    int64_t xBytes = gpu_mapping::bytesOf(inputType());
    vectorLoads = andAll({isAligned(buffers.codes, kVectorBytes),
                          divides(kVectorBytes, dimOf(b, buffers.codes, 1)),
                          isAligned(buffers.x, kVectorBytes),
                          divides(kVectorBytes / xBytes, k)});

    auto passes = scf::ForOp::create(b, idx(0), m, idx(bucket));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(passes.getBody()->getTerminator());
    Value rowBase = passes.getInductionVar();
    Value rows = arith::MinUIOp::create(b, arith::SubIOp::create(b, m, rowBase),
                                        idx(bucket));
    // sums[j * bucket + r]: column j, row r.
    SmallVector<Value> sums = slicePartials(rowBase, bucket);
    for (auto [position, sum] : llvm::enumerate(sums))
      memref::StoreOp::create(b, sum, partials,
                              ValueRange{warp, idx(int64_t(position)), lane});
    warpSync();
    // Lane j * bucket + r adds row r of column j's slice partials in slice
    // order, for r < rows and a column inside N.
    Value ownColumn =
        add(firstColumn, arith::DivUIOp::create(b, lane, idx(bucket)));
    Value ownRow = arith::RemUIOp::create(b, lane, idx(bucket));
    auto summing = scf::IfOp::create(
        b,
        andAll(
            {arith::CmpIOp::create(b, arith::CmpIPredicate::ult, lane,
                                   idx(columns * bucket)),
             arith::CmpIOp::create(b, arith::CmpIPredicate::ult, ownRow, rows),
             arith::CmpIOp::create(b, arith::CmpIPredicate::ult, ownColumn,
                                   dimOf(b, buffers.output, 1))}),
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
      Value acc = addBias(slices.getResult(0), ownColumn);
      memref::StoreOp::create(b, roundOutput(acc), buffers.output,
                              ValueRange{add(rowBase, ownRow), ownColumn});
    }
    // The next pass overwrites the partials.
    warpSync();
  }

  /// This lane's slice: p[j * count + r] for each column j and `count`
  /// rows from rowBase (rows past M read row M - 1, and their partials are
  /// never summed). With vector
  /// loads, the whole chunks in one loop, then the chunk K cuts when it is
  /// this lane's (the last chunk of K, so the last of the lane's); without,
  /// every chunk element by element. Either way the chunks ascend.
  SmallVector<Value> slicePartials(Value rowBase, int64_t count) {
    Value lastRow = arith::SubIOp::create(b, m, idx(1));
    xRows.clear();
    for (int64_t r = 0; r < count; ++r)
      xRows.push_back(arith::MinUIOp::create(b, add(rowBase, idx(r)), lastRow));
    SmallVector<Value> zeros(columns * count, f32(0.0f));
    SmallVector<Type> types(columns * count, b.getF32Type());
    auto paths = scf::IfOp::create(b, types, vectorLoads, true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(paths.thenBlock());
    {
      Value wholeChunks = arith::DivUIOp::create(b, k, idx(kChunk));
      auto chunks =
          scf::ForOp::create(b, lane, wholeChunks, idx(kSlices), zeros);
      {
        OpBuilder::InsertionGuard loopGuard(b);
        b.setInsertionPointToStart(chunks.getBody());
        scf::YieldOp::create(
            b, vectorChunk(chunks.getInductionVar(),
                           SmallVector<Value>(chunks.getRegionIterArgs())));
      }
      // The cut chunk, j = wholeChunks when K % 32 != 0, is lane j % 32's.
      Value cut = andAll(
          {arith::CmpIOp::create(b, arith::CmpIPredicate::ult, wholeChunks,
                                 numChunks),
           arith::CmpIOp::create(
               b, arith::CmpIPredicate::eq,
               arith::RemUIOp::create(b, wholeChunks, idx(kSlices)), lane)});
      auto tail = scf::IfOp::create(b, types, cut, true);
      b.setInsertionPointToStart(tail.thenBlock());
      scf::YieldOp::create(
          b, elementChunk(mul(wholeChunks, idx(kChunk)),
                          SmallVector<Value>(chunks.getResults())));
      b.setInsertionPointToStart(tail.elseBlock());
      scf::YieldOp::create(b, chunks.getResults());
      b.setInsertionPointAfter(tail);
      scf::YieldOp::create(b, tail.getResults());
    }
    b.setInsertionPointToStart(paths.elseBlock());
    {
      auto chunks = scf::ForOp::create(b, lane, numChunks, idx(kSlices), zeros);
      {
        OpBuilder::InsertionGuard loopGuard(b);
        b.setInsertionPointToStart(chunks.getBody());
        scf::YieldOp::create(
            b, elementChunk(mul(chunks.getInductionVar(), idx(kChunk)),
                            SmallVector<Value>(chunks.getRegionIterArgs())));
      }
      scf::YieldOp::create(b, chunks.getResults());
    }
    return SmallVector<Value>(paths.getResults());
  }

  /// A whole chunk with 16-byte loads: each column's codes (one load of
  /// nibbles, two of bytes) as 32-bit words, and each row's 32 X values
  /// (four loads of f16/bf16, eight of f32), then the elements in pairs.
  SmallVector<Value> vectorChunk(Value chunk, SmallVector<Value> sums) {
    int64_t rowCount = int64_t(xRows.size());
    int64_t codeBytes = nibble ? kChunk / 2 : kChunk;
    Value kBegin = mul(chunk, idx(kChunk));
    Value byteBegin = mul(chunk, idx(codeBytes));
    auto bytesType = VectorType::get({kVectorBytes}, b.getI8Type());
    auto wordsType = VectorType::get({kVectorBytes / 4}, b.getI32Type());
    std::vector<SmallVector<Value>> words(static_cast<size_t>(columns));
    for (int64_t j = 0; j < columns; ++j)
      for (int64_t v = 0; v < codeBytes / kVectorBytes; ++v) {
        Value loaded = loadVector(
            bytesType, buffers.codes,
            ValueRange{weightRows[j], add(byteBegin, idx(v * kVectorBytes))});
        Value asWords = vector::BitCastOp::create(b, wordsType, loaded);
        for (int64_t w = 0; w < kVectorBytes / 4; ++w)
          words[size_t(j)].push_back(vector::ExtractOp::create(b, asWords, w));
      }
    // Element i: a nibble (8 a word) or a byte (4 a word), little-endian.
    int64_t codeBits = nibble ? 4 : 8, perWord = 32 / codeBits;
    auto codeAt = [&](int64_t j, int64_t i) -> Value {
      Value word = words[size_t(j)][size_t(i / perWord)];
      int64_t shift = codeBits * (i % perWord);
      if (shift != 0)
        word = arith::ShRUIOp::create(b, word, i32(int32_t(shift)));
      if (shift + codeBits < 32)
        word = arith::AndIOp::create(b, word, i32((1 << codeBits) - 1));
      return arith::TruncIOp::create(b, b.getI8Type(), word);
    };

    Type xType = inputType();
    int64_t perLoad = kVectorBytes / gpu_mapping::bytesOf(xType);
    auto xVectorType = VectorType::get({perLoad}, xType);
    std::vector<SmallVector<Value>> xVectors(static_cast<size_t>(rowCount));
    for (int64_t r = 0; r < rowCount; ++r)
      for (int64_t v = 0; v < kChunk / perLoad; ++v)
        xVectors[size_t(r)].push_back(
            loadVector(xVectorType, buffers.x,
                       ValueRange{xRows[r], add(kBegin, idx(v * perLoad))}));
    // x[r, i] as an f32, widened once for every column.
    auto xAt = [&](int64_t r, int64_t i) -> Value {
      Value loaded = xVectors[size_t(r)][size_t(i / perLoad)];
      if (!xType.isBF16())
        return widen(vector::ExtractOp::create(b, loaded, i % perLoad));
      Value word = vector::ExtractOp::create(
          b,
          vector::BitCastOp::create(
              b, VectorType::get({perLoad / 2}, b.getI32Type()), loaded),
          (i % perLoad) / 2);
      return widenBf16Lane(word, i % 2);
    };

    // weights[j][i]: column j's weight i of the chunk, rounded to X's
    // dtype, as an f32.
    std::vector<SmallVector<Value>> weights(static_cast<size_t>(columns));
    for (int64_t j = 0; j < columns; ++j)
      weights[size_t(j)] =
          packedDequant() != PackedDequant::None
              ? packedWeights(j, words[size_t(j)], kBegin)
          : wordIntegerDecode()
              ? magicIntegerWeights(j, words[size_t(j)], kBegin)
              : pairedWeights(j, kBegin,
                              [&](int64_t i) { return codeAt(j, i); });
    for (int64_t i = 0; i < kChunk; ++i)
      for (int64_t r = 0; r < rowCount; ++r) {
        Value x = xAt(r, i);
        for (int64_t j = 0; j < columns; ++j) {
          Value &sum = sums[size_t(j * rowCount + r)];
          sum = math::FmaOp::create(b, x, weights[size_t(j)][size_t(i)], sum);
        }
      }
    return sums;
  }

  /// Where a group starts inside a chunk: chunks start at multiples of
  /// kChunk, so at element i when i % groupSize == 0 for groups dividing
  /// the chunk, only at 0 for groups the chunk divides; other sizes at
  /// every element.
  bool startsGroup(int64_t i) const {
    if (groupSize % kChunk == 0)
      return i == 0;
    return kChunk % groupSize != 0 || i % groupSize == 0;
  }

  /// A chunk's weights through ScaleMath: code pairs through one
  /// dequantizePair (the x2 decode where the chip has it), then rounded to
  /// X's dtype with one x2 cvt.
  SmallVector<Value> pairedWeights(int64_t j, Value kBegin,
                                   llvm::function_ref<Value(int64_t)> codeAt) {
    // Pairs share their parameters when a group holds both (an even group
    // size: pairs start at even k); the parameters are read again only
    // where a new group starts.
    bool pairs = !perGroup || groupSize % 2 == 0;
    GroupParams params = perGroup ? GroupParams() : columnParams[size_t(j)];
    SmallVector<Value> weights;
    for (int64_t i = 0; i < kChunk; i += pairs ? 2 : 1) {
      if (perGroup && startsGroup(i))
        params = paramsAt(j, add(kBegin, idx(i)));
      if (!pairs) {
        weights.push_back(toInputType(dequantizeValue(codeAt(i), params)));
        continue;
      }
      auto [first, second] = dequantizePair(codeAt(i), codeAt(i + 1), params);
      auto [firstWeight, secondWeight] = roundWeightPair(first, second);
      weights.append({firstWeight, secondWeight});
    }
    return weights;
  }

  /// Whether integer codes on ScaleMath's path (an f32 scale, or an X the
  /// packed path does not take) decode from the words of codes here:
  /// ScaleMath's magic decode (setMagicIntegerDecode) takes one i8 code at
  /// a time, whose extraction, sign flip and widening NVPTX spells in 16-bit
  /// ops (about four ALU instructions a code); on the word, the sign flip
  /// is one xor for four codes and each field one shift-and-mask.
  bool wordIntegerDecode() const {
    ScaleKind kind = scaleKind();
    return scheme.element.isInt() &&
           (kind == ScaleKind::Symmetric || kind == ScaleKind::Asymmetric);
  }

  /// A chunk's weights from its words of integer codes, with ScaleMath's
  /// magic decode's arithmetic (dequantizeValue): the field u (the code,
  /// its sign bit flipped for signed symmetric codes) or'ed into
  /// 0x4b000000 is the f32 2^23 + u; minus 2^23 + 2^(b-1) (or 2^23 + u of
  /// the zero point) it is c (c - z) exactly; times the scale; then
  /// rounded to X's dtype in pairs (the rounding is per element).
  SmallVector<Value> magicIntegerWeights(int64_t j, ArrayRef<Value> words,
                                         Value kBegin) {
    const Format &element = scheme.element;
    int64_t codeBits = nibble ? 4 : 8, perWord = 32 / codeBits;
    auto mask = int32_t(element.codeMask());
    bool asymmetric = scaleKind() == ScaleKind::Asymmetric;
    int32_t offset = !asymmetric && element.isSigned()
                         ? int32_t(1) << (element.bits() - 1)
                         : 0;
    uint32_t flips = 0;
    for (int64_t c = 0; c < perWord; ++c)
      flips |= uint32_t(offset) << (codeBits * c);
    auto magic = [&](Value bits) -> Value {
      return arith::BitcastOp::create(
          b, b.getF32Type(), arith::OrIOp::create(b, bits, i32(0x4b000000)));
    };
    GroupParams params = perGroup ? GroupParams() : columnParams[size_t(j)];
    Value subtrahend = f32(float(8388608 + offset));
    if (asymmetric && !perGroup)
      subtrahend = magic(params.zero);
    SmallVector<Value> decoded;
    for (int64_t q = 0; q < int64_t(words.size()); ++q) {
      Value word = words[size_t(q)];
      if (flips)
        word = arith::XOrIOp::create(b, word, i32(int32_t(flips)));
      for (int64_t e = 0; e < perWord; ++e) {
        int64_t i = q * perWord + e;
        if (perGroup && startsGroup(i)) {
          params = paramsAt(j, add(kBegin, idx(i)));
          if (asymmetric)
            subtrahend = magic(params.zero);
        }
        int64_t shift = codeBits * e;
        Value field = word;
        if (shift != 0)
          field = arith::ShRUIOp::create(b, field, i32(int32_t(shift)));
        if (shift + codeBits < 32 || mask != (1 << codeBits) - 1)
          field = arith::AndIOp::create(b, field, i32(mask));
        decoded.push_back(mulf(
            arith::SubFOp::create(b, magic(field), subtrahend), params.scale));
      }
    }
    SmallVector<Value> weights;
    for (int64_t i = 0; i < kChunk; i += 2) {
      auto [first, second] =
          roundWeightPair(decoded[size_t(i)], decoded[size_t(i + 1)]);
      weights.append({first, second});
    }
    return weights;
  }

  /// How integer codes with a half-precision scale dequantize two at a
  /// time in X's f16/bf16 (docs/matmul-gpu.md, "Dequantization in
  /// registers"), bit-exact to the order's round(f32 (c - z) s):
  ///   Multiply: f16 X and f16 scale, or bf16 X and bf16 scale: the f32
  ///     product (at most 9 + 11 bits) is exact, so mul.rn.{f16,bf16}x2 of
  ///     (c - z) and s rounds it once, as the order does;
  ///   SplitScale: bf16 X, f16 scale, 4-bit codes: s = hi + lo with hi =
  ///     bf16(s) and lo = s - hi (at most 3 bits, exact in bf16); t =
  ///     (c - z) lo is exact (|c - z| <= 15), and fma.rn.bf16x2(c - z, hi,
  ///     t) rounds (c - z) s once.
  /// None for every other scheme (the f32 path of pairedWeights).
  enum class PackedDequant { None, Multiply, SplitScale };
  PackedDequant packedDequant() const {
    Type xType = inputType();
    ScaleKind kind = scaleKind();
    if (xType.isF32() || !scheme.element.isInt() ||
        (kind != ScaleKind::Symmetric && kind != ScaleKind::Asymmetric))
      return PackedDequant::None;
    // The two codes of a 16-bit lane pair (elements e and e + 4 of a word
    // of nibbles, e and e + 2 of a word of bytes) share their group.
    int64_t pairSpan = nibble ? 8 : 4;
    if (perGroup && groupSize % kChunk != 0 &&
        (kChunk % groupSize != 0 || groupSize % pairSpan != 0))
      return PackedDequant::None;
    ScaleType scaleType = scheme.scale.type;
    if (xType.isF16())
      return scaleType == ScaleType::F16 ? PackedDequant::Multiply
                                         : PackedDequant::None;
    // bf16 holds 128 + u exactly for u < 128 only: codes of 4 bits.
    if (scheme.element.bits() > 4)
      return PackedDequant::None;
    if (scaleType == ScaleType::BF16)
      return PackedDequant::Multiply;
    return scaleType == ScaleType::F16 ? PackedDequant::SplitScale
                                       : PackedDequant::None;
  }

  /// A chunk's weights two at a time in X's dtype (packedDequant): the
  /// 16-bit lanes of (word >> shift) & 0x000f000f (nibbles; 0x00ff00ff for
  /// bytes) or'ed with the magic exponent are M + u as halves (M = 1024
  /// for f16, 128 for bf16); minus (M + z), or M + 2^(b-1) for signed
  /// codes (u = c ^ 2^(b-1)), they are c - z exactly; times the scale,
  /// rounded once; widened to f32.
  SmallVector<Value> packedWeights(int64_t j, ArrayRef<Value> words,
                                   Value kBegin) {
    PackedDequant how = packedDequant();
    Type half = inputType();
    auto pairType = VectorType::get({2}, half);
    const Format &element = scheme.element;
    int64_t codeBits = nibble ? 4 : 8, perWord = 32 / codeBits,
            lanePairs = perWord / 2;
    uint32_t magic = half.isF16() ? 0x6400 : 0x4300;
    float magicValue = half.isF16() ? 1024.0f : 128.0f;
    uint32_t fieldMask = nibble ? 0x000F000F : 0x00FF00FF;
    int32_t signBit =
        element.isSigned() ? int32_t(1) << (element.bits() - 1) : 0;
    uint32_t signFlips = 0;
    for (int64_t c = 0; c < perWord && signBit; ++c)
      signFlips |= uint32_t(signBit) << (codeBits * c);
    auto splat = [&](Value scalar) -> Value {
      return vector::BroadcastOp::create(b, pairType, scalar);
    };
    auto asPair = [&](Value bits) -> Value {
      Value one = vector::FromElementsOp::create(
          b, VectorType::get({1}, b.getI32Type()), ValueRange{bits});
      return vector::BitCastOp::create(b, pairType, one);
    };
    // Per group: M + z (or the signed offset) and the scale as halves.
    Value offsetPair, scalePair, scaleLow;
    auto prepare = [&](const GroupParams &params) {
      if (scaleKind() == ScaleKind::Asymmetric) {
        Value biased =
            arith::OrIOp::create(b, params.zero, i32(int32_t(magic)));
        offsetPair = asPair(arith::MulIOp::create(b, biased, i32(0x10001)));
      } else {
        offsetPair = arith::ConstantOp::create(
            b,
            DenseElementsAttr::get(
                pairType, b.getFloatAttr(half, magicValue + float(signBit))));
      }
      // The decoded scale is the stored half widened: truncf is exact.
      Value scale = arith::TruncFOp::create(b, half, params.scale);
      if (how == PackedDequant::Multiply) {
        scalePair = splat(scale);
        return;
      }
      Value high = arith::TruncFOp::create(b, b.getBF16Type(), params.scale);
      Value low = arith::SubFOp::create(b, params.scale, widen(high));
      scalePair = splat(high);
      scaleLow = splat(arith::TruncFOp::create(b, b.getBF16Type(), low));
    };
    if (!perGroup)
      prepare(columnParams[size_t(j)]);
    SmallVector<Value> weights(kChunk);
    for (int64_t q = 0; q < int64_t(words.size()); ++q) {
      int64_t first = q * perWord;
      if (perGroup && startsGroup(first))
        prepare(paramsAt(j, add(kBegin, idx(first))));
      Value word = words[size_t(q)];
      if (signFlips)
        word = arith::XOrIOp::create(b, word, i32(int32_t(signFlips)));
      for (int64_t e = 0; e < lanePairs; ++e) {
        Value lanes = word;
        if (e != 0)
          lanes = arith::ShRUIOp::create(b, lanes, i32(int32_t(codeBits * e)));
        lanes = arith::OrIOp::create(
            b, arith::AndIOp::create(b, lanes, i32(int32_t(fieldMask))),
            i32(int32_t(magic * 0x10001u)));
        Value difference = arith::SubFOp::create(b, asPair(lanes), offsetPair);
        Value weight =
            how == PackedDequant::Multiply
                ? arith::MulFOp::create(b, difference, scalePair).getResult()
                : math::FmaOp::create(
                      b, difference, scalePair,
                      arith::MulFOp::create(b, difference, scaleLow))
                      .getResult();
        auto [low, high] = widenPair(weight);
        weights[size_t(first + e)] = low;
        weights[size_t(first + e + lanePairs)] = high;
      }
    }
    return weights;
  }

  /// Two weights rounded to X's dtype and widened back (exact), with one
  /// vector<2> truncf: the x2 cvt (cvt.rn.bf16x2.f32 / .f16x2.f32), the
  /// same RNE and canonical NaN as two scalar ones.
  std::pair<Value, Value> roundWeightPair(Value first, Value second) {
    Type xType = inputType();
    if (xType.isF32())
      return {first, second};
    Value wide = vector::FromElementsOp::create(
        b, VectorType::get({2}, b.getF32Type()), ValueRange{first, second});
    Value rounded =
        arith::TruncFOp::create(b, VectorType::get({2}, xType), wide);
    return widenPair(rounded);
  }

  /// The two f32 of a vector<2> of f16/bf16, exactly. A bf16 is the high
  /// half of its f32, so lane 0 is the 32-bit word shifted left by 16 and
  /// lane 1 the word with its low half cleared: one integer op each, where
  /// the extract and cvt.f32.bf16 of an extf take two for lane 1.
  std::pair<Value, Value> widenPair(Value pair) {
    Type half = cast<VectorType>(pair.getType()).getElementType();
    if (!half.isBF16()) {
      Value wide =
          arith::ExtFOp::create(b, VectorType::get({2}, b.getF32Type()), pair);
      return {vector::ExtractOp::create(b, wide, 0),
              vector::ExtractOp::create(b, wide, 1)};
    }
    Value word = vector::ExtractOp::create(
        b,
        vector::BitCastOp::create(b, VectorType::get({1}, b.getI32Type()),
                                  pair),
        0);
    return {widenBf16Lane(word, 0), widenBf16Lane(word, 1)};
  }
  /// Lane `lane` (0: bits 0-15, 1: bits 16-31) of a word of two bf16 as
  /// its f32.
  Value widenBf16Lane(Value word, int64_t lane) {
    Value bits = lane == 0
                     ? arith::ShLIOp::create(b, word, i32(16)).getResult()
                     : arith::AndIOp::create(b, word, i32(int32_t(0xFFFF0000u)))
                           .getResult();
    return arith::BitcastOp::create(b, b.getF32Type(), bits);
  }

  /// The elements of [kBegin, min(kBegin + kChunk, K)) one at a time, each
  /// code byte and X value loaded alone (any alignment).
  SmallVector<Value> elementChunk(Value kBegin, SmallVector<Value> sums) {
    int64_t rowCount = int64_t(xRows.size());
    Value end = arith::MinUIOp::create(b, add(kBegin, idx(kChunk)), k);
    auto elements = scf::ForOp::create(b, kBegin, end, idx(1), sums);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(elements.getBody());
    Value at = elements.getInductionVar();
    sums.assign(elements.getRegionIterArgs().begin(),
                elements.getRegionIterArgs().end());
    SmallVector<Value> weights;
    for (int64_t j = 0; j < columns; ++j) {
      Value code;
      if (nibble) {
        Value byte = memref::LoadOp::create(
            b, buffers.codes,
            ValueRange{weightRows[j], arith::DivUIOp::create(b, at, idx(2))});
        Value shift = arith::MulIOp::create(
            b,
            arith::IndexCastUIOp::create(b, b.getI8Type(),
                                         arith::RemUIOp::create(b, at, idx(2))),
            i8(4));
        code = arith::AndIOp::create(b, arith::ShRUIOp::create(b, byte, shift),
                                     i8(0xF));
      } else {
        code = memref::LoadOp::create(b, buffers.codes,
                                      ValueRange{weightRows[j], at});
      }
      GroupParams params = perGroup ? paramsAt(j, at) : columnParams[j];
      weights.push_back(toInputType(dequantizeValue(code, params)));
    }
    for (int64_t r = 0; r < rowCount; ++r) {
      Value x =
          widen(memref::LoadOp::create(b, buffers.x, ValueRange{xRows[r], at}));
      // One rounding, as the order says.
      for (int64_t j = 0; j < columns; ++j) {
        Value &sum = sums[size_t(j * rowCount + r)];
        sum = math::FmaOp::create(b, x, weights[j], sum);
      }
    }
    scf::YieldOp::create(b, sums);
    return SmallVector<Value>(elements.getResults());
  }

  /// The parameters of weight (weightRows[j], at), with the global scale.
  GroupParams paramsAt(int64_t j, Value at) {
    GroupParams params = loadWeightParams(weightRows[j], at);
    params.global = global;
    return params;
  }

  bool nibble;
  /// Whether the parameters change along K, every `groupSize` elements
  /// (groups along K, blocks).
  bool perGroup;
  int64_t groupSize;
  // Set while emitting a kernel's body: the warp's output columns
  // firstColumn + j (weightRows[j] the row of W each reads), j < columns.
  int64_t columns = 1;
  Value partials, warp, lane, firstColumn, m, k, numChunks, global, vectorLoads;
  SmallVector<Value> weightRows, xRows;
  SmallVector<GroupParams> columnParams;
};

} // namespace

bool gemvCoversScheme(const Scheme &scheme) {
  const ScaleSpec &scale = scheme.scale;
  if (containerBits(scheme) > 8)
    return false;
  // The 128x4 tile layout of NVFP4/MX scales: groups along K
  // (loadWeightParams).
  if (scale.layout == ScaleLayout::Swizzle128x4)
    return scale.granularity == Granularity::Group && scale.axis == 1;
  if (scale.layout != ScaleLayout::RowMajor)
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
