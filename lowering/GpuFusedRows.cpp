//===- GpuFusedRows.cpp - lowbit.fused to GPU kernels, one warp per row ---===//
//
// A fused kernel's region (lowering/LowbitFusionBody.cpp) becomes one
// gpu.launch, one warp per row (8 rows per 256-thread block):
//   setup    the region's index arithmetic (tensor.dim -> memref.dim);
//   row      RMSNorm's lane partials (the generic marked
//            lowbit.lane_partials: lane i runs its k loop), and the [rows]
//            generics (the tree, the factor) in every lane, reading a
//            partial of lane i with a shuffle idx: the documented order;
//   groups   each lane takes groups g = lane, lane + 32, ... of its row:
//            the statistics of the prologue's values, the scale
//            (ScaleMath::pickScale), then the codes in element pairs.
// A prologue value is computed where it is read, by cloning the scalar
// bodies of the region's elementwise generics with an IRMapping (a
// tensor.extract becomes the element it names), so the arithmetic is the
// region's, op for op.
//
//===----------------------------------------------------------------------===//

#include "lowering/GpuFusedRows.h"
#include "lowering/GpuReductionBuilder.h"
#include "lowering/GpuTensorReduce.h"
#include "lowering/LowbitFusionBody.h"

#include "dialect/LowbitOps.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
namespace ld = lowbit::dialect;

namespace lowbit::gpu_mapping {
namespace {

bool isLanePartials(Operation *op) {
  return op && op->hasAttr(kLanePartialsAttr);
}

/// A Hadamard butterfly stage's half h (LowbitFusionBody.cpp), or 0.
int64_t hadamardHalf(Operation *op) {
  auto half =
      op ? op->getAttrOfType<IntegerAttr>(kHadamardHalfAttr) : IntegerAttr();
  return half ? half.getInt() : 0;
}

/// The generic whose body or inputs read `value` through `use`.
Operation *readingGeneric(OpOperand &use) {
  Operation *owner = use.getOwner();
  return isa<linalg::GenericOp>(owner)
             ? owner
             : owner->getParentOfType<linalg::GenericOp>();
}

/// The tensor a Hadamard stage's body extracts from.
Value stageSource(linalg::GenericOp stage) {
  Value source;
  stage.getRegion().walk(
      [&](tensor::ExtractOp extract) { source = extract.getTensor(); });
  return source;
}

/// A rotation whose blocks are wider than the per-element evaluation
/// takes: `last` is its last butterfly stage, `input` what its first
/// stage reads.
struct StagedRotation {
  linalg::GenericOp last;
  Value input;
  int64_t block = 0;
};

/// The staged rotation that ends at `op`, if `op` is the last stage of a
/// Hadamard rotation with blocks wider than kMaxGpuHadamardBlock.
std::optional<StagedRotation> stagedRotationEndingAt(Operation *op) {
  int64_t lastHalf = hadamardHalf(op);
  if (lastHalf == 0 || 2 * lastHalf <= kMaxGpuHadamardBlock)
    return std::nullopt;
  for (OpOperand &use : op->getResult(0).getUses())
    if (hadamardHalf(readingGeneric(use)) != 0)
      return std::nullopt;
  StagedRotation rotation;
  rotation.last = cast<linalg::GenericOp>(op);
  rotation.block = 2 * lastHalf;
  linalg::GenericOp stage = rotation.last;
  while (hadamardHalf(stage) != 1)
    stage = stageSource(stage).getDefiningOp<linalg::GenericOp>();
  rotation.input = stageSource(stage);
  return rotation;
}

/// Emits the kernel of one lowbit.fused region.
class FusedRowEmitter : public GpuReductionBuilder {
public:
  FusedRowEmitter(ImplicitLocOpBuilder &b, const lowbit::Scheme &scheme,
                  int64_t threadsPerBlock, Block &body,
                  ArrayRef<Value> argumentBuffers)
      : GpuReductionBuilder(b, scheme, threadsPerBlock), body(body) {
    for (auto [argument, buffer] :
         llvm::zip(body.getArguments(), argumentBuffers))
      buffers[argument] = buffer;
    inputType =
        cast<MemRefType>(argumentBuffers.front().getType()).getElementType();
    int64_t inputBytes = bytesOf(inputType);
    chunkWidth = kVectorBytes / inputBytes;
    // The input, and the operands generics read at (row or 0, column).
    auto takeVectors = [&](Value argument) {
      Value buffer = buffers.lookup(argument);
      auto type = cast<MemRefType>(buffer.getType());
      if (type.getRank() == 2 && bytesOf(type.getElementType()) == inputBytes &&
          !llvm::is_contained(vectorBuffers, buffer))
        vectorBuffers.push_back(buffer);
    };
    takeVectors(body.getArgument(0));
    body.walk([&](linalg::GenericOp generic) {
      for (OpOperand *input : generic.getDpsInputOperands()) {
        AffineMap map = generic.getMatchingIndexingMap(input);
        if (isa<BlockArgument>(input->get()) && map.getNumResults() == 2 &&
            map.getResult(1) == getAffineDimExpr(1, map.getContext()))
          takeVectors(input->get());
      }
    });
  }

