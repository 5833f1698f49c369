//===- GpuMatmulFp4.cpp - W4A4 block-scaled FP4 matmul --------------------===//
//
// The launches (docs/matmul-gpu.md, "FP4 x FP4"):
//
//   [nvfp4 X] launch 1: X's amax through the workspace (GpuTensorReduce.h);
//     the last block stores X's global scale (ScaleMath::computeGlobal)
//     as bits into workspace word G.
//   launch 2, block b: the 64 x 128 tile of Y at (64 (b / nTiles),
//     128 (b % nTiles)); warp w its 32 x 32 part, 2 x 4 m16n8 tiles.
//     Native (sm_120a), for each 64-wide K chunk c, ascending:
//       quantize: thread u < 64 * 64 / B takes row u / (64 / B), block
//         u % (64 / B): its codes packed 8 to a word into the shared tile
//         (element 0 low), its stored scale code (ue4m3 / ue8m0) beside;
//       barrier;
//       per (m16, n8) tile: total = mma.sync m16n8k64 block_scale (A the
//         tile's words, B four bytes of W's packed codes per register,
//         scale_A / scale_B the blocks' codes packed a byte per block,
//         C = total): the emulated mma adds the chunk's blocks in K order,
//         total = fma(p, sx sw, total) each, the order's step;
//       barrier;
//     Fallback, for each 32-wide K chunk c, ascending:
//       quantize: thread u < 64 * 32 / B takes row u / (32 / B), scale
//         block u % (32 / B) of the chunk's X tile (B = 16 or 32
//         elements): amax, scale, codes by ScaleMath (the reference
//         quantizer's arithmetic), the codes' exact values as bf16 into
//         shared memory, the block's scale factor (f32) beside them;
//       barrier;
//       for the two k16 steps: A by ldmatrix.x4, B the weights' code
//         values as bf16, mma.sync m16n8k16 into p (p = +0 when the step
//         starts a scale block); when it ends one, per accumulator:
//         total = fma(p, sx * sw, total) (skipped for a block past K);
//       barrier;
//     total = total * (gamma_x * gamma_w) with a global scale (after the
//       K loop, matmul::globalsAfterKLoop);
//     Y = total (+ bias), rounded to Y's dtype, stores guarded by M and N.
//   [nvfp4 X] launch 3: one thread zeroes word G (the workspace leaves the
//     sequence all zero).
//
// Every e2m1 value is a multiple of 1/2 below 8 in magnitude: exact in
// bf16, their products multiples of 1/4 below 64, and a sum of up to 32
// of them below 2^11 and exact in f32, so p is exact in whatever order the
// tensor core adds; the one rounding per block is the fma, the order's.
// The scales are not folded into the bf16 operands: e2m1 x ue4m3 x an f32
// global has more bits than bf16 holds. In the native path, codes past K
// are 0 on both sides, so a block past K adds fma(+0, s, acc) = acc.
//
//===----------------------------------------------------------------------===//

#include "lowering/GpuMatmulFp4.h"

#include "lowering/GpuMma.h"
#include "lowering/GpuMmaLayout.h"
#include "lowering/GpuTensorReduce.h"
#include "matmul/QuantizedOrder.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
namespace ld = lowbit::dialect;

