//===- GpuTensorReduce.cpp - Per-tensor dynamic quantize in two launches --===//
//
// Per-tensor dynamic quantize (one scale for the whole tensor) and the
// computed global scale of the two-level schemes, in the bandwidth-shaped
// GPU mapping (docs/gpu.md, "Per-tensor scales"):
//
//   launch 1  grid-stride over the flat tensor with 16-byte loads (a scalar
//             loop takes the ragged or unaligned rest); per-lane statistics,
//             warp xor shuffles, a shared-memory block reduction, then lane
//             0 of each block folds the block's statistics into the
//             workspace with one relaxed device-scope atomic max each (on
//             the float bits: non-negative floats order like their bits)
//             and takes a ticket. The block that takes the last ticket reads
//             and zeroes the workspace, computes the scale (ScaleMath, the
//             reference's arithmetic) and stores it.
//   launch 2  the quantize pass: each thread reads the stored scale once,
//             then strides over warp segments of 512 elements; a lane
//             loads 16 of them with 16-byte loads next to its neighbours',
//             encodes pairs with one vector<2xf32> lowbit.encode (one x2
//             cvt), and the warp trades its codes through shared memory
//             so that each lane stores 16 consecutive code bytes at once.
//
// The workspace is a kernel parameter the runtime owns (docs/kernel-abi.md,
// "Workspace"), so two streams never share scratch; no CAS loop, no
// system-scope atomic, no module global.
//
//===----------------------------------------------------------------------===//

#include "lowering/GpuTensorReduce.h"
#include "lowering/GpuReductionBuilder.h"
#include "lowering/Passes.h"
#include "lowering/kit/KernelEmitter.h"

#include "dialect/LowbitOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
namespace ld = lowbit::dialect;

namespace lowbit::gpu_mapping {
namespace {

/// The function's kWorkspaceAttrName argument (memref<1 x words x i32>);
/// null when it has none.
BlockArgument findWorkspaceArgument(FunctionOpInterface function) {
  if (!function || function.isExternal())
    return {};
  for (BlockArgument argument : function.getArguments())
    if (function.getArgAttr(argument.getArgNumber(), kWorkspaceAttrName))
      return argument;
  return {};
}

/// Its size in 32-bit words (the fixed words of one that grows with X); 0
/// when there is none.
int64_t workspaceWordsOf(FunctionOpInterface function) {
  BlockArgument argument = findWorkspaceArgument(function);
  if (!argument)
    return 0;
  if (auto rows = function.getArgAttrOfType<DenseI64ArrayAttr>(
          argument.getArgNumber(), workspace_abi::kRowsAttr))
    return rows[0];
  return cast<MemRefType>(argument.getType()).getDimSize(1);
}

/// Appends the workspace argument of type `type` with `attributes`.
Value appendWorkspace(RewriterBase &rewriter, FunctionOpInterface function,
                      Type type, ArrayRef<NamedAttribute> attributes) {
  unsigned position = function.getNumArguments();
  rewriter.modifyOpInPlace(function, [&] {
    (void)function.insertArgument(position, type,
                                  rewriter.getDictionaryAttr(attributes),
                                  function.getLoc());
  });
  return function.getArgument(position);
}

/// At most this many blocks stride over the tensor in launch 1: enough to
/// keep every SM of an H200 (132 x 8 resident blocks of 256 threads) or a
/// B200 (148 x 8) nearly full; more blocks would only add atomics.
constexpr int64_t kMaxStatsBlocks = 1024;
/// Elements per lane and trip in the quantize pass: one to four 16-byte
/// loads, 16 code bytes.
constexpr int64_t kElementsPerLane = 16;

/// Emits the two launches; the arithmetic is ScaleMath's.
class TensorReduceEmitter : public GpuReductionBuilder {
public:
  using GpuReductionBuilder::GpuReductionBuilder;

