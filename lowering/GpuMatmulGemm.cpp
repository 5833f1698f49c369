//===- GpuMatmulGemm.cpp - The quantized-weight matmul on tensor cores ----===//
//
// One gpu.launch (docs/matmul-gpu.md, "GEMM"):
//
//   block b: the 64 x 128 tile of Y at (64 (b / nTiles), 128 (b % nTiles));
//   warp w: its 32 x 32 part at (32 (w / 4), 32 (w % 4)), 2 x 4 m16n8
//   tiles, a slice fragment and a total fragment of 32 f32 each per lane;
//   for t = 0 .. numChunks - 1 (the order's chunks, slice-major):
//     cp.async chunk t + 1's 64 x 32 X tile, its 128 x 32 W codes and the
//       128 rows' group scales (and zero points) into the other stage,
//       commit;
//     wait_group 1, barrier;
//     if t starts a slice: slice = +0;
//     for the two k16 steps of the chunk: A by ldmatrix.x4, B dequantized
//       per lane from the staged codes and scales (ScaleMath, rounded to
//       X's dtype), 8 mma.sync;
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
/// Bytes of a W codes tile row in shared memory: one chunk's codes, 16
/// (nibbles) or 32 (bytes; the two 16-byte halves of rows 4 .. 7 of each
/// 8 swapped, so that the 8 rows one B fragment reads fall in different
/// banks without padding).
inline constexpr int64_t kNibbleCodeStride = kChunk / 2;
inline constexpr int64_t kByteCodeStride = kChunk;
/// Bytes of one staged window of group scales or zero points (a 4-byte
/// cp.async): the chunk's groups of a row are 1 to 8 bytes, and a sector
/// is fetched whole whatever the copy's width, so wider windows would only
/// take shared memory (docs/matmul-gpu.md, "W staged").
inline constexpr int64_t kWindowBytes = 4;
inline constexpr int64_t kAccumulators =
    kMTiles * kNTiles * mma::kAccumulatorRegisters;

/// Group parameters (scales or zero points) of a row-major [N, Kg] buffer
/// staged per chunk: the kWindowBytes windows of each of the tile's 128 rows
/// that hold the groups the chunk touches.
struct StagedGroups {
  /// The [N, Kg] buffer, its shared tile, whether its rows are
  /// kWindowBytes aligned (uniform; else element copies).
  Value buffer, tile, aligned;
  /// Elements of a window, and windows a row per chunk.
  int64_t perWindow = 0, windows = 0;
};

/// The most windows of a row that the groups of one 32-wide chunk
/// span, for groups of `groupSize` elements stored in `perWindow`
/// elements a window (the pattern repeats after groupSize perWindow
/// chunks).
int64_t windowsPerChunk(int64_t groupSize, int64_t perWindow) {
  int64_t most = 1;
  for (int64_t chunk = 0; chunk < groupSize * perWindow; ++chunk) {
    int64_t first = chunk * kChunk / groupSize;
    int64_t last = (chunk * kChunk + kChunk - 1) / groupSize;
    most = std::max(most, last / perWindow - first / perWindow + 1);
  }
  return most;
}

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
                scheme.scale.blockCols % 2 != 0)),
        // Groups along K of row-major scales change within K: staged.
        // Per-tensor, per-channel and per-token parameters are read once
        // before the K loop; blocks and the swizzled 128x4 layout per lane.
        groupsStaged(scheme.scale.granularity == Granularity::Group &&
                     scheme.scale.axis == 1 &&
                     scheme.scale.layout == ScaleLayout::RowMajor),
        paramsHoisted(scheme.scale.layout == ScaleLayout::RowMajor &&
                      (scheme.scale.granularity == Granularity::PerTensor ||
                       scheme.scale.granularity == Granularity::PerToken ||
                       (scheme.scale.granularity == Granularity::PerChannel &&
                        scheme.scale.axis == 0))) {}

  void emit(Value enabled) {
    Value rowsTotal = dimOf(b, buffers.x, 0);
    Value columnsTotal = dimOf(b, buffers.output, 1);
    Value columnTiles = ceilDiv(columnsTotal, idx(kTileN));
    Value blocks = mul(ceilDiv(rowsTotal, idx(kTileM)), columnTiles);
    if (enabled)
      blocks = select(enabled, blocks, idx(0));
    // Shared memory: the X tile, the W codes tile, and the staged scales
    // and zero points, kStages each.
    SmallVector<Type> workgroup = {
        kit::workgroupMemRefType(b.getContext(), {kStages, kTileM, kTileStride},
                                 inputType()),
        kit::workgroupMemRefType(b.getContext(),
                                 {kStages, kTileN, codeStride()},
                                 elementTypeOf(buffers.codes))};
    if (groupsStaged) {
      scales = stagedGroups(buffers.scales);
      workgroup.push_back(stagedTileType(scales));
      if (scaleKind() == ScaleKind::Asymmetric) {
        zeros = stagedGroups(buffers.zeros);
        workgroup.push_back(stagedTileType(zeros));
      }
    }
    gpu::LaunchOp launch = launchBlocks(blocks, threadsPerBlock, workgroup);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(launch.getBody().front().getTerminator());
    auto attributions = launch.getWorkgroupAttributions();
    tile = attributions[0];
    codesTile = attributions[1];
    if (scales.buffer)
      scales.tile = attributions[2];
    if (zeros.buffer)
      zeros.tile = attributions[3];
    thread = launch.getThreadIds().x;
    Value warp = arith::DivUIOp::create(b, thread, idx(kWarpSize));
    Value lane = arith::RemUIOp::create(b, thread, idx(kWarpSize));
    group = arith::DivUIOp::create(b, lane, idx(4));
    threadInGroup = arith::RemUIOp::create(b, lane, idx(4));
    laneIndex = lane;
    Value block = launch.getBlockIds().x;
    blockRow = mul(arith::DivUIOp::create(b, block, columnTiles), idx(kTileM));
    blockColumn =
        mul(arith::RemUIOp::create(b, block, columnTiles), idx(kTileN));
    warpRowInTile =
        mul(arith::DivUIOp::create(b, warp, idx(kWarpCols)), idx(kWarpM));
    warpColumnInTile =
        mul(arith::RemUIOp::create(b, warp, idx(kWarpCols)), idx(kWarpN));
    warpColumn = add(blockColumn, warpColumnInTile);
    emitBody();
  }