namespace lowbit {

namespace {

using kit::dimOf;
using kit::kWarpSize;

inline constexpr int64_t kWarpRows = 2, kWarpCols = 4;
inline constexpr int64_t kWarpsPerBlock = kWarpRows * kWarpCols;
inline constexpr int64_t kThreads = kWarpsPerBlock * kWarpSize;
inline constexpr int64_t kMTiles = 2, kNTiles = 4;
inline constexpr int64_t kWarpM = kMTiles * mma::kMmaM;
inline constexpr int64_t kWarpN = kNTiles * mma::kMmaN;
inline constexpr int64_t kTileM = kWarpRows * kWarpM; // 64
inline constexpr int64_t kTileN = kWarpCols * kWarpN; // 128
inline constexpr int64_t kMmaK = mma::mmaK(mma::MmaShape::M16N8K16);
/// The K chunk: one MXFP4 scale block, two NVFP4 ones.
inline constexpr int64_t kChunk = 32;
inline constexpr int64_t kStepsPerChunk = kChunk / kMmaK;
/// Tile rows padded to 40 bf16 (80 bytes): ldmatrix's 8 rows fall in
/// different banks and stay 16-byte aligned.
inline constexpr int64_t kTileStride = kChunk + 8;
inline constexpr int64_t kAccumulators =
    kMTiles * kNTiles * mma::kAccumulatorRegisters;
/// The native path's K chunk: one m16n8k64 block-scaled mma, a tile row
/// of 8 words of 8 packed e2m1 codes each.
inline constexpr int64_t kNativeChunk = mma::kM16N8K64E2M1.k; // 64
inline constexpr int64_t kCodesPerWord =
    mma::kM16N8K64E2M1.elementsPerRegister(); // 8
inline constexpr int64_t kNativeWords = kNativeChunk / kCodesPerWord;
/// The workspace word that carries X's global scale between the launches,
/// after the reduction's amax and ticket.
inline constexpr int64_t kGlobalWord =
    workspace_abi::reductionWords(/*withMinMax=*/false);

/// The scale extent along K both sides share (16 or 32), 0 when not FP4.
int64_t fp4BlockOf(const Scheme &scheme) {
  const ScaleSpec &scale = scheme.scale;
  if (scheme.element.name() != std::string_view("e2m1") ||
      scale.granularity != Granularity::Group || scale.axis != 1 ||
      scale.zeroPoint)
    return 0;
  return scale.groupSize == 16 || scale.groupSize == 32 ? scale.groupSize : 0;
}

/// A side's global factor gamma (matmul::globalFactor): g, fl(1 / g) for
/// the encode convention, or null without a global scale.
Value globalFactor(ScaleMath &math, Value global) {
  switch (math.scaleKind()) {
  case ScaleKind::GlobalDecode:
    return global;
  case ScaleKind::GlobalEncode:
    return math.divf(math.f32(1.0f), global);
  default:
    return Value();
  }
}

/// acc * G, G = gamma_x * gamma_w (matmul::quantizedAccumulate: both FP4
/// sides keep their global scales out of the K loop); `totals` unchanged
/// when neither side has one.
void applyGlobals(ScaleMath &math, SmallVectorImpl<Value> &totals, Value xGamma,
                  Value wGamma) {
  if (!xGamma && !wGamma)
    return;
  Value product = math.mulf(xGamma ? xGamma : math.f32(1.0f),
                            wGamma ? wGamma : math.f32(1.0f));
  for (Value &total : totals)
    total = math.mulf(total, product);
}

class Fp4GemmEmitter : public MatmulKernelBuilder {
public:
  Fp4GemmEmitter(ImplicitLocOpBuilder &builder, const Scheme &weights,
                 const Scheme &activations, const MatmulBuffers &buffers,
                 bool native, const QuantizedX &quantizedX = {})
      : MatmulKernelBuilder(builder, weights, buffers, kThreads),
        quantizedX(quantizedX), activation(builder, activations),
        blockK(fp4BlockOf(activations)),
        nibble(weights.packing == Packing::Nibble), native(native),
        chunkK(native ? kNativeChunk : kChunk) {}