  /// Launch 1: the statistics of the whole of `input` (amax; with
  /// `withMinMax` also min and max), reduced through `workspace`; the last
  /// block calls `storeResults` with them (the builder inside that block).
  void emitStatsLaunch(Value input, Value workspace, bool withMinMax,
                       function_ref<void(const lowbit::Stats &)> storeResults) {
    Type inputType = cast<MemRefType>(input.getType()).getElementType();
    int64_t width = kVectorBytes / bytesOf(inputType);
    int64_t statCount = workspace_abi::statisticWords(withMinMax);
    int64_t warps = threadsPerBlock / kWarpSize;

    Value count =
        arith::MulIOp::create(b, dimOf(b, input, 0), dimOf(b, input, 1));
    Value blocks = arith::MinUIOp::create(
        b, ceilDiv(count, idx(threadsPerBlock * width)), idx(kMaxStatsBlocks));
    auto launch =
        launchBlocks(blocks, threadsPerBlock,
                     kit::workgroupMemRefType(
                         b.getContext(), {warps * statCount}, b.getF32Type()));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(launch.getBody().front().getTerminator());
    Value shared = launch.getWorkgroupAttributions().front();

    Value flat = flatten(input, count);
    Value thread = globalThread(launch);
    Value gridSize = launch.getGridSize().x;
    Value stride = arith::MulIOp::create(b, gridSize, idx(threadsPerBlock));
    // Whole 16-byte vectors from an aligned base, then the rest one by one.
    Value vectorCount = arith::SelectOp::create(
        b, isAligned(input, kVectorBytes),
        arith::DivUIOp::create(b, count, idx(width)), idx(0));
    SmallVector<Value> init(statCount, f32(0.0f));
    auto vectorLoop = scf::ForOp::create(
        b, thread, vectorCount, stride, init,
        [&](OpBuilder &, Location, Value vectorIndex, ValueRange acc) {
          Value vector = loadVector(
              VectorType::get({width}, inputType), flat,
              ValueRange{arith::MulIOp::create(b, vectorIndex, idx(width))});
          SmallVector<Value> next(acc);
          for (int64_t i = 0; i < width; ++i)
            next =
                accumulate(next, widen(vector::ExtractOp::create(b, vector, i)),
                           withMinMax);
          scf::YieldOp::create(b, next);
        });
    Value scalarStart = arith::AddIOp::create(
        b, arith::MulIOp::create(b, vectorCount, idx(width)), thread);
    auto scalarLoop = scf::ForOp::create(
        b, scalarStart, count, stride, vectorLoop.getResults(),
        [&](OpBuilder &, Location, Value index, ValueRange acc) {
          Value value = widen(memref::LoadOp::create(b, flat, index));
          scf::YieldOp::create(b, accumulate(acc, value, withMinMax));
        });
    foldIntoWorkspace(launch, shared,
                      SmallVector<Value>(scalarLoop.getResults()), workspace,
                      withMinMax, storeResults);
  }

  /// The end of a statistics launch: each thread's `acc` combined over the
  /// warp and the block (through `shared`, warps x statistics f32), folded
  /// into `workspace`; the last block calls `storeResults`.
  void
  foldIntoWorkspace(gpu::LaunchOp launch, Value shared, SmallVector<Value> acc,
                    Value workspace, bool withMinMax,
                    function_ref<void(const lowbit::Stats &)> storeResults) {
    int64_t statCount = workspace_abi::statisticWords(withMinMax);
    int64_t warps = threadsPerBlock / kWarpSize;
    Value gridSize = launch.getGridSize().x;
    // The warp, then the block: lane 0 of each warp leaves its warp's
    // statistics in shared memory, warp 0 combines them. max/min of
    // NaN-free values are exact and order-independent, and every lane
    // starts at +0 (as the reference), so no -0 and no NaN ever appear.
    acc = reduceWarp(acc, kWarpSize, withMinMax);
    Value tid = launch.getThreadIds().x;
    Value lane = arith::RemUIOp::create(b, tid, idx(kWarpSize));
    Value warp = arith::DivUIOp::create(b, tid, idx(kWarpSize));
    Value isLaneZero =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, idx(0));
    auto storeShared = scf::IfOp::create(b, isLaneZero, false);
    {
      OpBuilder::InsertionGuard thenGuard(b);
      b.setInsertionPoint(storeShared.thenBlock()->getTerminator());
      for (int64_t position = 0; position < statCount; ++position)
        memref::StoreOp::create(b, acc[position], shared,
                                sharedIndex(warp, position, statCount));
    }
    barrier();
    auto firstWarp = scf::IfOp::create(
        b, arith::CmpIOp::create(b, arith::CmpIPredicate::eq, warp, idx(0)),
        false);
    OpBuilder::InsertionGuard warpGuard(b);
    b.setInsertionPoint(firstWarp.thenBlock()->getTerminator());
    auto loadShared = scf::IfOp::create(
        b, SmallVector<Type>(statCount, b.getF32Type()),
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, lane, idx(warps)),
        true);
    {
      OpBuilder::InsertionGuard thenGuard(b);
      b.setInsertionPointToStart(loadShared.thenBlock());
      SmallVector<Value> values;
      for (int64_t position = 0; position < statCount; ++position)
        values.push_back(memref::LoadOp::create(
            b, shared, sharedIndex(lane, position, statCount)));
      scf::YieldOp::create(b, values);
      b.setInsertionPointToStart(loadShared.elseBlock());
      scf::YieldOp::create(b, SmallVector<Value>(statCount, f32(0.0f)));
    }
    SmallVector<Value> blockAcc = reduceWarp(
        SmallVector<Value>(loadShared.getResults()), warps, withMinMax);

