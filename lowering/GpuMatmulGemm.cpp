//===- GpuMatmulGemm.cpp - The quantized-weight matmul on tensor cores ----===//
//
// One gpu.launch (docs/matmul-gpu.md, "GEMM"):
//
//   block b: the 64 x 128 tile of Y at (64 (b / nTiles), 128 (b % nTiles));
//   warp w: its 32 x 32 part at (32 (w / 4), 32 (w % 4)), 2 x 4 m16n8
//   tiles, a slice fragment and a total fragment of 32 f32 each per lane;
//   for t = 0 .. numChunks - 1 (the order's chunks, slice-major):
//     cp.async chunk t + 1's 64 x 32 X tile into the other stage, commit;
//     wait_group 1, barrier;
//     if t starts a slice: slice = +0;
//     for the two k16 steps of the chunk: A by ldmatrix.x4, B dequantized
//       per lane (ScaleMath, rounded to X's dtype), 8 mma.sync;
//     if t ends a slice: total = total + slice;
//     barrier (the stage is overwritten two trips on);
//   Y = total (+ bias), rounded to Y's dtype, stores guarded by M and N.
//
//===----------------------------------------------------------------------===//

#include "lowering/GpuMatmulGemm.h"

#include "lowering/GpuMma.h"
#include "lowering/GpuMmaLayout.h"
#include "matmul/MatmulOrder.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace lowbit {

namespace {

using kit::dimOf;
using kit::kVectorBytes;
using kit::kWarpSize;
using matmul::kChunk;
using matmul::kSlices;

inline constexpr int64_t kWarpRows = 2, kWarpCols = 4;
inline constexpr int64_t kWarpsPerBlock = kWarpRows * kWarpCols;
/// A warp's part of the block's tile: 2 m16 x 4 n8 mma tiles.
inline constexpr int64_t kMTiles = 2, kNTiles = 4;
inline constexpr int64_t kWarpM = kMTiles * mma::kMmaM;
inline constexpr int64_t kWarpN = kNTiles * mma::kMmaN;
inline constexpr int64_t kTileM = kWarpRows * kWarpM; // 64
inline constexpr int64_t kTileN = kWarpCols * kWarpN; // 128
inline constexpr int64_t kMmaK = mma::mmaK(mma::MmaShape::M16N8K16);
static_assert(kChunk % kMmaK == 0, "a chunk is whole m16n8k16 steps");
inline constexpr int64_t kStepsPerChunk = kChunk / kMmaK;
/// X tile rows in shared memory: a chunk's 32 elements plus 8 of padding,
/// so the 8 rows one ldmatrix matrix reads fall in different banks (80
/// bytes a row, still the 16-byte alignment ldmatrix and cp.async need).
inline constexpr int64_t kTileStride = kChunk + 8;
inline constexpr int64_t kStages = 2;
inline constexpr int64_t kAccumulators =
    kMTiles * kNTiles * mma::kAccumulatorRegisters;

class GemmEmitter : public MatmulKernelBuilder {
public:
  GemmEmitter(ImplicitLocOpBuilder &builder, const Scheme &scheme,
              const MatmulBuffers &buffers)
      : MatmulKernelBuilder(builder, scheme, buffers,
                            kWarpsPerBlock * kWarpSize),
        nibble(scheme.packing == Packing::Nibble),
        // A pair (k, k + 1), k even, shares its parameters unless a group
        // of odd size may end between them.
        pairs(!(scheme.scale.granularity == Granularity::Group &&
                scheme.scale.groupSize % 2 != 0) &&
              !(scheme.scale.granularity == Granularity::Block &&
                scheme.scale.blockCols % 2 != 0)) {}