private:
  static Type elementTypeOf(Value buffer) {
    return cast<MemRefType>(buffer.getType()).getElementType();
  }
  int64_t codeStride() const {
    return nibble ? kNibbleCodeStride : kByteCodeStride;
  }
  /// Code bytes of one tile row per chunk.
  int64_t codeBytesPerChunk() const { return nibble ? kChunk / 2 : kChunk; }

  StagedGroups stagedGroups(Value buffer) {
    StagedGroups staged;
    staged.buffer = buffer;
    staged.perWindow =
        kWindowBytes / (elementTypeOf(buffer).getIntOrFloatBitWidth() / 8);
    staged.windows = windowsPerChunk(scheme.scale.groupSize, staged.perWindow);
    return staged;
  }
  MemRefType stagedTileType(const StagedGroups &staged) {
    return kit::workgroupMemRefType(
        b.getContext(), {kStages, kTileN, staged.windows * staged.perWindow},
        elementTypeOf(staged.buffer));
  }

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
    // aligned: K a multiple of 8 and an aligned base. Likewise the rows of
    // the codes and of the staged scales and zero points.
    int64_t perCopy = kVectorBytes / bytesOfInput();
    copiesAligned =
        andAll({isAligned(buffers.x, kVectorBytes), divides(perCopy, k)});
    codesAligned = rowsAligned(buffers.codes, kVectorBytes);
    if (scales.buffer)
      scales.aligned = rowsAligned(scales.buffer, kWindowBytes);
    if (zeros.buffer)
      zeros.aligned = rowsAligned(zeros.buffer, kWindowBytes);
    if (paramsHoisted)
      for (int64_t tileN = 0; tileN < kNTiles; ++tileN)
        hoisted.push_back(paramsAt(safeColumnOf(tileN), idx(0)));

    copyStage(idx(0), idx(0));
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
        copyStage(next, arith::RemUIOp::create(b, next, idx(kStages)));
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

  /// Whether every row of the 2-D `buffer` starts `alignment` bytes
  /// aligned: a row a multiple of `alignment` bytes and the base aligned,
  /// tested to twice that (cudaMalloc gives 256). For byte elements one
  /// test of both would be merged by LLVM into ((base | columns) & (a -
  /// 1)) == 0, which the report's address dataflow cannot decide (an
  /// unknown base or'ed with a size), so it would weigh the element copies
  /// the launch never runs.
  Value rowsAligned(Value buffer, int64_t alignment) {
    int64_t bytes = elementTypeOf(buffer).getIntOrFloatBitWidth() / 8;
    return andAll({isAligned(buffer, 2 * alignment),
                   divides(std::max<int64_t>(alignment / bytes, 1),
                           dimOf(b, buffer, 1))});
  }

  /// The tile column of byte `column` of codes tile row `row`: byte codes
  /// swap the 16-byte halves of rows 4 .. 7 of each 8 (a 32-byte stride
  /// puts rows r and r + 4 in the same banks).
  Value codesTileColumn(Value row, Value column) {
    if (nibble)
      return column;
    Value swap = mul(arith::AndIOp::create(
                         b, arith::ShRUIOp::create(b, row, idx(2)), idx(1)),
                     idx(kVectorBytes));
    return arith::XOrIOp::create(b, column, swap);
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

  /// Issues the copies of chunk `chunkOf(t)` into `stage`: its X tile, its
  /// W codes tile, and the windows of its staged scales and zero points.
  void copyStage(Value t, Value stage) {
    Value chunk = std::get<0>(chunkOf(t));
    copyTile(chunk, stage);
    copyCodes(chunk, stage);
    for (StagedGroups *staged : {&scales, &zeros})
      if (staged->buffer)
        copyGroups(*staged, chunk, stage);
  }

  /// Issues the copy of chunk `chunk`'s 64 x 32 X tile into `stage`:
  /// thread i copies 8 elements (16 bytes) of tile row i / 4. Elements past
  /// M or K are zeros (the order allows x = 0: w is 0 there too).
  void copyTile(Value chunk, Value stage) {
    constexpr int64_t kPiecesPerRow = kChunk / 8;
    static_assert(kTileM * kPiecesPerRow == kWarpsPerBlock * kWarpSize,
                  "one 8-element piece of the X tile per thread");
    Value row = arith::DivUIOp::create(b, thread, idx(kPiecesPerRow));
    Value pieceColumn =
        mul(arith::RemUIOp::create(b, thread, idx(kPiecesPerRow)), idx(8));
    copyPiece(buffers.x, m, k, copiesAligned, add(blockRow, row),
              add(mul(chunk, idx(kChunk)), pieceColumn), tile,
              ValueRange{stage, row, pieceColumn}, 8);
  }

  /// Issues the copy of chunk `chunk`'s codes for the tile's 128 rows of W
  /// into `stage`: 16 bytes a copy, one or two a row (nibbles, bytes), one
  /// copy a thread. Rows past N and bytes past the row are zeros.
  void copyCodes(Value chunk, Value stage) {
    int64_t pieces = codeBytesPerChunk() / kVectorBytes;
    int64_t copies = kTileN * pieces;
    static_assert(kTileN * kChunk / kVectorBytes <= kWarpsPerBlock * kWarpSize,
                  "at most one 16-byte piece of the codes tile per thread");
    OpBuilder::InsertionGuard guard(b);
    if (copies < kWarpsPerBlock * kWarpSize) {
      auto active =
          scf::IfOp::create(b,
                            arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                                  thread, idx(copies)),
                            false);
      b.setInsertionPoint(active.thenBlock()->getTerminator());
    }
    Value row = arith::DivUIOp::create(b, thread, idx(pieces));
    Value pieceColumn =
        mul(arith::RemUIOp::create(b, thread, idx(pieces)), idx(kVectorBytes));
    copyPiece(buffers.codes, n, codeColumns, codesAligned,
              add(blockColumn, row),
              add(mul(chunk, idx(codeBytesPerChunk())), pieceColumn), codesTile,
              ValueRange{stage, row, codesTileColumn(row, pieceColumn)},
              kVectorBytes);
  }

  /// The first element of the windows chunk `chunk` stages of a row: the
  /// window that holds the chunk's first group.
  Value firstStagedElement(const StagedGroups &staged, Value chunk) {
    Value firstGroup = arith::DivUIOp::create(b, mul(chunk, idx(kChunk)),
                                              idx(scheme.scale.groupSize));
    return mul(arith::DivUIOp::create(b, firstGroup, idx(staged.perWindow)),
               idx(staged.perWindow));
  }

  /// Issues the copies of the windows of `staged` chunk `chunk` needs for
  /// the tile's 128 rows into `stage`, one window a copy. Windows
  /// past a row's groups and rows past N are zeros.
  void copyGroups(const StagedGroups &staged, Value chunk, Value stage) {
    int64_t copies = kTileN * staged.windows;
    int64_t threads = kWarpsPerBlock * kWarpSize;
    Value first = firstStagedElement(staged, chunk);
    Value columns = dimOf(b, staged.buffer, 1);
    for (int64_t pass = 0; pass * threads < copies; ++pass) {
      OpBuilder::InsertionGuard guard(b);
      Value copy = add(thread, idx(pass * threads));
      if ((pass + 1) * threads > copies) {
        auto active = scf::IfOp::create(
            b,
            arith::CmpIOp::create(b, arith::CmpIPredicate::ult, copy,
                                  idx(copies)),
            false);
        b.setInsertionPoint(active.thenBlock()->getTerminator());
      }
      Value row = arith::DivUIOp::create(b, copy, idx(staged.windows));
      Value window = mul(arith::RemUIOp::create(b, copy, idx(staged.windows)),
                         idx(staged.perWindow));
      copyPiece(staged.buffer, n, columns, staged.aligned,
                add(blockColumn, row), add(first, window), staged.tile,
                ValueRange{stage, row, window}, staged.perWindow);
    }
  }

  /// Copies `count` elements (4, 8 or 16 bytes) of row `row`, from column
  /// `column`, of the 2-D `source` ([rows, columns]) to `destination` at
  /// `at`. Elements past the rows or columns are zeros. With `aligned`
  /// (uniform: every row aligned to the piece) one cp.async whose
  /// sourceBytes are the bytes inside, so the ragged edge is zero-filled
  /// without a branch; else element loads and shared stores of the same
  /// values (synchronous; the barrier before the stage is read orders
  /// them).
  void copyPiece(Value source, Value rows, Value columns, Value aligned,
                 Value row, Value column, Value destination, ValueRange at,
                 int64_t count) {
    Type element = elementTypeOf(source);
    int64_t bytes = element.getIntOrFloatBitWidth() / 8;
    int64_t pieceBytes = count * bytes;
    assert((pieceBytes == 4 || pieceBytes == 8 || pieceBytes == 16) &&
           "a cp.async size");
    Value rowInside =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row, rows);
    Value safeRow =
        arith::MinUIOp::create(b, row, arith::SubIOp::create(b, rows, idx(1)));
    auto branch = scf::IfOp::create(b, aligned, true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(branch.thenBlock()->getTerminator());
    {
      Value columnInside =
          arith::CmpIOp::create(b, arith::CmpIPredicate::ult, column, columns);
      Value left = arith::SubIOp::create(
          b, arith::MaxUIOp::create(b, columns, column), column);
      Value inside =
          mul(arith::MinUIOp::create(b, left, idx(count)), idx(bytes));
      inside = select(andAll({rowInside, columnInside}), inside, idx(0));
      Value from = elementPointer(
          source, ValueRange{safeRow, select(columnInside, column, idx(0))},
          kGlobalAddressSpace);
      copyAsync(elementPointer(destination, at, kSharedAddressSpace), from,
                pieceBytes,
                arith::IndexCastOp::create(b, b.getI32Type(), inside));
    }
    b.setInsertionPoint(branch.elseBlock()->getTerminator());
    TypedAttr zeroAttr = isa<FloatType>(element)
                             ? TypedAttr(b.getFloatAttr(element, 0))
                             : TypedAttr(b.getIntegerAttr(element, 0));
    Value zero = arith::ConstantOp::create(b, zeroAttr);
    Value lastColumn = arith::SubIOp::create(b, columns, idx(1));
    SmallVector<Value> target(at.begin(), at.end());
    Value base = target.back();
    for (int64_t e = 0; e < count; ++e) {
      Value position = add(column, idx(e));
      Value inside =
          andAll({rowInside, arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                                   position, columns)});
      Value value = memref::LoadOp::create(
          b, source,
          ValueRange{safeRow, arith::MinUIOp::create(b, position, lastColumn)});
      target.back() = add(base, idx(e));
      memref::StoreOp::create(b, select(inside, value, zero), destination,
                              target);
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
    for (int64_t tileN = 0; tileN < kNTiles; ++tileN) {
      SmallVector<Value, 2> bRegisters =
          weightFragment(stage, chunk, step, tileN);
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

  /// The W row (N index) of this lane's B fragments of n8 tile `tileN`,
  /// clamped to N - 1 (a column past N is never stored).
  Value safeColumnOf(int64_t tileN) {
    Value column = add(warpColumn, add(idx(tileN * mma::kMmaN), group));
    return arith::MinUIOp::create(b, column,
                                  arith::SubIOp::create(b, n, idx(1)));
  }

  /// This lane's B registers of n8 tile `tileN` at step `step` of chunk
  /// `chunk`, from `stage`: by bElement, register r holds w[n, k] and
  /// w[n, k + 1] with n = the tile's column groupID, k = 32 chunk + 16 step
  /// + 2 threadID_in_group + 8 r. Weights past K are 0; a column past N
  /// reads the staged zeros (its outputs are never stored).
  SmallVector<Value, 2> weightFragment(Value stage, Value chunk, int64_t step,
                                       int64_t tileN) {
    Value rowInTile =
        add(warpColumnInTile, add(idx(tileN * mma::kMmaN), group));
    Value safeColumn = safeColumnOf(tileN);
    Value lastK = arith::SubIOp::create(b, k, idx(1));
    Value chunkStart = mul(chunk, idx(kChunk));
    auto pairType = VectorType::get({2}, inputType());
    Value zero = arith::ConstantOp::create(b, b.getFloatAttr(inputType(), 0.0));
    SmallVector<Value, 2> registers;
    for (int64_t r = 0; r < mma::bRegisters(mma::MmaShape::M16N8K16); ++r) {
      static_assert(mma::bElement(0, 1).row == mma::bElement(0, 0).row + 1 &&
                        mma::bElement(0, 2).row == mma::bElement(0, 0).row + 8,
                    "a B register holds the pair (k, k + 1)");
      // The pair's place in the chunk, and in K.
      Value inChunk =
          add(idx(step * kMmaK + 8 * r), mul(threadInGroup, idx(2)));
      Value at = add(chunkStart, inChunk);
      Value atNext = add(at, idx(1));
      Value safeAt = arith::MinUIOp::create(b, at, lastK);
      Value safeNext = arith::MinUIOp::create(b, atNext, lastK);
      Value firstCode, secondCode;
      if (nibble) {
        // k is even: one byte holds the pair, low nibble first.
        Value byte = memref::LoadOp::create(
            b, codesTile,
            ValueRange{stage, rowInTile,
                       arith::DivUIOp::create(b, inChunk, idx(2))});
        firstCode = arith::AndIOp::create(b, byte, i8(0xF));
        secondCode = arith::ShRUIOp::create(b, byte, i8(4));
      } else {
        // k even: k and k + 1 lie in the same 16-byte half.
        Value column = codesTileColumn(rowInTile, inChunk);
        firstCode = memref::LoadOp::create(
            b, codesTile, ValueRange{stage, rowInTile, column});
        secondCode = memref::LoadOp::create(
            b, codesTile, ValueRange{stage, rowInTile, add(column, idx(1))});
      }
      auto paramsOf = [&](Value position) {
        return lookupParams(stage, chunk, tileN, rowInTile, safeColumn,
                            position);
      };
      GroupParams params = paramsOf(safeAt);
      Value first, second;
      if (pairs) {
        std::tie(first, second) = dequantizePair(firstCode, secondCode, params);
      } else {
        first = dequantizeValue(firstCode, params);
        second = dequantizeValue(secondCode, paramsOf(safeNext));
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

  /// The parameters of weight (column, at), at < K, of the lane's n8 tile
  /// `tileN` (tile row `rowInTile`): from the staged windows, read before
  /// the loop, or loaded (blocks, the swizzled layout).
  GroupParams lookupParams(Value stage, Value chunk, int64_t tileN,
                           Value rowInTile, Value column, Value at) {
    if (paramsHoisted)
      return hoisted[size_t(tileN)];
    if (!groupsStaged)
      return paramsAt(column, at);
    // The group lies in the chunk's windows: 32 chunk <= at < K.
    Value groupIndex =
        arith::DivUIOp::create(b, at, idx(scheme.scale.groupSize));
    auto stagedAt = [&](const StagedGroups &staged) -> Value {
      Value element = arith::SubIOp::create(b, groupIndex,
                                            firstStagedElement(staged, chunk));
      return memref::LoadOp::create(b, staged.tile,
                                    ValueRange{stage, rowInTile, element});
    };
    GroupParams params;
    params.scale = decodeScale(stagedAt(scales));
    if (zeros.buffer)
      params.zero = arith::ExtUIOp::create(b, b.getI32Type(), stagedAt(zeros));
    params.global = global;
    return params;
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
  /// Whether the scales (and zero points) are staged per chunk, or read
  /// once before the K loop.
  bool groupsStaged, paramsHoisted;
  StagedGroups scales, zeros;
  SmallVector<GroupParams, kNTiles> hoisted;
  // Set while emitting the kernel body.
  Value tile, codesTile, thread, laneIndex, group, threadInGroup, blockRow,
      blockColumn, warpRowInTile, warpColumnInTile, warpColumn;
  Value m, n, k, codeColumns, numChunks, longSlice, shortSlice, longChunks,
      shortDivisor, longSlices, global, copiesAligned, codesAligned;
};

} // namespace

void emitMatmulGemm(ImplicitLocOpBuilder &builder, const Scheme &scheme,
                    const MatmulBuffers &buffers, Value enabled) {
  GemmEmitter(builder, scheme, buffers).emit(enabled);
}

} // namespace lowbit