  /// Launch 1 of a per-tensor statistic (per-tensor scales, nvfp4's
  /// global): the prologue's values of every row folded into amax (min,
  /// max), reduced through `workspace` (GpuTensorReduce.h); the last block
  /// calls `storeResults`.
  void emitStatsLaunch(Value final, Value workspace, bool withMinMax,
                       function_ref<void(const lowbit::Stats &)> storeResults) {
    int64_t statCount = withMinMax ? 3 : 1;
    Value rows = dimOf(b, buffers.lookup(body.getArgument(0)), 0);
    Value blocks = ceilDiv(arith::MulIOp::create(b, rows, idx(kWarpSize)),
                           idx(threadsPerBlock));
    auto launch = launchBlocks(
        blocks, threadsPerBlock,
        kit::workgroupMemRefType(b.getContext(),
                                 {threadsPerBlock / kWarpSize * statCount},
                                 b.getF32Type()));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(launch.getBody().front().getTerminator());
    Value valid = beginRow(launch, rows);
    Value bound =
        arith::SelectOp::create(b, valid, tensorDim(final, 1), idx(0));
    SmallVector<Value> init(statCount, f32(0.0f));
    auto loop = scf::ForOp::create(
        b, lane, bound, idx(kWarpSize), init,
        [&](OpBuilder &, Location, Value col, ValueRange acc) {
          scf::YieldOp::create(
              b,
              accumulate(acc, widen(elementAt(final, row, col)), withMinMax));
        });
    emitStatsIntoWorkspace(b, scheme, threadsPerBlock, launch,
                           SmallVector<Value>(loop.getResults()), workspace,
                           withMinMax, storeResults);
  }

  /// Launch 2 of a per-tensor scale: every row's codes with the stored
  /// scale, lanes taking element pairs 2 lane, 2 lane + 64, ...
  void emitPerTensorCodes(Value final, Value codes, Value scales, Value zeros,
                          Value residual, Value residualBuffer) {
    OpBuilder::InsertionGuard guard(b);
    Value valid = openRowLaunch();
    Value bound =
        arith::SelectOp::create(b, valid, tensorDim(final, 1), idx(0));
    lowbit::GroupParams params =
        withExactReciprocal(loadParams(scales, zeros, idx(0), idx(0)));
    emitPairs(
        row, arith::MulIOp::create(b, lane, idx(2)), bound, idx(2 * kWarpSize),
        [&](Value col) { return widen(elementAt(final, row, col)); }, params,
        codes, scheme.packing == lowbit::Packing::Nibble);
    if (residual)
      emitResidual(residual, residualBuffer, valid);
  }

  /// The launch of the row-group schemes: `final` is the quantize's input
  /// in the region; codes, scales, zeros are the destinations; `global`
  /// the stored global scale ([1, 1], two-level schemes); `residual` (a
  /// region value) is written to `residualBuffer` when set.
  void emitRowGroups(Value final, Value codes, Value scales, Value zeros,
                     Value global, Value residual, Value residualBuffer) {
    OpBuilder::InsertionGuard guard(b);
    Value valid = openRowLaunch();
    Value globalValue = global ? loadScalar(global) : Value();
    lowbit::PreparedDivisor globalDivisor =
        globalValue ? prepareGlobalDivisor(globalValue)
                    : lowbit::PreparedDivisor();

    Value cols = tensorDim(final, 1);
    int64_t groupSize = scheme.scale.groupSize;
    if (int64_t lanes = lanesPerGroup(scheme, inputType)) {
      emitChunkedRowGroups(final, codes, scales, zeros, globalValue,
                           globalDivisor, cols, valid, lanes);
      if (residual)
        emitResidual(residual, residualBuffer, valid);
      return;
    }
    Value groups = arith::SelectOp::create(
        b, valid, ceilDiv(cols, idx(groupSize)), idx(0));
    bool withMinMax = usesMinMax();
    bool nibble = scheme.packing == lowbit::Packing::Nibble;
    auto element = [&](Value col) { return widen(elementAt(final, row, col)); };
    scf::ForOp::create(
        b, lane, groups, idx(kWarpSize), ValueRange{},
        [&](OpBuilder &, Location, Value group, ValueRange) {
          Value start = arith::MulIOp::create(b, group, idx(groupSize));
          Value end = arith::MinUIOp::create(
              b, arith::AddIOp::create(b, start, idx(groupSize)), cols);
          SmallVector<Value> init(withMinMax ? 3 : 1, f32(0.0f));
          auto statsLoop = scf::ForOp::create(
              b, start, end, idx(1), init,
              [&](OpBuilder &, Location, Value col, ValueRange acc) {
                scf::YieldOp::create(b,
                                     accumulate(acc, element(col), withMinMax));
              });
          lowbit::Stats stats = toStats(statsLoop.getResults(), withMinMax);
          Value stored = pickScale(stats, globalValue, globalDivisor);
          memref::StoreOp::create(b, stored, scales, ValueRange{row, group});
          lowbit::GroupParams params;
          params.scale = decodeScale(stored);
          params.global = globalValue;
          if (scaleKind() == lowbit::ScaleKind::Asymmetric) {
            Value zero = pickZero(stats.min, params.scale);
            memref::StoreOp::create(b, zero, zeros, ValueRange{row, group});
            params.zero = arith::ExtUIOp::create(b, b.getI32Type(), zero);
          }
          params = withExactReciprocal(params);
          emitPairs(row, start, end, idx(1 + 1), element, params, codes,
                    nibble);
          scf::YieldOp::create(b);
        });
    if (residual)
      emitResidual(residual, residualBuffer, valid);
  }