    // Thread 0: fold into the workspace, then take a ticket. The fence
    // orders the maxima before the ticket (release) and, in the last
    // block, the ticket before the reads (acquire): __threadfence().
    auto firstThread = scf::IfOp::create(b, isLaneZero, false);
    b.setInsertionPoint(firstThread.thenBlock()->getTerminator());
    for (int64_t position = 0; position < statCount; ++position)
      memref::AtomicRMWOp::create(b, arith::AtomicRMWKind::maxu,
                                  toOrderedBits(blockAcc[position], position),
                                  workspace, ValueRange{idx(0), idx(position)});
    NVVM::MembarOp::create(b, NVVM::MemScopeKind::GPU);
    int64_t ticketWord = workspace_abi::ticketWord(withMinMax);
    Value ticket = memref::AtomicRMWOp::create(
        b, arith::AtomicRMWKind::addi, i32(1), workspace,
        ValueRange{idx(0), idx(ticketWord)});
    Value lastTicket = arith::IndexCastUIOp::create(
        b, b.getI32Type(), arith::SubIOp::create(b, gridSize, idx(1)));
    auto lastBlock = scf::IfOp::create(
        b,
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, ticket, lastTicket),
        false);
    b.setInsertionPoint(lastBlock.thenBlock()->getTerminator());
    NVVM::MembarOp::create(b, NVVM::MemScopeKind::GPU);
    // Read and zero each word in one exchange: the workspace leaves the
    // launch as it came, all zero.
    SmallVector<Value> totals;
    for (int64_t position = 0; position < statCount; ++position) {
      Value bits = memref::AtomicRMWOp::create(
          b, arith::AtomicRMWKind::assign, i32(0), workspace,
          ValueRange{idx(0), idx(position)});
      totals.push_back(fromOrderedBits(bits, position));
    }
    memref::AtomicRMWOp::create(b, arith::AtomicRMWKind::assign, i32(0),
                                workspace, ValueRange{idx(0), idx(ticketWord)});
    storeResults(toStats(totals, withMinMax));
  }

  /// Launch 2: codes of the whole tensor with the stored per-tensor scale.
  /// A grid-stride loop over warp segments of 32 x kElementsPerLane
  /// elements: piece p of lane l is the `width` elements (one 16-byte load)
  /// at segment + p x 32 x width + l x width, so each of the warp's loads
  /// reads 512 contiguous bytes (a lane loading 16 consecutive elements put
  /// its neighbours 32-64 B apart). The codes go back the other way: each
  /// lane leaves its pieces' codes at their segment offsets in the warp's
  /// 512 bytes of shared memory and takes bytes 16 l to 16 l + 15 from
  /// there, so each lane stores 16 bytes and each warp store writes 512
  /// contiguous bytes (storing the pieces' codes directly took 4-8 byte
  /// stores, 2-4 a lane). The scale and its reciprocal are read once per
  /// thread.
  void emitQuantizeLaunch(Value input, Value codes, Value scales, Value zeros) {
    Type inputType = cast<MemRefType>(input.getType()).getElementType();
    int64_t width = kVectorBytes / bytesOf(inputType);
    int64_t pieces = kElementsPerLane / width;
    int64_t segmentElements = kWarpSize * kElementsPerLane;
    int64_t warps = threadsPerBlock / kWarpSize;

    Value count =
        arith::MulIOp::create(b, dimOf(b, input, 0), dimOf(b, input, 1));
    Value segmentCount = ceilDiv(count, idx(segmentElements));
    Value threads = arith::MulIOp::create(b, segmentCount, idx(kWarpSize));
    gpu::LaunchOp launch = createGridStrideLaunch(
        threads, kit::workgroupMemRefType(
                     b.getContext(), {warps * segmentElements}, b.getI8Type()));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(launch.getBody().front().getTerminator());
    Value shared = launch.getWorkgroupAttributions().front();

    Value flatInput = flatten(input, count);
    Value flatCodes = flatten(codes, count);
    Value lane =
        arith::RemUIOp::create(b, launch.getThreadIds().x, idx(kWarpSize));
    Value laneOffset = arith::MulIOp::create(b, lane, idx(width));
    Value warpShared = arith::MulIOp::create(
        b, arith::DivUIOp::create(b, launch.getThreadIds().x, idx(kWarpSize)),
        idx(segmentElements));
    Value aligned = andAll(
        {isAligned(input, kVectorBytes), isAligned(codes, kElementsPerLane)});
    lowbit::GroupParams params =
        withExactReciprocal(loadParams(scales, zeros, idx(0), idx(0)));

    Value warpStride =
        arith::DivUIOp::create(b, gridThreads(launch), idx(kWarpSize));
    Value firstWarp =
        arith::DivUIOp::create(b, globalThread(launch), idx(kWarpSize));
    auto loop = scf::ForOp::create(b, firstWarp, segmentCount, warpStride);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    Value segmentFirst =
        arith::MulIOp::create(b, loop.getInductionVar(), idx(segmentElements));
    // Element i of the lane's piece p sits at firsts[p] + i, offsets[p] + i
    // into the segment.
    SmallVector<Value> offsets, firsts;
    for (int64_t piece = 0; piece < pieces; ++piece) {
      offsets.push_back(
          arith::AddIOp::create(b, laneOffset, idx(piece * kWarpSize * width)));
      firsts.push_back(arith::AddIOp::create(b, segmentFirst, offsets.back()));
    }
    // The whole segment in range (warp-uniform) and aligned bases take
    // vectors; the last, partial segment or unaligned buffers one element
    // at a time.
    Value fast = andAll(
        {aligned,
         arith::CmpIOp::create(
             b, arith::CmpIPredicate::ule,
             arith::AddIOp::create(b, segmentFirst, idx(segmentElements)),
             count)
             .getResult()});
    auto elementIndex = [&](int64_t position) -> Value {
      int64_t inPiece = position % width;
      Value first = firsts[position / width];
      return inPiece ? arith::AddIOp::create(b, first, idx(inPiece)).getResult()
                     : first;
    };

    // Elements past the tensor read as 0; their codes are never stored.
    auto loadIf = scf::IfOp::create(
        b, SmallVector<Type>(kElementsPerLane, b.getF32Type()), fast, true);
    {
      OpBuilder::InsertionGuard thenGuard(b);
      b.setInsertionPointToStart(loadIf.thenBlock());
      SmallVector<Value> elements;
      for (Value first : firsts) {
        Value vector = loadVector(VectorType::get({width}, inputType),
                                  flatInput, ValueRange{first});
        for (int64_t i = 0; i < width; ++i)
          elements.push_back(widen(vector::ExtractOp::create(b, vector, i)));
      }
      scf::YieldOp::create(b, elements);
      b.setInsertionPointToStart(loadIf.elseBlock());
      SmallVector<Value> scalars;
      for (int64_t position = 0; position < kElementsPerLane; ++position) {
        Value index = elementIndex(position);
        auto scalarIf = scf::IfOp::create(
            b, b.getF32Type(),
            arith::CmpIOp::create(b, arith::CmpIPredicate::ult, index, count),
            true);
        b.setInsertionPointToStart(scalarIf.thenBlock());
        scf::YieldOp::create(
            b, widen(memref::LoadOp::create(b, flatInput, index)));
        b.setInsertionPointToStart(scalarIf.elseBlock());
        scf::YieldOp::create(b, f32(0.0f));
        b.setInsertionPointAfter(scalarIf);
        scalars.push_back(scalarIf.getResult(0));
      }
      scf::YieldOp::create(b, scalars);
    }

    // Pairs never straddle a piece (width is even).
    SmallVector<Value> bytes = codeBytes(
        SmallVector<Value>(loadIf.getResults()), params, /*nibble=*/false);
    auto storeIf = scf::IfOp::create(b, fast, true);
    OpBuilder::InsertionGuard storeGuard(b);
    b.setInsertionPoint(storeIf.thenBlock()->getTerminator());
    // Every lane of the warp is here (`fast` is warp-uniform); the first
    // sync keeps the last trip's reads before this trip's writes.
    warpSync();
    for (int64_t piece = 0; piece < pieces; ++piece) {
      Value packed = vector::FromElementsOp::create(
          b, VectorType::get({width}, b.getI8Type()),
          ArrayRef<Value>(bytes).slice(piece * width, width));
      storeVector(
          packed, shared,
          ValueRange{arith::AddIOp::create(b, warpShared, offsets[piece])});
    }
    warpSync();
    Value laneCodes = arith::MulIOp::create(b, lane, idx(kElementsPerLane));
    storeVector(
        loadVector(VectorType::get({kElementsPerLane}, b.getI8Type()), shared,
                   ValueRange{arith::AddIOp::create(b, warpShared, laneCodes)}),
        flatCodes,
        ValueRange{arith::AddIOp::create(b, segmentFirst, laneCodes)});
    b.setInsertionPoint(storeIf.elseBlock()->getTerminator());
    for (int64_t position = 0; position < kElementsPerLane; ++position) {
      Value index = elementIndex(position);
      auto byteIf = scf::IfOp::create(
          b, arith::CmpIOp::create(b, arith::CmpIPredicate::ult, index, count),
          false);
      OpBuilder::InsertionGuard byteGuard(b);
      b.setInsertionPoint(byteIf.thenBlock()->getTerminator());
      memref::StoreOp::create(b, bytes[position], flatCodes, index);
    }
  }