  /// The GEMM launch; `workspace` (null without X's global) holds X's
  /// global scale at kGlobalWord.
  void emit(Value workspace) {
    Value rowsTotal = dimOf(b, buffers.x, 0);
    Value columnsTotal = dimOf(b, buffers.output, 1);
    Value columnTiles = ceilDiv(columnsTotal, idx(kTileN));
    Value blocks = mul(ceilDiv(rowsTotal, idx(kTileM)), columnTiles);
    // Fallback: X's code values as bf16 and the blocks' f32 factors;
    // native: X's codes packed 8 to a word and the blocks' stored scale
    // codes (ue4m3 / ue8m0 bytes), as the block-scaled mma takes them.
    auto tileType =
        native ? kit::workgroupMemRefType(
                     b.getContext(), {kTileM, kNativeWords}, b.getI32Type())
               : kit::workgroupMemRefType(b.getContext(), {kTileM, kTileStride},
                                          b.getBF16Type());
    auto factorType =
        kit::workgroupMemRefType(b.getContext(), {kTileM, chunkK / blockK},
                                 native ? Type(b.getI8Type()) : b.getF32Type());
    gpu::LaunchOp launch =
        launchBlocks(blocks, kThreads, TypeRange{tileType, factorType});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(launch.getBody().front().getTerminator());
    tile = launch.getWorkgroupAttributions()[0];
    factors = launch.getWorkgroupAttributions()[1];
    thread = launch.getThreadIds().x;
    Value warp = arith::DivUIOp::create(b, thread, idx(kWarpSize));
    lane = arith::RemUIOp::create(b, thread, idx(kWarpSize));
    group = arith::DivUIOp::create(b, lane, idx(4));
    threadInGroup = arith::RemUIOp::create(b, lane, idx(4));
    Value block = launch.getBlockIds().x;
    blockRow = mul(arith::DivUIOp::create(b, block, columnTiles), idx(kTileM));
    Value blockColumn =
        mul(arith::RemUIOp::create(b, block, columnTiles), idx(kTileN));
    warpRowInTile =
        mul(arith::DivUIOp::create(b, warp, idx(kWarpCols)), idx(kWarpM));
    warpColumn =
        add(blockColumn,
            mul(arith::RemUIOp::create(b, warp, idx(kWarpCols)), idx(kWarpN)));
    m = rowsTotal;
    n = columnsTotal;
    k = dimOf(b, buffers.x, 1);
    codeColumns = dimOf(b, buffers.codes, 1);
    if (buffers.global)
      weightGlobal = loadScalar(buffers.global);
    if (workspace) {
      xGlobal = arith::BitcastOp::create(
          b, b.getF32Type(),
          memref::LoadOp::create(b, workspace,
                                 ValueRange{idx(0), idx(kGlobalWord)}));
      xGlobalDivisor = activation.prepareGlobalDivisor(xGlobal);
    } else if (quantizedX.global) {
      xGlobal = loadScalar(quantizedX.global);
      xGlobalDivisor = activation.prepareGlobalDivisor(xGlobal);
    }
    emitBody();
  }

private:
  void emitBody() {
    Value numChunks = ceilDiv(k, idx(chunkK));
    auto chunks =
        scf::ForOp::create(b, idx(0), numChunks, idx(1),
                           SmallVector<Value>(kAccumulators, f32(0.0f)));
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(chunks.getBody());
      Value chunk = chunks.getInductionVar();
      quantizeTile(chunk);
      barrier();
      SmallVector<Value> total(chunks.getRegionIterArgs());
      if (native) {
        blockScaledStep(chunk, total);
      } else {
        SmallVector<Value> partial(kAccumulators, f32(0.0f));
        int64_t stepsPerBlock = blockK / kMmaK;
        for (int64_t step = 0; step < kStepsPerChunk; ++step) {
          if (step % stepsPerBlock == 0)
            partial.assign(kAccumulators, f32(0.0f));
          mmaStep(chunk, step, partial);
          if ((step + 1) % stepsPerBlock == 0)
            applyScales(chunk, step / stepsPerBlock, partial, total);
        }
      }
      // Every warp has read the tile before the next chunk overwrites it.
      barrier();
      scf::YieldOp::create(b, total);
    }
    SmallVector<Value> totals(chunks.getResults());
    applyGlobals(*this, totals, globalFactor(activation, xGlobal),
                 globalFactor(*this, weightGlobal));
    storeOutputs(totals);
  }