  /// The launch of a per-token scheme (one scale per row): the warp's
  /// lanes stride over the row for its statistics, combine them with
  /// shuffles (max and min are exact and order-free), every lane picks the
  /// same scale, lane 0 stores it (and the zero point), and the lanes
  /// write the codes in element pairs 2 lane, 2 lane + 64, ...
  void emitRowScale(Value final, Value codes, Value scales, Value zeros,
                    Value residual, Value residualBuffer) {
    OpBuilder::InsertionGuard guard(b);
    Value valid = openRowLaunch();
    Value bound =
        arith::SelectOp::create(b, valid, tensorDim(final, 1), idx(0));
    bool withMinMax = usesMinMax();
    auto element = [&](Value col) { return widen(elementAt(final, row, col)); };
    SmallVector<Value> init(withMinMax ? 3 : 1, f32(0.0f));
    auto statsLoop = scf::ForOp::create(
        b, lane, bound, idx(kWarpSize), init,
        [&](OpBuilder &, Location, Value col, ValueRange acc) {
          scf::YieldOp::create(b, accumulate(acc, element(col), withMinMax));
        });
    lowbit::GroupParams params = pickLaneGroupScale(
        SmallVector<Value>(statsLoop.getResults()), kWarpSize, Value(), {},
        valid, lane, scales, zeros, row, idx(0));
    emitPairs(row, arith::MulIOp::create(b, lane, idx(2)), bound,
              idx(2 * kWarpSize), element, params, codes,
              scheme.packing == lowbit::Packing::Nibble);
    if (residual)
      emitResidual(residual, residualBuffer, valid);
  }

private:
  /// The row-group codes with `lanes` lanes per group: the warp walks its
  /// row 32 chunks at a time, lane i taking chunk i of each step (all
  /// lanes run every step, for the shuffles), as the unfused row-group
  /// kernel does (LowbitToGpu.cpp).
  void emitChunkedRowGroups(Value final, Value codes, Value scales, Value zeros,
                            Value globalValue,
                            const lowbit::PreparedDivisor &globalDivisor,
                            Value cols, Value valid, int64_t lanes) {
    bool nibble = scheme.packing == lowbit::Packing::Nibble;
    bool withMinMax = usesMinMax();
    Value chunks = ceilDiv(cols, idx(chunkWidth));
    Value bound = arith::SelectOp::create(b, valid, chunks, idx(0));
    // The codes' vector store needs aligned rows of codes too: an aligned
    // base, and rows of whole chunks (silu_mul's input rows are twice as
    // long as its codes' rows), so that every chunk in the row is whole.
    Value vectorRows =
        andAll({vectorRowsReady(),
                isAligned(codes, nibble ? chunkWidth / 2 : chunkWidth),
                divides(chunkWidth, cols)});
    scf::ForOp::create(
        b, idx(0), bound, idx(kWarpSize), ValueRange{},
        [&](OpBuilder &, Location, Value step, ValueRange) {
          Value chunk = add(step, lane);
          Value inRow =
              andAll({valid, arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                                   chunk, chunks)
                                 .getResult()});
          Value col0 = mul(chunk, idx(chunkWidth));
          Value whole = andAll({inRow, vectorRows});
          SmallVector<Value> elements =
              chunkElements(final, col0, cols, inRow, whole);
          SmallVector<Value> acc(withMinMax ? 3 : 1, f32(0.0f));
          for (Value element : elements)
            acc = accumulate(acc, element, withMinMax);
          Value group = arith::DivUIOp::create(b, chunk, idx(lanes));
          Value groupLane = arith::RemUIOp::create(b, chunk, idx(lanes));
          lowbit::GroupParams params = pickLaneGroupScale(
              std::move(acc), lanes, globalValue, globalDivisor, inRow,
              groupLane, scales, zeros, row, group);
          storeChunkCodes(elements, params, codes, row, col0, cols, inRow,
                          whole, nibble);
          scf::YieldOp::create(b);
        });
  }

  /// Whether every input in vectorBuffers has 16-byte aligned rows of
  /// whole chunks.
  Value vectorRowsReady() {
    SmallVector<Value> ready = {
        arith::ConstantOp::create(b, b.getBoolAttr(true))};
    for (Value buffer : vectorBuffers) {
      ready.push_back(isAligned(buffer, kVectorBytes));
      ready.push_back(divides(chunkWidth, dimOf(b, buffer, 1)));
    }
    return andAll(ready);
  }