private:
  /// The row-major [rows, cols] buffer as its `count` elements in one
  /// dimension (the ABI's buffers are contiguous: offset 0, strides
  /// {cols, 1}). A reinterpret_cast, which MemRefToLLVM lowers directly
  /// (collapse_shape would need expand-strided-metadata first).
  Value flatten(Value buffer, Value count) {
    Type element = cast<MemRefType>(buffer.getType()).getElementType();
    return memref::ReinterpretCastOp::create(
        b, MemRefType::get({ShapedType::kDynamic}, element), buffer,
        OpFoldResult(b.getIndexAttr(0)), ArrayRef<OpFoldResult>{count},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
  }
  SmallVector<Value> sharedIndex(Value slot, int64_t position,
                                 int64_t statCount) {
    return {arith::AddIOp::create(
        b, arith::MulIOp::create(b, slot, idx(statCount)), idx(position))};
  }
  /// Position 1 (min, <= +0) is kept as 0 - min, which is >= +0 (a
  /// negation would turn +0 into -0, whose bits order above everything);
  /// amax and max are >= +0 already. Non-negative floats, +inf included,
  /// order like their bits, so an unsigned atomic max combines them.
  Value toOrderedBits(Value value, int64_t position) {
    if (position == 1)
      value = arith::SubFOp::create(b, f32(0.0f), value);
    return arith::BitcastOp::create(b, b.getI32Type(), value);
  }
  Value fromOrderedBits(Value bits, int64_t position) {
    Value value = arith::BitcastOp::create(b, b.getF32Type(), bits);
    if (position == 1)
      value = arith::SubFOp::create(b, f32(0.0f), value);
    return value;
  }
};