  void emit(Value enabled) {
    Value rowsTotal = dimOf(b, buffers.x, 0);
    Value columnsTotal = dimOf(b, buffers.output, 1);
    Value columnTiles = ceilDiv(columnsTotal, idx(kTileN));
    Value blocks = mul(ceilDiv(rowsTotal, idx(kTileM)), columnTiles);
    if (enabled)
      blocks = select(enabled, blocks, idx(0));
    auto tileType = kit::workgroupMemRefType(
        b.getContext(), {kStages, kTileM, kTileStride}, inputType());
    gpu::LaunchOp launch =
        launchBlocks(blocks, threadsPerBlock, TypeRange{tileType});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(launch.getBody().front().getTerminator());
    tile = launch.getWorkgroupAttributions().front();
    thread = launch.getThreadIds().x;
    Value warp = arith::DivUIOp::create(b, thread, idx(kWarpSize));
    Value lane = arith::RemUIOp::create(b, thread, idx(kWarpSize));
    group = arith::DivUIOp::create(b, lane, idx(4));
    threadInGroup = arith::RemUIOp::create(b, lane, idx(4));
    laneIndex = lane;
    Value block = launch.getBlockIds().x;
    blockRow = mul(arith::DivUIOp::create(b, block, columnTiles), idx(kTileM));
    Value blockColumn =
        mul(arith::RemUIOp::create(b, block, columnTiles), idx(kTileN));
    warpRowInTile =
        mul(arith::DivUIOp::create(b, warp, idx(kWarpCols)), idx(kWarpM));
    warpColumn =
        add(blockColumn,
            mul(arith::RemUIOp::create(b, warp, idx(kWarpCols)), idx(kWarpN)));
    emitBody();
  }

private:
  void emitBody() {
    m = dimOf(b, buffers.x, 0);
    n = dimOf(b, buffers.output, 1);
    k = dimOf(b, buffers.x, 1);
    codeColumns = dimOf(b, buffers.codes, 1);
    numChunks = ceilDiv(k, idx(kChunk));
    // numChunks = 32 q + r: slices 0 .. r - 1 hold q + 1 chunks, the rest q.
    Value q = arith::DivUIOp::create(b, numChunks, idx(kSlices));
    Value r = arith::RemUIOp::create(b, numChunks, idx(kSlices));
    longSlice = add(q, idx(1));
    shortSlice = q;
    // The chunks in the long slices; a divisor that is never 0 (with
    // q = 0 every t is in a long slice and the other quotient unused).
    longChunks = mul(r, longSlice);
    shortDivisor = arith::MaxUIOp::create(b, q, idx(1));
    longSlices = r;
    if (buffers.global)
      global = loadScalar(buffers.global);
    // 16-byte cp.async of X rows needs their every 8th element 16-byte
    // aligned: K a multiple of 8 and an aligned base.
    int64_t perCopy = kVectorBytes / bytesOfInput();
    copiesAligned =
        andAll({isAligned(buffers.x, kVectorBytes), divides(perCopy, k)});

    copyTile(idx(0), idx(0));
    commitCopies();
    SmallVector<Value> initial(2 * kAccumulators, f32(0.0f));
    auto chunks = scf::ForOp::create(b, idx(0), numChunks, idx(1), initial);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(chunks.getBody());
      Value t = chunks.getInductionVar();
      Value next = add(t, idx(1));
      auto more = scf::IfOp::create(
          b,
          arith::CmpIOp::create(b, arith::CmpIPredicate::ult, next, numChunks),
          false);
      {
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPoint(more.thenBlock()->getTerminator());
        copyTile(next, arith::RemUIOp::create(b, next, idx(kStages)));
      }
      // An empty group on the last trip keeps wait_group 1 meaning "this
      // trip's stage has landed".
      commitCopies();
      waitCopies(1);
      barrier();
      auto iterArgs = chunks.getRegionIterArgs();
      SmallVector<Value> slice(iterArgs.begin(),
                               iterArgs.begin() + kAccumulators);
      SmallVector<Value> total(iterArgs.begin() + kAccumulators,
                               iterArgs.end());
      auto [chunk, first, last] = chunkOf(t);
      Value zero = f32(0.0f);
      for (Value &value : slice)
        value = select(first, zero, value);
      Value stage = arith::RemUIOp::create(b, t, idx(kStages));
      for (int64_t step = 0; step < kStepsPerChunk; ++step)
        mmaStep(stage, chunk, step, slice);
      for (int64_t i = 0; i < kAccumulators; ++i)
        total[i] = select(last, arith::AddFOp::create(b, total[i], slice[i]),
                          total[i]);
      // Every warp has read this stage before the next trip but one
      // overwrites it.
      barrier();
      SmallVector<Value> yielded(slice);
      yielded.append(total);
      scf::YieldOp::create(b, yielded);
    }
    SmallVector<Value> total(chunks.getResults().begin() + kAccumulators,
                             chunks.getResults().end());
    storeOutputs(total);
  }