  /// The prologue's values at columns col0 .. col0 + chunkWidth - 1 of
  /// `row` as f32 (0 past the row's end or where `inRow` fails). Where
  /// `whole` (the chunk is in the row, the rows vector-ready) each input's
  /// 16 bytes are read with one ld.global.v4 (elementAt takes them from
  /// `chunk`); elsewhere column by column, guarded.
  SmallVector<Value> chunkElements(Value final, Value col0, Value cols,
                                   Value inRow, Value whole) {
    SmallVector<Type> types(chunkWidth, b.getF32Type());
    auto wholeIf = scf::IfOp::create(b, types, whole, true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(wholeIf.thenBlock());
    chunk = ChunkColumns();
    chunk->col0 = col0;
    SmallVector<Value> vectorValues;
    for (int64_t i = 0; i < chunkWidth; ++i) {
      Value col = add(col0, idx(i));
      chunk->offsets[col] = i;
      vectorValues.push_back(widen(elementAt(final, row, col)));
    }
    chunk.reset();
    scf::YieldOp::create(b, vectorValues);
    b.setInsertionPointToStart(wholeIf.elseBlock());
    SmallVector<Value> scalars;
    for (int64_t i = 0; i < chunkWidth; ++i) {
      Value col = add(col0, idx(i));
      auto scalarIf = scf::IfOp::create(b, b.getF32Type(),
                                        inBounds(inRow, col, cols), true);
      b.setInsertionPointToStart(scalarIf.thenBlock());
      scf::YieldOp::create(b, widen(elementAt(final, row, col)));
      b.setInsertionPointToStart(scalarIf.elseBlock());
      scf::YieldOp::create(b, f32(0.0f));
      b.setInsertionPointAfter(scalarIf);
      scalars.push_back(scalarIf.getResult(0));
    }
    scf::YieldOp::create(b, scalars);
    return SmallVector<Value>(wholeIf.getResults());
  }

  /// Element `col` of input `buffer` at `rowIndex` from the chunk's
  /// vector load, or null where `col` is not one of the chunk's own
  /// columns (a Hadamard stage's partner, silu_mul's up half) or the
  /// buffer takes no vectors.
  Value chunkElement(Value buffer, Value rowIndex, Value col) {
    if (!chunk || !llvm::is_contained(vectorBuffers, buffer))
      return Value();
    auto offset = chunk->offsets.find(col);
    if (offset == chunk->offsets.end())
      return Value();
    // The row: this warp's, or row 0 of a [1, cols] side tensor.
    Value rowKey;
    if (rowIndex == row)
      rowKey = row;
    else if (!matchPattern(rowIndex, m_Zero()))
      return Value();
    SmallVector<Value> &loaded = chunk->loaded[{buffer, rowKey}];
    if (loaded.empty()) {
      Type element = cast<MemRefType>(buffer.getType()).getElementType();
      Value vector = loadVector(VectorType::get({chunkWidth}, element), buffer,
                                ValueRange{rowIndex, chunk->col0});
      for (int64_t i = 0; i < chunkWidth; ++i)
        loaded.push_back(vector::ExtractOp::create(b, vector, i));
    }
    return loaded[offset->second];
  }

  /// A launch of one warp per row, the builder inside it; returns
  /// beginRow's `valid`.
  Value openRowLaunch() {
    Value rows = dimOf(b, buffers.lookup(body.getArgument(0)), 0);
    gpu::LaunchOp launch =
        createLaunch(arith::MulIOp::create(b, rows, idx(kWarpSize)));
    b.setInsertionPoint(launch.getBody().front().getTerminator());
    return beginRow(launch, rows);
  }

  /// One warp per row: sets `row` and `lane`, clones the region's scalars
  /// and computes the row values. A warp past the last row computes row
  /// 0's values (every lane takes part in the shuffles) and stores nothing;
  /// returns whether the warp's row exists.
  Value beginRow(gpu::LaunchOp launch, Value rows) {
    Value thread = globalThread(launch);
    Value warpRow = arith::DivUIOp::create(b, thread, idx(kWarpSize));
    lane = arith::RemUIOp::create(b, thread, idx(kWarpSize));
    Value valid =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, warpRow, rows);
    row = arith::SelectOp::create(b, valid, warpRow, idx(0));
    setup.clear();
    rowValues.clear();
    staged.clear();
    emitSetup();
    emitRowValues(launch);
    return valid;
  }