/// Dynamic per-tensor quantize with byte codes: the two launches above.
struct QuantizePerTensorToGpu : OpRewritePattern<ld::QuantizeOp> {
  QuantizePerTensorToGpu(MLIRContext *context, int64_t threadsPerBlock)
      : OpRewritePattern(context), threadsPerBlock(threadsPerBlock) {}

  LogicalResult matchAndRewrite(ld::QuantizeOp op,
                                PatternRewriter &rewriter) const override {
    lowbit::Scheme scheme = ld::toScheme(op.getScheme());
    const lowbit::ScaleSpec &scale = scheme.scale;
    if (scale.mode != lowbit::ScaleMode::Dynamic ||
        scale.granularity != lowbit::Granularity::PerTensor ||
        scheme.packing != lowbit::Packing::Byte ||
        lowbit::containerBits(scheme) != 8 || op.getGlobal() ||
        op.getStaticGlobal())
      return rewriter.notifyMatchFailure(op, "not a per-tensor byte scheme");
    Value input = operandBuffer(op.getInput());
    if (!input)
      return rewriter.notifyMatchFailure(op, "input not from a memref");
    FailureOr<QuantizeDestinations> destinations =
        QuantizeDestinations::find(op);
    if (failed(destinations))
      return rewriter.notifyMatchFailure(op, "results not materialized");
    bool withMinMax = scale.rule == lowbit::ScaleRule::MinMax;
    int64_t words = workspace_abi::reductionWords(withMinMax);
    auto function = op->getParentOfType<FunctionOpInterface>();
    int64_t existing = workspaceWordsOf(function);
    if (!function || (existing > 0 && existing < words))
      return rewriter.notifyMatchFailure(op, "no room for the workspace");

    Value workspace = workspaceArgument(rewriter, op, words);
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    b.setInsertionPoint(op);
    TensorReduceEmitter emitter(b, scheme, threadsPerBlock);
    Value scaleBuffer = destinations->scales.getDest();
    Value zeroBuffer = destinations->zerosBuffer();
    emitter.emitStatsLaunch(
        input, workspace, withMinMax, [&](const lowbit::Stats &stats) {
          Value zero = arith::ConstantIndexOp::create(b, 0);
          emitter.storeTensorScale(stats, scaleBuffer, zeroBuffer,
                                   ValueRange{zero, zero});
        });
    emitter.emitQuantizeLaunch(input, destinations->codes.getDest(),
                               scaleBuffer, zeroBuffer);
    destinations->eraseWith(rewriter, op);
    return success();
  }