  int64_t bytesOfInput() const {
    return inputType().getIntOrFloatBitWidth() / 8;
  }

  /// Sequence index t of the slice-major walk: the chunk j = s + 32 i, and
  /// whether t is the first and the last chunk of its slice s.
  std::tuple<Value, Value, Value> chunkOf(Value t) {
    Value inLong =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, t, longChunks);
    Value shortT = arith::SubIOp::create(
        b, arith::MaxUIOp::create(b, t, longChunks), longChunks);
    Value slice = select(
        inLong, arith::DivUIOp::create(b, t, longSlice),
        add(longSlices, arith::DivUIOp::create(b, shortT, shortDivisor)));
    Value position = select(inLong, arith::RemUIOp::create(b, t, longSlice),
                            arith::RemUIOp::create(b, shortT, shortDivisor));
    Value count = select(inLong, longSlice, shortSlice);
    Value chunk = add(slice, mul(position, idx(kSlices)));
    Value first =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, position, idx(0));
    Value last = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                       add(position, idx(1)), count);
    return {chunk, first, last};
  }

  /// Issues the copy of chunk `chunkOf(t)`'s 64 x 32 X tile into `stage`:
  /// thread i copies 8 elements (16 bytes) of tile row i / 4. Elements past
  /// M or K are zeros (the order allows x = 0: w is 0 there too).
  void copyTile(Value t, Value stage) {
    Value chunk = std::get<0>(chunkOf(t));
    constexpr int64_t kPiecesPerRow = kChunk / 8;
    static_assert(kTileM * kPiecesPerRow == kWarpsPerBlock * kWarpSize,
                  "one 8-element piece of the X tile per thread");
    Value row = arith::DivUIOp::create(b, thread, idx(kPiecesPerRow));
    Value pieceColumn =
        mul(arith::RemUIOp::create(b, thread, idx(kPiecesPerRow)), idx(8));
    Value globalRow = add(blockRow, row);
    Value column = add(mul(chunk, idx(kChunk)), pieceColumn);
    Value rowInside =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, globalRow, m);
    Value safeRow = arith::MinUIOp::create(b, globalRow,
                                           arith::SubIOp::create(b, m, idx(1)));
    auto aligned = scf::IfOp::create(b, copiesAligned, true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(aligned.thenBlock()->getTerminator());
    {
      // Bytes of the piece inside X: 0 past M or K.
      Value columnInside =
          arith::CmpIOp::create(b, arith::CmpIPredicate::ult, column, k);
      Value left = arith::SubIOp::create(
          b, arith::MaxUIOp::create(b, k, column), column);
      Value bytes =
          mul(arith::MinUIOp::create(b, left, idx(8)), idx(bytesOfInput()));
      bytes = select(andAll({rowInside, columnInside}), bytes, idx(0));
      Value source = elementPointer(
          buffers.x, ValueRange{safeRow, select(columnInside, column, idx(0))},
          kGlobalAddressSpace);
      Value destination = elementPointer(
          tile, ValueRange{stage, row, pieceColumn}, kSharedAddressSpace);
      copyAsync(destination, source, kVectorBytes,
                arith::IndexCastOp::create(b, b.getI32Type(), bytes));
    }
    // Rows that are not 16-byte aligned: element loads and stores, the same
    // values (synchronous; the barrier before the stage is read orders
    // them).
    b.setInsertionPoint(aligned.elseBlock()->getTerminator());
    Value zero = arith::ConstantOp::create(b, b.getFloatAttr(inputType(), 0.0));
    Value lastColumn = arith::SubIOp::create(b, k, idx(1));
    for (int64_t e = 0; e < 8; ++e) {
      Value at = add(column, idx(e));
      Value inside =
          andAll({rowInside,
                  arith::CmpIOp::create(b, arith::CmpIPredicate::ult, at, k)});
      Value element = memref::LoadOp::create(
          b, buffers.x,
          ValueRange{safeRow, arith::MinUIOp::create(b, at, lastColumn)});
      memref::StoreOp::create(b, select(inside, element, zero), tile,
                              ValueRange{stage, row, add(pieceColumn, idx(e))});
    }
  }

  /// One k16 step of chunk `chunk` from `stage`: the warp's A fragments by
  /// ldmatrix.x4, its B fragments dequantized, 8 mma.sync into `slice`.
  void mmaStep(Value stage, Value chunk, int64_t step,
               SmallVector<Value> &slice) {
    SmallVector<SmallVector<Value, 4>, kMTiles> a;
    // Lane l gives row l % 8 of matrix l / 8: matrix q is rows 8 (q % 2),
    // columns 8 (q / 2) of the 16 x 16 A tile, so register q is A's
    // register q (GpuMmaLayout.h's aElement).
    Value matrix = arith::DivUIOp::create(b, laneIndex, idx(8));
    Value rowInMatrix = arith::RemUIOp::create(b, laneIndex, idx(8));
    Value rowOffset = add(
        mul(arith::RemUIOp::create(b, matrix, idx(2)), idx(8)), rowInMatrix);
    Value columnOffset =
        add(idx(step * kMmaK),
            mul(arith::DivUIOp::create(b, matrix, idx(2)), idx(8)));
    for (int64_t tileM = 0; tileM < kMTiles; ++tileM) {
      Value row = add(warpRowInTile, add(idx(tileM * mma::kMmaM), rowOffset));
      a.push_back(loadMatrices(
          elementPointer(tile, ValueRange{stage, row, columnOffset},
                         kSharedAddressSpace),
          4, /*transpose=*/false));
    }
    Value kStep = add(mul(chunk, idx(kChunk)), idx(step * kMmaK));
    for (int64_t tileN = 0; tileN < kNTiles; ++tileN) {
      SmallVector<Value, 2> bRegisters = weightFragment(tileN, kStep);
      for (int64_t tileM = 0; tileM < kMTiles; ++tileM) {
        int64_t at = (tileM * kNTiles + tileN) * mma::kAccumulatorRegisters;
        ArrayRef<Value> c(slice.data() + at, mma::kAccumulatorRegisters);
        FailureOr<SmallVector<Value, 4>> d = buildMmaSyncF32(
            b, b.getLoc(), a[tileM], bRegisters, c, inputType());
        assert(succeeded(d) && "f16/bf16 m16n8k16 operands");
        llvm::copy(*d, slice.begin() + at);
      }
    }
  }

  /// This lane's B registers of n8 tile `tileN` at K offset `kStep`: by
  /// bElement, register r holds w[n, k] and w[n, k + 1] with n = the
  /// tile's column groupID, k = kStep + 2 threadID_in_group + 8 r. Weights
  /// past K are 0; a column past N reads row N - 1 (its outputs are never
  /// stored).
  SmallVector<Value, 2> weightFragment(int64_t tileN, Value kStep) {
    Value column = add(warpColumn, add(idx(tileN * mma::kMmaN), group));
    Value safeColumn =
        arith::MinUIOp::create(b, column, arith::SubIOp::create(b, n, idx(1)));
    Value lastK = arith::SubIOp::create(b, k, idx(1));
    auto pairType = VectorType::get({2}, inputType());
    Value zero = arith::ConstantOp::create(b, b.getFloatAttr(inputType(), 0.0));
    SmallVector<Value, 2> registers;
    for (int64_t r = 0; r < mma::bRegisters(mma::MmaShape::M16N8K16); ++r) {
      static_assert(mma::bElement(0, 1).row == mma::bElement(0, 0).row + 1 &&
                        mma::bElement(0, 2).row == mma::bElement(0, 0).row + 8,
                    "a B register holds the pair (k, k + 1)");
      Value at = add(kStep, add(mul(threadInGroup, idx(2)), idx(8 * r)));
      Value atNext = add(at, idx(1));
      Value safeAt = arith::MinUIOp::create(b, at, lastK);
      Value safeNext = arith::MinUIOp::create(b, atNext, lastK);
      Value firstCode, secondCode;
      if (nibble) {
        // k is even: one byte holds the pair, low nibble first.
        Value byte = memref::LoadOp::create(
            b, buffers.codes,
            ValueRange{safeColumn,
                       arith::MinUIOp::create(
                           b, arith::DivUIOp::create(b, at, idx(2)),
                           arith::SubIOp::create(b, codeColumns, idx(1)))});
        firstCode = arith::AndIOp::create(b, byte, i8(0xF));
        secondCode = arith::ShRUIOp::create(b, byte, i8(4));
      } else {
        firstCode = memref::LoadOp::create(b, buffers.codes,
                                           ValueRange{safeColumn, safeAt});
        secondCode = memref::LoadOp::create(b, buffers.codes,
                                            ValueRange{safeColumn, safeNext});
      }
      GroupParams params = paramsAt(safeColumn, safeAt);
      Value first, second;
      if (pairs) {
        std::tie(first, second) = dequantizePair(firstCode, secondCode, params);
      } else {
        first = dequantizeValue(firstCode, params);
        second = dequantizeValue(secondCode, paramsAt(safeColumn, safeNext));
      }
      auto inside = [&](Value position) {
        return arith::CmpIOp::create(b, arith::CmpIPredicate::ult, position, k);
      };
      first = select(inside(at), roundWeight(first), zero);
      second = select(inside(atNext), roundWeight(second), zero);
      registers.push_back(vector::FromElementsOp::create(
          b, pairType, ValueRange{first, second}));
    }
    return registers;
  }

  /// The parameters of weight (column, at), with the global scale.
  GroupParams paramsAt(Value column, Value at) {
    GroupParams params = loadWeightParams(column, at);
    params.global = global;
    return params;
  }

  /// Y from the total fragments: element i of tile (tileM, tileN) is
  /// accumulatorElement(lane, i) of it; + bias, rounded, stored when inside.
  void storeOutputs(ArrayRef<Value> total) {
    storeAccumulatorTiles(total, kMTiles, kNTiles, add(blockRow, warpRowInTile),
                          warpColumn, group, threadInGroup, m, n);
  }

  bool nibble;
  /// Whether one parameter lookup serves both codes of a pair.
  bool pairs;
  // Set while emitting the kernel body.
  Value tile, thread, laneIndex, group, threadInGroup, blockRow, warpRowInTile,
      warpColumn;
  Value m, n, k, codeColumns, numChunks, longSlice, shortSlice, longChunks,
      shortDivisor, longSlices, global, copiesAligned;
};

} // namespace

void emitMatmulGemm(ImplicitLocOpBuilder &builder, const Scheme &scheme,
                    const MatmulBuffers &buffers, Value enabled) {
  GemmEmitter(builder, scheme, buffers).emit(enabled);
}

} // namespace lowbit