  /// A Hadamard rotation with blocks wider than the per-element evaluation
  /// takes: the warp stages its row's input in its own shared-memory row,
  /// runs the butterfly stages in place (lanes striding over the row's
  /// cols / 2 butterflies, a warp sync after each), and the last stage's
  /// elements are then read from there. Every lane of every warp gets
  /// here (beginRow), so the warp syncs see the whole warp.
  void emitStagedRotation(gpu::LaunchOp launch, StagedRotation rotation) {
    int64_t cols = cast<RankedTensorType>(rotation.last.getResult(0).getType())
                       .getDimSize(1);
    Value shared = sharedFloats(launch, threadsPerBlock / kWarpSize * cols);
    Value warpInBlock =
        arith::DivUIOp::create(b, launch.getThreadIds().x, idx(kWarpSize));
    Value base = arith::MulIOp::create(b, warpInBlock, idx(cols));
    auto at = [&](Value col) { return arith::AddIOp::create(b, base, col); };
    scf::ForOp::create(b, lane, idx(cols), idx(kWarpSize), ValueRange{},
                       [&](OpBuilder &, Location, Value col, ValueRange) {
                         memref::StoreOp::create(
                             b, widen(elementAt(rotation.input, row, col)),
                             shared, ValueRange{at(col)});
                         scf::YieldOp::create(b);
                       });
    warpSync();
    for (int64_t half = 1; half < rotation.block; half *= 2) {
      // Butterfly p of the row pairs j = (p / h) * 2h + p % h and j + h:
      // format/Prologue.cpp's (a + b, a - b), in any lane.
      scf::ForOp::create(
          b, lane, idx(cols / 2), idx(kWarpSize), ValueRange{},
          [&](OpBuilder &, Location, Value pair, ValueRange) {
            Value offset = arith::RemUIOp::create(b, pair, idx(half));
            Value base = arith::MulIOp::create(
                b, arith::DivUIOp::create(b, pair, idx(half)), idx(2 * half));
            Value first = arith::AddIOp::create(b, base, offset);
            Value second = arith::AddIOp::create(b, first, idx(half));
            Value a = memref::LoadOp::create(b, shared, ValueRange{at(first)});
            Value c = memref::LoadOp::create(b, shared, ValueRange{at(second)});
            memref::StoreOp::create(b, arith::AddFOp::create(b, a, c), shared,
                                    ValueRange{at(first)});
            memref::StoreOp::create(b, arith::SubFOp::create(b, a, c), shared,
                                    ValueRange{at(second)});
            scf::YieldOp::create(b);
          });
      warpSync();
    }
    staged[rotation.last.getResult(0)] = {shared, base};
  }

  /// The updated residual of add_rmsnorm, lanes strided over the row.
  void emitResidual(Value residual, Value buffer, Value valid) {
    Value cols = tensorDim(residual, 1);
    Value bound = arith::SelectOp::create(b, valid, cols, idx(0));
    scf::ForOp::create(b, lane, bound, idx(kWarpSize), ValueRange{},
                       [&](OpBuilder &, Location, Value col, ValueRange) {
                         memref::StoreOp::create(b,
                                                 elementAt(residual, row, col),
                                                 buffer, ValueRange{row, col});
                         scf::YieldOp::create(b);
                       });
  }

  /// The region's scalar ops (index arithmetic, constants), in order.
  void emitSetup() {
    for (Operation &op : body.without_terminator()) {
      if (auto dim = dyn_cast<tensor::DimOp>(op)) {
        std::optional<int64_t> index = dim.getConstantIndex();
        setup.map(dim.getResult(), tensorDim(dim.getSource(), *index));
        continue;
      }
      if (op.getNumRegions() != 0 ||
          llvm::any_of(op.getOperandTypes(), llvm::IsaPred<TensorType>) ||
          llvm::any_of(op.getResultTypes(), llvm::IsaPred<TensorType>) ||
          isa<ld::QuantizeOp>(op))
        continue;
      b.clone(op, setup);
    }
  }

  /// Extent `index` of a region tensor, from the buffers and the setup.
  Value tensorDim(Value tensor, int64_t index) {
    auto type = cast<RankedTensorType>(tensor.getType());
    if (!type.isDynamicDim(index))
      return idx(type.getDimSize(index));
    if (Value buffer = buffers.lookup(tensor))
      return dimOf(b, buffer, index);
    Operation *definition = tensor.getDefiningOp();
    if (auto empty = dyn_cast<tensor::EmptyOp>(definition))
      return setup.lookup(empty.getDynamicSize(index));
    auto destinationStyle = cast<DestinationStyleOpInterface>(definition);
    return tensorDim(
        destinationStyle
            .getDpsInits()[cast<OpResult>(tensor).getResultNumber()],
        index);
  }

  /// RMSNorm's lane partials and every [rows] value, in region order.
  void emitRowValues(gpu::LaunchOp launch) {
    for (Operation &op : body.without_terminator()) {
      auto generic = dyn_cast<linalg::GenericOp>(op);
      if (!generic)
        continue;
      if (std::optional<StagedRotation> rotation =
              stagedRotationEndingAt(generic)) {
        emitStagedRotation(launch, *rotation);
        continue;
      }
      if (isLanePartials(generic)) {
        // Lane `lane` runs k = 0 .. K - 1 of the reduction, in order.
        Value trips = tensorDim(generic.getDpsInputs()[0], 0);
        Value init = fillValue(generic.getDpsInits()[0]);
        auto loop = scf::ForOp::create(
            b, idx(0), trips, idx(1), ValueRange{init},
            [&](OpBuilder &, Location, Value trip, ValueRange acc) {
              Value next =
                  cloneBody(generic, {f32(0.0f), acc[0]}, {row, lane, trip});
              scf::YieldOp::create(b, next);
            });
        rowValues[generic.getResult(0)] = loop.getResult(0);
        continue;
      }
      if (cast<RankedTensorType>(generic.getResult(0).getType()).getRank() != 1)
        continue;
      SmallVector<Value> arguments;
      for (Value input : generic.getDpsInputs())
        arguments.push_back(rowValues.lookup(input));
      arguments.push_back(f32(0.0f));
      rowValues[generic.getResult(0)] = cloneBody(generic, arguments, {row});
    }
  }