  int64_t threadsPerBlock;
};

} // namespace

Value workspaceArgument(RewriterBase &rewriter, Operation *op, int64_t words) {
  auto function = op->getParentOfType<FunctionOpInterface>();
  if (BlockArgument existing = findWorkspaceArgument(function))
    return workspaceWordsOf(function) >= words ? Value(existing) : Value();
  return appendWorkspace(
      rewriter, function, MemRefType::get({1, words}, rewriter.getI32Type()),
      rewriter.getNamedAttr(kWorkspaceAttrName, rewriter.getUnitAttr()));
}

Value rowWorkspaceArgument(RewriterBase &rewriter, Operation *op,
                           int64_t fixedWords, workspace_abi::RowWords rows) {
  auto function = op->getParentOfType<FunctionOpInterface>();
  if (!function || findWorkspaceArgument(function))
    return Value();
  return appendWorkspace(
      rewriter, function,
      MemRefType::get({1, ShapedType::kDynamic}, rewriter.getI32Type()),
      {rewriter.getNamedAttr(kWorkspaceAttrName, rewriter.getUnitAttr()),
       rewriter.getNamedAttr(
           workspace_abi::kRowsAttr,
           rewriter.getDenseI64ArrayAttr(
               {fixedWords, rows.wordsPerRow, rows.bitsPerElement}))});
}