  /// X's scale blocks of chunk `chunk`, quantized into the tile (code
  /// values as bf16; native: the codes packed) and `factors` (each block's
  /// f32 scale factor; native: its stored scale code).
  void quantizeTile(Value chunk) {
    int64_t blocksPerRow = chunkK / blockK;
    static_assert(kTileM * kChunk / 16 <= kThreads &&
                      kTileM * kNativeChunk / 16 <= kThreads,
                  "a block per thread");
    auto active = scf::IfOp::create(
        b,
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, thread,
                              idx(kTileM * blocksPerRow)),
        false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(active.thenBlock()->getTerminator());
    Value row = arith::DivUIOp::create(b, thread, idx(blocksPerRow));
    Value blockInChunk = arith::RemUIOp::create(b, thread, idx(blocksPerRow));
    Value globalRow = add(blockRow, row);
    Value rowInside =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, globalRow, m);
    Value safeRow = arith::MinUIOp::create(b, globalRow,
                                           arith::SubIOp::create(b, m, idx(1)));
    Value lastK = arith::SubIOp::create(b, k, idx(1));
    Value tileColumn = mul(blockInChunk, idx(blockK));
    Value first = add(mul(chunk, idx(chunkK)), tileColumn);
    // Elements past M or K are 0: they leave the amax alone and encode to
    // the zero code, as the reference's block holds only X's elements.
    // Behind prologues the front kernel's codes and stored scale are read
    // instead; a block past M or K takes what the scan gives it (amax 0,
    // codes 0).
    SmallVector<Value> values, loadedCodes;
    SmallVector<Value> acc = {f32(0.0f)};
    for (int64_t e = 0; e < blockK; ++e) {
      Value at = add(first, idx(e));
      Value inside =
          andAll({rowInside,
                  arith::CmpIOp::create(b, arith::CmpIPredicate::ult, at, k)});
      Value safeAt = arith::MinUIOp::create(b, at, lastK);
      if (quantizedX.codes) {
        // Element e of a byte in bits 4 (e % 2) .. (first is even).
        Value byte = memref::LoadOp::create(
            b, quantizedX.codes,
            ValueRange{safeRow, arith::DivUIOp::create(b, safeAt, idx(2))});
        Value code = arith::AndIOp::create(
            b, e % 2 ? Value(arith::ShRUIOp::create(b, byte, i8(4))) : byte,
            i8(0xF));
        loadedCodes.push_back(select(inside, code, i8(0)));
        continue;
      }
      Value value = widen(
          memref::LoadOp::create(b, buffers.x, ValueRange{safeRow, safeAt}));
      values.push_back(select(inside, value, f32(0.0f)));
      acc = activation.accumulate(acc, values.back(), /*withMinMax=*/false);
    }
    Stats stats = activation.toStats(acc, /*withMinMax=*/false);
    Value stored = activation.pickScale(stats, xGlobal, xGlobalDivisor);
    if (quantizedX.codes) {
      Value lastBlock =
          arith::SubIOp::create(b, ceilDiv(k, idx(blockK)), idx(1));
      Value at = arith::MinUIOp::create(
          b, arith::DivUIOp::create(b, first, idx(blockK)), lastBlock);
      Value blockInside =
          andAll({rowInside, arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                                   first, k)});
      stored = select(
          blockInside,
          memref::LoadOp::create(b, quantizedX.scales, ValueRange{safeRow, at}),
          stored);
    }
    GroupParams params;
    params.scale = activation.decodeScale(stored);
    params.global = xGlobal;
    // The block's factor is its decoded scale: the global scales come
    // after the K loop (matmul::globalsAfterKLoop). The native mma takes
    // the stored code itself.
    memref::StoreOp::create(b, native ? stored : params.scale, factors,
                            ValueRange{row, blockInChunk});
    params = activation.withExactReciprocal(params);
    Value word;
    for (int64_t e = 0; e < blockK; e += 2) {
      auto [low, high] =
          quantizedX.codes
              ? std::pair<Value, Value>(loadedCodes[e], loadedCodes[e + 1])
              : activation.quantizePair(values[e], values[e + 1], params);
      Value codes[2] = {low, high};
      for (int64_t offset = 0; offset < 2; ++offset) {
        if (!native) {
          memref::StoreOp::create(
              b, narrow(codeValue(codes[offset]), b.getBF16Type()), tile,
              ValueRange{row, add(tileColumn, idx(e + offset))});
          continue;
        }
        // Element i of a word in bits 4 i .. 4 i + 3 (GpuMmaLayout.h).
        int64_t inWord = (e + offset) % kCodesPerWord;
        Value bits = arith::ShLIOp::create(
            b, arith::ExtUIOp::create(b, b.getI32Type(), codes[offset]),
            i32(int32_t(4 * inWord)));
        word = inWord == 0 ? bits : arith::OrIOp::create(b, word, bits);
        if (inWord == kCodesPerWord - 1)
          memref::StoreOp::create(
              b, word, tile,
              ValueRange{row, add(arith::DivUIOp::create(b, tileColumn,
                                                         idx(kCodesPerWord)),
                                  idx((e + offset) / kCodesPerWord))});
      }
    }
  }

  /// The native chunk: one nvvm.mma.block_scale m16n8k64 per (m16, n8)
  /// tile, C the running total (the order's acc: the emulated mma adds the
  /// chunk's blocks in K order, acc = fma(p, sx sw, acc) each).
  void blockScaledStep(Value chunk, SmallVector<Value> &total) {
    int64_t blocksPerChunk = kNativeChunk / blockK;
    // A register r: row groupID + 8 (r % 2), word threadID_in_group +
    // 4 (r / 2) of the tile row (aElement with 8 codes a register).
    static_assert(mma::aElement(mma::kM16N8K64E2M1, 5, 8) ==
                          mma::MatrixCoordinate{9, 8} &&
                      mma::aElement(mma::kM16N8K64E2M1, 2, 16) ==
                          mma::MatrixCoordinate{0, 48},
                  "A register r: row groupID + 8 (r % 2), columns 8 "
                  "threadID_in_group + 32 (r / 2) ..");
    SmallVector<SmallVector<Value, 4>, kMTiles> a;
    SmallVector<Value, kMTiles> scaleA;
    // The lane passes scale_A's row scaleARowOfLane(lane): groupID + 8
    // (lane % 2).
    Value scaleRow =
        add(group, mul(arith::RemUIOp::create(b, lane, idx(2)), idx(8)));
    for (int64_t tileM = 0; tileM < kMTiles; ++tileM) {
      Value base = add(warpRowInTile, idx(tileM * mma::kMmaM));
      SmallVector<Value, 4> registers;
      for (int64_t r = 0; r < mma::kM16N8K64E2M1.aRegisters(); ++r)
        registers.push_back(memref::LoadOp::create(
            b, tile,
            ValueRange{add(base, add(group, idx(8 * (r % 2)))),
                       add(threadInGroup, idx(4 * (r / 2)))}));
      a.push_back(registers);
      SmallVector<Value, 4> bytes;
      for (int64_t j = 0; j < blocksPerChunk; ++j)
        bytes.push_back(memref::LoadOp::create(
            b, factors, ValueRange{add(base, scaleRow), idx(j)}));
      scaleA.push_back(packBytes(bytes));
    }
    Value scaleColumns = dimOf(b, buffers.scales, 1);
    Value lastScale = arith::SubIOp::create(b, scaleColumns, idx(1));
    for (int64_t tileN = 0; tileN < kNTiles; ++tileN) {
      // B's column and scale_B's column of this lane: its groupID.
      Value column = safeColumnOf(tileN, group);
      SmallVector<Value, 2> registers = packedWeightFragment(column, chunk);
      // A block past K reads the last stored scale: its codes are zeros,
      // so it adds fma(+0, s, acc) = acc (acc is never -0).
      SmallVector<Value, 4> bytes;
      for (int64_t j = 0; j < blocksPerChunk; ++j)
        bytes.push_back(memref::LoadOp::create(
            b, buffers.scales,
            ValueRange{column,
                       arith::MinUIOp::create(
                           b, add(mul(chunk, idx(blocksPerChunk)), idx(j)),
                           lastScale)}));
      Value scaleB = packBytes(bytes);
      for (int64_t tileM = 0; tileM < kMTiles; ++tileM) {
        int64_t at = (tileM * kNTiles + tileN) * mma::kAccumulatorRegisters;
        ArrayRef<Value> c(total.data() + at, mma::kAccumulatorRegisters);
        FailureOr<SmallVector<Value, 4>> d =
            buildMmaBlockScaleF32(b, b.getLoc(), a[tileM], registers, c,
                                  scaleA[tileM], scaleB, blockK);
        assert(succeeded(d) && "m16n8k64 e2m1 operands");
        llvm::copy(*d, total.begin() + at);
      }
    }
  }

  /// i8 bytes packed into an i32, byte j in bits 8 j .. 8 j + 7.
  Value packBytes(ArrayRef<Value> bytes) {
    Value word = i32(0);
    for (auto [j, byte] : llvm::enumerate(bytes))
      word = arith::OrIOp::create(
          b, word,
          arith::ShLIOp::create(b,
                                arith::ExtUIOp::create(b, b.getI32Type(), byte),
                                i32(int32_t(8 * j))));
    return word;
  }

  /// This lane's two B registers of the native chunk `chunk` for weight row
  /// `column`: register r holds w's codes k = 64 chunk + 8
  /// threadID_in_group + 32 r .. + 7 (bElement), four bytes of the packed
  /// row (element 0 low, as stored); codes past K are 0.
  SmallVector<Value, 2> packedWeightFragment(Value column, Value chunk) {
    static_assert(mma::bElement(mma::kM16N8K64E2M1, 6, 9) ==
                      mma::MatrixCoordinate{16 + 1 + 32, 1},
                  "B register r: rows 8 threadID_in_group + 32 r ..");
    assert(nibble && "e2m1 codes are stored two to a byte");
    Value lastByte = arith::SubIOp::create(b, codeColumns, idx(1));
    SmallVector<Value, 2> registers;
    for (int64_t r = 0; r < mma::kM16N8K64E2M1.bRegisters(); ++r) {
      Value first = add(mul(chunk, idx(kNativeChunk)),
                        add(mul(threadInGroup, idx(kCodesPerWord)),
                            idx(4 * kCodesPerWord * r)));
      SmallVector<Value, 4> bytes;
      for (int64_t byteIndex = 0; byteIndex < 4; ++byteIndex) {
        Value low = add(first, idx(2 * byteIndex));
        Value byte = memref::LoadOp::create(
            b, buffers.codes,
            ValueRange{column, arith::MinUIOp::create(
                                   b, arith::DivUIOp::create(b, low, idx(2)),
                                   lastByte)});
        auto before = [&](Value position) {
          return arith::CmpIOp::create(b, arith::CmpIPredicate::ult, position,
                                       k);
        };
        byte = select(before(add(low, idx(1))), byte,
                      arith::AndIOp::create(b, byte, i8(0xF)));
        bytes.push_back(select(before(low), byte, i8(0)));
      }
      registers.push_back(packBytes(bytes));
    }
    return registers;
  }

  /// An e2m1 code's exact value (both sides share the element format).
  Value codeValue(Value code) {
    return ld::DecodeOp::create(b, b.getF32Type(), code, elementFormatAttr);
  }

  /// One k16 step: A by ldmatrix.x4 from the tile, B the weights' code
  /// values, 8 mma.sync into `partial`.
  void mmaStep(Value chunk, int64_t step, SmallVector<Value> &partial) {
    SmallVector<SmallVector<Value, 4>, kMTiles> a;
    // Lane l gives row l % 8 of matrix l / 8: matrix q is rows 8 (q % 2),
    // columns 8 (q / 2) of the 16 x 16 A tile (GpuMmaLayout.h's aElement).
    Value matrix = arith::DivUIOp::create(b, lane, idx(8));
    Value rowOffset =
        add(mul(arith::RemUIOp::create(b, matrix, idx(2)), idx(8)),
            arith::RemUIOp::create(b, lane, idx(8)));
    Value columnOffset =
        add(idx(step * kMmaK),
            mul(arith::DivUIOp::create(b, matrix, idx(2)), idx(8)));
    for (int64_t tileM = 0; tileM < kMTiles; ++tileM) {
      Value row = add(warpRowInTile, add(idx(tileM * mma::kMmaM), rowOffset));
      a.push_back(
          loadMatrices(elementPointer(tile, ValueRange{row, columnOffset},
                                      kSharedAddressSpace),
                       4, /*transpose=*/false));
    }
    Value kStep = add(mul(chunk, idx(kChunk)), idx(step * kMmaK));
    for (int64_t tileN = 0; tileN < kNTiles; ++tileN) {
      SmallVector<Value, 2> bRegisters = weightFragment(tileN, kStep);
      for (int64_t tileM = 0; tileM < kMTiles; ++tileM) {
        int64_t at = (tileM * kNTiles + tileN) * mma::kAccumulatorRegisters;
        ArrayRef<Value> c(partial.data() + at, mma::kAccumulatorRegisters);
        FailureOr<SmallVector<Value, 4>> d = buildMmaSyncF32(
            b, b.getLoc(), a[tileM], bRegisters, c, b.getBF16Type());
        assert(succeeded(d) && "bf16 m16n8k16 operands");
        llvm::copy(*d, partial.begin() + at);
      }
    }
  }

  /// This lane's B registers of n8 tile `tileN` at K offset `kStep`
  /// (bElement: register r holds w[n, k], w[n, k + 1], n the tile's
  /// column groupID, k = kStep + 2 threadID_in_group + 8 r), the codes'
  /// values; 0 past K, a column past N reads row N - 1 (never stored).
  SmallVector<Value, 2> weightFragment(int64_t tileN, Value kStep) {
    Value column = safeColumnOf(tileN, group);
    Value lastK = arith::SubIOp::create(b, k, idx(1));
    auto pairType = VectorType::get({2}, b.getBF16Type());
    Value zero =
        arith::ConstantOp::create(b, b.getFloatAttr(b.getBF16Type(), 0.0));
    SmallVector<Value, 2> registers;
    for (int64_t r = 0; r < mma::bRegisters(mma::MmaShape::M16N8K16); ++r) {
      Value at = add(kStep, add(mul(threadInGroup, idx(2)), idx(8 * r)));
      Value atNext = add(at, idx(1));
      Value firstCode, secondCode;
      if (nibble) {
        // k is even: one byte holds the pair, low nibble first.
        Value lastByte = arith::SubIOp::create(b, codeColumns, idx(1));
        Value byteAt = arith::MinUIOp::create(
            b, arith::DivUIOp::create(b, at, idx(2)), lastByte);
        Value byte = memref::LoadOp::create(b, buffers.codes,
                                            ValueRange{column, byteAt});
        firstCode = arith::AndIOp::create(b, byte, i8(0xF));
        secondCode = arith::ShRUIOp::create(b, byte, i8(4));
      } else {
        firstCode = memref::LoadOp::create(
            b, buffers.codes,
            ValueRange{column, arith::MinUIOp::create(b, at, lastK)});
        secondCode = memref::LoadOp::create(
            b, buffers.codes,
            ValueRange{column, arith::MinUIOp::create(b, atNext, lastK)});
      }
      auto inside = [&](Value position) {
        return arith::CmpIOp::create(b, arith::CmpIPredicate::ult, position, k);
      };
      Value first = select(inside(at),
                           narrow(codeValue(firstCode), b.getBF16Type()), zero);
      Value second = select(
          inside(atNext), narrow(codeValue(secondCode), b.getBF16Type()), zero);
      registers.push_back(vector::FromElementsOp::create(
          b, pairType, ValueRange{first, second}));
    }
    return registers;
  }

  /// Output column `offset` of n8 tile `tileN`, clamped to N - 1.
  Value safeColumnOf(int64_t tileN, Value offset) {
    Value column = add(warpColumn, add(idx(tileN * mma::kMmaN), offset));
    return arith::MinUIOp::create(b, column,
                                  arith::SubIOp::create(b, n, idx(1)));
  }

  /// The order's step for scale block `blockInChunk` of `chunk`: per
  /// accumulator (row, column), total = fma(p, fx * fw, total), where the
  /// block starts inside K.
  void applyScales(Value chunk, int64_t blockInChunk, ArrayRef<Value> partial,
                   SmallVector<Value> &total) {
    Value start = add(mul(chunk, idx(kChunk)), idx(blockInChunk * blockK));
    Value inside =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, start, k);
    for (int64_t tileN = 0; tileN < kNTiles; ++tileN)
      for (int64_t pair = 0; pair < 2; ++pair) {
        // Accumulator i holds column 2 threadID_in_group + i % 2.
        Value column =
            safeColumnOf(tileN, add(mul(threadInGroup, idx(2)), idx(pair)));
        // A block past K reads the last one's scale (its sum is skipped).
        GroupParams params =
            loadParams(buffers.scales, buffers.zeros, column,
                       arith::MinUIOp::create(
                           b, start, arith::SubIOp::create(b, k, idx(1))));
        Value weightFactor = params.scale;
        for (int64_t tileM = 0; tileM < kMTiles; ++tileM)
          for (int64_t half = 0; half < 2; ++half) {
            int64_t i = 2 * half + pair;
            static_assert(mma::accumulatorElement(0, 2).row == 8 &&
                              mma::accumulatorElement(0, 1).col == 1,
                          "accumulator i: row groupID + 8 (i / 2), column "
                          "2 threadID_in_group + i % 2");
            Value row = add(warpRowInTile,
                            add(idx(tileM * mma::kMmaM + 8 * half), group));
            Value xFactor = memref::LoadOp::create(
                b, factors, ValueRange{row, idx(blockInChunk)});
            Value factor = mulf(xFactor, weightFactor);
            int64_t at =
                (tileM * kNTiles + tileN) * mma::kAccumulatorRegisters + i;
            total[at] = select(
                inside, math::FmaOp::create(b, partial[at], factor, total[at]),
                total[at]);
          }
      }
  }

  /// Y from the totals: accumulator i of tile (tileM, tileN) at
  /// accumulatorElement(lane, i); + bias, rounded, stored when inside.
  void storeOutputs(ArrayRef<Value> total) {
    storeAccumulatorTiles(total, kMTiles, kNTiles, add(blockRow, warpRowInTile),
                          warpColumn, group, threadInGroup, m, n);
  }

  /// X's codes, scales and global from a front kernel (X behind
  /// prologues), or null: the tile's loads quantize X.
  QuantizedX quantizedX;
  /// The activations' arithmetic (the reference quantizer's).
  ScaleMath activation;
  int64_t blockK;
  bool nibble;
  /// The block-scaled mma path (sm_120a) rather than the bf16 fallback.
  bool native;
  int64_t chunkK;
  // Set while emitting the kernel body.
  Value tile, factors, thread, lane, group, threadInGroup, blockRow,
      warpRowInTile, warpColumn;
  Value m, n, k, codeColumns, weightGlobal, xGlobal;
  PreparedDivisor xGlobalDivisor;
};

} // namespace