  Value fillValue(Value tensor) {
    auto fill = tensor.getDefiningOp<linalg::FillOp>();
    Value value = fill.getDpsInputs()[0];
    return setup.contains(value) ? setup.lookup(value) : value;
  }

  /// Element (row, col) of a [rows, cols] (or [1, cols]) region tensor.
  Value elementAt(Value tensor, Value rowIndex, Value col) {
    if (Value buffer = buffers.lookup(tensor)) {
      if (Value fromVector = chunkElement(buffer, rowIndex, col))
        return fromVector;
      return memref::LoadOp::create(b, buffer, ValueRange{rowIndex, col});
    }
    if (auto found = staged.find(tensor); found != staged.end()) {
      // The warp's own row (rowIndex is `row`).
      auto [shared, base] = found->second;
      return memref::LoadOp::create(
          b, shared, ValueRange{arith::AddIOp::create(b, base, col)});
    }
    auto generic = tensor.getDefiningOp<linalg::GenericOp>();
    SmallVector<Value> loopIndices = {rowIndex, col};
    SmallVector<Value> arguments;
    for (OpOperand *input : generic.getDpsInputOperands()) {
      AffineMap map = generic.getMatchingIndexingMap(input);
      Value value = input->get();
      if (map.getNumResults() == 1) {
        arguments.push_back(rowValues.lookup(value));
        continue;
      }
      SmallVector<Value> indices;
      for (AffineExpr expr : map.getResults())
        indices.push_back(
            isa<AffineDimExpr>(expr)
                ? loopIndices[cast<AffineDimExpr>(expr).getPosition()]
                : idx(0));
      arguments.push_back(elementAt(value, indices[0], indices[1]));
    }
    Type outputType =
        cast<RankedTensorType>(generic.getResult(0).getType()).getElementType();
    arguments.push_back(arith::ConstantOp::create(
        b, outputType, cast<TypedAttr>(b.getZeroAttr(outputType))));
    return cloneBody(generic, arguments, loopIndices);
  }

  /// The generic's body at `loopIndices` with its block arguments bound to
  /// `arguments`; returns the yielded value.
  Value cloneBody(linalg::GenericOp generic, ArrayRef<Value> arguments,
                  ArrayRef<Value> loopIndices) {
    IRMapping mapping = setup;
    Block &generics = generic.getRegion().front();
    for (auto [argument, value] : llvm::zip(generics.getArguments(), arguments))
      mapping.map(argument, value);
    for (Operation &op : generics.without_terminator()) {
      if (auto index = dyn_cast<linalg::IndexOp>(op)) {
        mapping.map(index.getResult(), loopIndices[index.getDim()]);
        continue;
      }
      if (auto extract = dyn_cast<tensor::ExtractOp>(op)) {
        SmallVector<Value> indices;
        for (Value index : extract.getIndices())
          indices.push_back(mapping.lookupOrDefault(index));
        mapping.map(extract.getResult(),
                    readElement(extract.getTensor(), indices));
        continue;
      }
      if (auto sqrt = dyn_cast<math::SqrtOp>(op);
          sqrt && sqrt.getType().isF32()) {
        // llvm.sqrt.f32 is sqrt.rn.f32 in PTX and sqrtss on the host (the
        // emulator), both correctly rounded; convert-gpu-to-nvvm would
        // turn math.sqrt into a libdevice call instead.
        mapping.map(sqrt.getResult(),
                    LLVM::CallIntrinsicOp::create(
                        b, b.getF32Type(), b.getStringAttr("llvm.sqrt.f32"),
                        ValueRange{mapping.lookupOrDefault(sqrt.getOperand())})
                        .getResult(0));
        continue;
      }
      b.clone(op, mapping);
    }
    return mapping.lookupOrDefault(
        cast<linalg::YieldOp>(generics.getTerminator()).getValues()[0]);
  }

  /// What a tensor.extract in a body reads.
  Value readElement(Value tensor, ArrayRef<Value> indices) {
    if (isLanePartials(tensor.getDefiningOp())) {
      // Lane indices[1]'s partial.
      Value source = arith::IndexCastOp::create(b, b.getI32Type(), indices[1]);
      return shuffleIdx(rowValues.lookup(tensor), source);
    }
    if (indices.size() == 1)
      return rowValues.lookup(tensor);
    return elementAt(tensor, indices[0], indices[1]);
  }