void emitStatsIntoWorkspace(ImplicitLocOpBuilder &b, const Scheme &scheme,
                            int64_t threadsPerBlock, gpu::LaunchOp launch,
                            SmallVector<Value> acc, Value workspace,
                            bool withMinMax,
                            function_ref<void(const Stats &)> storeResults) {
  TensorReduceEmitter emitter(b, scheme, threadsPerBlock);
  emitter.foldIntoWorkspace(launch, launch.getWorkgroupAttributions().front(),
                            std::move(acc), workspace, withMinMax,
                            storeResults);
}

void emitTensorGlobalLaunch(RewriterBase &rewriter, ImplicitLocOpBuilder &b,
                            Operation *op, const Scheme &scheme, Value input,
                            Value global, int64_t threadsPerBlock) {
  // Two words (amax, ticket), the least any workspace has.
  Value workspace = workspaceArgument(
      rewriter, op, workspace_abi::reductionWords(/*withMinMax=*/false));
  TensorReduceEmitter emitter(b, scheme, threadsPerBlock);
  emitter.emitStatsLaunch(
      input, workspace, /*withMinMax=*/false, [&](const lowbit::Stats &stats) {
        Value zero = arith::ConstantIndexOp::create(b, 0);
        memref::StoreOp::create(b, emitter.computeGlobal(stats.absMax), global,
                                ValueRange{zero, zero});
      });
}

namespace {

/// Launch 1 through the workspace; the last block stores the i32 bits of
/// `stored(amax)` into word `word`, which stays for the launches after.
Value emitAmaxDerivedIntoWorkspace(
    RewriterBase &rewriter, ImplicitLocOpBuilder &b, Operation *op,
    const Scheme &scheme, Value input, int64_t word, int64_t threadsPerBlock,
    function_ref<Value(TensorReduceEmitter &, Value)> stored) {
  Value workspace = workspaceArgument(
      rewriter, op,
      std::max(word + 1, workspace_abi::reductionWords(/*withMinMax=*/false)));
  if (!workspace)
    return {};
  TensorReduceEmitter emitter(b, scheme, threadsPerBlock);
  emitter.emitStatsLaunch(
      input, workspace, /*withMinMax=*/false, [&](const lowbit::Stats &stats) {
        Value bits = arith::BitcastOp::create(b, b.getI32Type(),
                                              stored(emitter, stats.absMax));
        memref::StoreOp::create(
            b, bits, workspace,
            ValueRange{arith::ConstantIndexOp::create(b, 0),
                       arith::ConstantIndexOp::create(b, word)});
      });
  return workspace;
}

} // namespace

Value emitTensorGlobalIntoWorkspace(RewriterBase &rewriter,
                                    ImplicitLocOpBuilder &b, Operation *op,
                                    const Scheme &scheme, Value input,
                                    int64_t word, int64_t threadsPerBlock) {
  return emitAmaxDerivedIntoWorkspace(
      rewriter, b, op, scheme, input, word, threadsPerBlock,
      [](TensorReduceEmitter &emitter, Value amax) {
        return emitter.computeGlobal(amax);
      });
}

Value emitTensorAmaxIntoWorkspace(RewriterBase &rewriter,
                                  ImplicitLocOpBuilder &b, Operation *op,
                                  const Scheme &scheme, Value input,
                                  int64_t word, int64_t threadsPerBlock) {
  return emitAmaxDerivedIntoWorkspace(
      rewriter, b, op, scheme, input, word, threadsPerBlock,
      [](TensorReduceEmitter &, Value amax) { return amax; });
}

void emitWorkspaceWordReset(ImplicitLocOpBuilder &b, Value workspace,
                            int64_t word) {
  kit::KernelEmitter emitter(b);
  gpu::LaunchOp launch = emitter.launchBlocks(emitter.idx(1), 1);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(launch.getBody().front().getTerminator());
  memref::StoreOp::create(b, emitter.i32(0), workspace,
                          ValueRange{emitter.idx(0), emitter.idx(word)});
}

} // namespace lowbit::gpu_mapping

void lowbit::populateLowbitTensorReducePatterns(RewritePatternSet &patterns,
                                                int64_t threadsPerBlock) {
  patterns.add<gpu_mapping::QuantizePerTensorToGpu>(patterns.getContext(),
                                                    threadsPerBlock);
}