std::string fp4GemmRefusal(const Scheme &weights, const Scheme &activations) {
  int64_t weightBlock = fp4BlockOf(weights);
  int64_t activationBlock = fp4BlockOf(activations);
  if (weightBlock == 0 || activationBlock == 0)
    return "the FP4 GEMM takes e2m1 codes on both sides with scales in "
           "groups of 16 or 32 along K (nvfp4, mxfp4)";
  if (weightBlock != activationBlock)
    return "the weights' scale groups (" + std::to_string(weightBlock) +
           ") and the activations' (" + std::to_string(activationBlock) +
           ") differ";
  if (activations.scale.mode != ScaleMode::Dynamic)
    return "the FP4 GEMM computes X's scales (dynamic), not static ones";
  return "";
}

std::string fp4BlockScaledMmaRefusal(const Scheme &weights,
                                     const Scheme &activations) {
  if (std::string why = fp4GemmRefusal(weights, activations); !why.empty())
    return why;
  int64_t block = fp4BlockOf(activations);
  ScaleType wanted = block == 16 ? ScaleType::UE4M3 : ScaleType::E8M0;
  if (weights.scale.type != wanted || activations.scale.type != wanted)
    return std::string("the block-scaled mma takes ") +
           (block == 16 ? "ue4m3 scales for blocks of 16 (.kind::mxf4nvf4 "
                          ".scale_vec::4X)"
                        : "ue8m0 scales for blocks of 32 (.kind::mxf4 "
                          ".scale_vec::2X)");
  return "";
}