  Block &body;
  DenseMap<Value, Value> buffers;
  /// Region scalars -> their clones in the launch.
  IRMapping setup;
  /// [rows] region values, and lane partials (this lane's), per row.
  DenseMap<Value, Value> rowValues;
  /// Staged rotations' last stages -> (shared memory, the warp's offset).
  DenseMap<Value, std::pair<Value, Value>> staged;
  Value row, lane;
  /// The input's element type, and the columns per lane in the chunked
  /// loops: 16 bytes of it.
  Type inputType;
  int64_t chunkWidth;
  /// The rank-2 inputs whose elements are chunkWidth to 16 bytes.
  SmallVector<Value> vectorBuffers;
  /// The chunk being evaluated: its first column, its columns' offsets,
  /// and the vectors loaded for it per (input, row or null for row 0).
  struct ChunkColumns {
    Value col0;
    DenseMap<Value, int64_t> offsets;
    DenseMap<std::pair<Value, Value>, SmallVector<Value>> loaded;
  };
  std::optional<ChunkColumns> chunk;
};

/// Dynamic groups along each row with row-major scales (a global scale,
/// computed or given, allowed): the row-group launch.
bool hasRowGroups(const lowbit::Scheme &scheme) {
  const lowbit::ScaleSpec &scale = scheme.scale;
  return scale.mode == lowbit::ScaleMode::Dynamic &&
         scale.granularity == lowbit::Granularity::Group && scale.axis == 1 &&
         scale.layout == lowbit::ScaleLayout::RowMajor &&
         lowbit::containerBits(scheme) <= 8;
}

/// One dynamic scale per row (per token): one launch, a warp per row.
bool hasRowScale(const lowbit::Scheme &scheme) {
  const lowbit::ScaleSpec &scale = scheme.scale;
  return scale.mode == lowbit::ScaleMode::Dynamic &&
         scale.granularity == lowbit::Granularity::PerToken &&
         scale.globalScale == lowbit::GlobalScale::None &&
         lowbit::containerBits(scheme) <= 8;
}

/// One dynamic scale for the whole tensor: statistics, then codes.
bool hasTensorScale(const lowbit::Scheme &scheme) {
  const lowbit::ScaleSpec &scale = scheme.scale;
  return scale.mode == lowbit::ScaleMode::Dynamic &&
         scale.granularity == lowbit::Granularity::PerTensor &&
         scale.globalScale == lowbit::GlobalScale::None &&
         lowbit::containerBits(scheme) <= 8;
}

/// The number of Hadamard stages chained through tensor.extract (each
/// element of the last stage reads 2^stages values).
int64_t extractChainDepth(Value tensor) {
  auto generic = tensor.getDefiningOp<linalg::GenericOp>();
  if (!generic || isLanePartials(generic) || stagedRotationEndingAt(generic))
    return 0;
  int64_t depth = 0;
  generic.getRegion().walk([&](tensor::ExtractOp extract) {
    auto source = extract.getTensor().getDefiningOp<linalg::GenericOp>();
    if (source && !isLanePartials(source))
      depth = std::max(depth, 1 + extractChainDepth(extract.getTensor()));
  });
  for (Value input : generic.getDpsInputs())
    depth = std::max(depth, extractChainDepth(input));
  return depth;
}

struct FusedRowsToGpu : OpRewritePattern<ld::FusedOp> {
  FusedRowsToGpu(MLIRContext *context, int64_t threadsPerBlock)
      : OpRewritePattern(context), threadsPerBlock(threadsPerBlock) {}

  LogicalResult matchAndRewrite(ld::FusedOp op,
                                PatternRewriter &rewriter) const override {
    Block &body = op.getBody().front();
    ld::QuantizeOp quantize;
    body.walk([&](ld::QuantizeOp found) { quantize = found; });
    if (!quantize)
      return rewriter.notifyMatchFailure(op, "no quantize");
    lowbit::Scheme scheme = ld::toScheme(quantize.getScheme());
    bool rowScale = hasRowScale(scheme);
    bool rowGroups = rowScale || hasRowGroups(scheme);
    if (!rowGroups && !hasTensorScale(scheme))
      return op.emitError(
          "fused kernels on the GPU take dynamic schemes with one scale per "
          "tensor, per token or in groups along the row; scheme '" +
          scheme.name + "' is none of them");
    int64_t maxDepth = 0;
    for (int64_t block = 2; block <= kMaxGpuHadamardBlock; block *= 2)
      ++maxDepth;
    if (extractChainDepth(quantize.getInput()) > maxDepth)
      return op.emitError("fused kernels on the GPU take Hadamard blocks of "
                          "at most " +
                          std::to_string(kMaxGpuHadamardBlock) + " columns");
    // Staged rotations take one shared-memory row per warp each, in every
    // launch (a statistics launch adds its per-warp statistics): fewer
    // warps per block where 8 rows do not fit. The budget covers the
    // kernel's launches together, as the emulator lays out one module's
    // shared memory (docs/gpu.md).
    int64_t stagedBytesPerWarp = 0;
    body.walk([&](linalg::GenericOp generic) {
      if (stagedRotationEndingAt(generic))
        stagedBytesPerWarp +=
            cast<RankedTensorType>(generic.getResult(0).getType())
                .getDimSize(1) *
            int64_t(sizeof(float));
    });
    bool statsLaunch = !rowGroups || quantize.getGlobal();
    int64_t statsBytesPerWarp =
        (!rowGroups && scheme.scale.rule == lowbit::ScaleRule::MinMax ? 3 : 1) *
        int64_t(sizeof(float));
    auto sharedBytes = [&](int64_t warps) {
      return (statsLaunch ? 2 : 1) * warps * stagedBytesPerWarp +
             (statsLaunch ? warps * statsBytesPerWarp : 0);
    };
    int64_t launchThreads = threadsPerBlock;
    if (stagedBytesPerWarp != 0) {
      if (sharedBytes(1) > kMaxGpuFusedSharedBytes)
        return op.emitError(
            "fused kernels on the GPU stage each row of a Hadamard rotation "
            "with blocks wider than " +
            std::to_string(kMaxGpuHadamardBlock) +
            " columns in shared memory, at most " +
            std::to_string(kMaxGpuFusedSharedBytes) +
            " bytes per kernel; this kernel's rows need " +
            std::to_string(sharedBytes(1)) + " bytes");
      while (launchThreads > kWarpSize &&
             sharedBytes(launchThreads / kWarpSize) > kMaxGpuFusedSharedBytes)
        launchThreads /= 2;
    }
    SmallVector<Value> argumentBuffers;
    for (Value operand : op.getOperands()) {
      argumentBuffers.push_back(operandBuffer(operand));
      if (!argumentBuffers.back())
        return rewriter.notifyMatchFailure(op, "operand not from a memref");
    }
    auto yield = cast<ld::YieldOp>(body.getTerminator());
    // The fused op's result that carries `inner` (a yielded value).
    auto destinationOf =
        [&](Value inner) -> bufferization::MaterializeInDestinationOp {
      if (!inner)
        return {};
      for (OpOperand &yielded : yield->getOpOperands())
        if (yielded.get() == inner)
          return resultDestination(op->getResult(yielded.getOperandNumber()),
                                   op);
      return {};
    };
    auto codes = destinationOf(quantize.getCodes());
    auto scales = destinationOf(quantize.getScales());
    auto zeros = destinationOf(quantize.getZeros());
    if (!codes || !scales || (quantize.getZeros() && !zeros))
      return rewriter.notifyMatchFailure(op, "results not materialized");
    Value residual;
    bufferization::MaterializeInDestinationOp residualDestination;
    if (op.getSideOutputs() == 1) {
      residual = yield->getOperands().back();
      residualDestination = resultDestination(op->getResults().back(), op);
      if (!residualDestination)
        return rewriter.notifyMatchFailure(op, "residual not materialized");
    }

    // A two-level scheme's global: computed by a statistics launch, or given.
    bufferization::MaterializeInDestinationOp computedGlobal;
    Value global;
    if (quantize.getGlobal()) {
      computedGlobal = destinationOf(quantize.getGlobal());
      if (!computedGlobal)
        return rewriter.notifyMatchFailure(op, "global not materialized");
      global = computedGlobal.getDest();
    } else if (Value given = quantize.getStaticGlobal()) {
      global = argumentBuffers[cast<BlockArgument>(given).getArgNumber()];
    }
    bool withMinMax = scheme.scale.rule == lowbit::ScaleRule::MinMax;
    Value workspace;
    if (computedGlobal || !rowGroups) {
      workspace = workspaceArgument(rewriter, op, (withMinMax ? 3 : 1) + 1);
      if (!workspace)
        return rewriter.notifyMatchFailure(op, "no room for the workspace");
    }

    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    b.setInsertionPoint(op);
    FusedRowEmitter emitter(b, scheme, launchThreads, body, argumentBuffers);
    Value final = quantize.getInput();
    Value zerosBuffer = zeros ? zeros.getDest() : Value();
    Value residualBuffer =
        residualDestination ? residualDestination.getDest() : Value();
    Value zeroIndex = arith::ConstantIndexOp::create(b, 0);
    if (rowGroups) {
      if (computedGlobal)
        // Launch 1 of 2: the prologue's tensor amax and the stored global.
        emitter.emitStatsLaunch(final, workspace, /*withMinMax=*/false,
                                [&](const lowbit::Stats &stats) {
                                  memref::StoreOp::create(
                                      b, emitter.computeGlobal(stats.absMax),
                                      global, ValueRange{zeroIndex, zeroIndex});
                                });
      if (rowScale)
        emitter.emitRowScale(final, codes.getDest(), scales.getDest(),
                             zerosBuffer, residual, residualBuffer);
      else
        emitter.emitRowGroups(final, codes.getDest(), scales.getDest(),
                              zerosBuffer, global, residual, residualBuffer);
    } else {
      // Launch 1: the scale (and zero point) from the tensor's statistics;
      // launch 2: the codes.
      Value scaleBuffer = scales.getDest();
      emitter.emitStatsLaunch(
          final, workspace, withMinMax, [&](const lowbit::Stats &stats) {
            emitter.storeTensorScale(stats, scaleBuffer, zerosBuffer,
                                     ValueRange{zeroIndex, zeroIndex});
          });
      emitter.emitPerTensorCodes(final, codes.getDest(), scaleBuffer,
                                 zerosBuffer, residual, residualBuffer);
    }
    for (auto materialize :
         {codes, scales, zeros, computedGlobal, residualDestination})
      if (materialize)
        rewriter.eraseOp(materialize);
    rewriter.eraseOp(op);
    return success();
  }

  int64_t threadsPerBlock;
};

} // namespace
} // namespace lowbit::gpu_mapping

void lowbit::populateGpuFusedRowsPatterns(RewritePatternSet &patterns,
                                          int64_t threadsPerBlock) {
  patterns.add<gpu_mapping::FusedRowsToGpu>(patterns.getContext(),
                                            threadsPerBlock);
}