LogicalResult emitMatmulFp4Gemm(RewriterBase &rewriter,
                                ImplicitLocOpBuilder &builder, Operation *op,
                                const Scheme &weights,
                                const Scheme &activations,
                                const MatmulBuffers &buffers,
                                bool blockScaledMma) {
  ScaleKind kind = scaleKindOf(activations);
  bool computedGlobal =
      kind == ScaleKind::GlobalDecode || kind == ScaleKind::GlobalEncode;
  Value workspace;
  if (computedGlobal) {
    workspace = gpu_mapping::emitTensorGlobalIntoWorkspace(
        rewriter, builder, op, activations, buffers.x, kGlobalWord, kThreads);
    if (!workspace)
      return failure();
  }
  bool native =
      blockScaledMma && fp4BlockScaledMmaRefusal(weights, activations).empty();
  Fp4GemmEmitter(builder, weights, activations, buffers, native)
      .emit(workspace);
  if (!workspace)
    return success();
  gpu_mapping::emitWorkspaceWordReset(builder, workspace, kGlobalWord);
  return success();
}

void emitMatmulFp4GemmOnCodes(ImplicitLocOpBuilder &builder,
                              const Scheme &weights, const Scheme &activations,
                              const MatmulBuffers &buffers, bool blockScaledMma,
                              const QuantizedX &quantizedX) {
  bool native =
      blockScaledMma && fp4BlockScaledMmaRefusal(weights, activations).empty();
  Fp4GemmEmitter(builder, weights, activations, buffers, native, quantizedX)
      .emit(Value());
}

} // namespace lowbit
