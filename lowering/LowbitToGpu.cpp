//===- LowbitToGpu.cpp - lowbit.quantize/dequantize to gpu.launch ---------===//
//
// The GPU mapping of the kernels whose memory access it can shape for
// bandwidth (docs/gpu.md, "Thread mapping"): each lane moves 16 bytes with
// one vector load, the lanes of one scale group combine their statistics
// with warp shuffles, and codes and scales are written in the same pass.
// Everything else is left to lowbit-to-loops and the generic mapping of
// the GPU tail. The arithmetic is ScaleMath's, so the bits are the
// reference quantizer's (docs/quantization.md).
//
// Covered here:
//   - quantize, dynamic scales, groups of G along the row (axis 1, row-major
//     scales, no computed global scale): mxfp8, mxfp6_*, mxfp4, int4_g128,
//     int8_g64 and user schemes alike, when G is a power-of-two multiple of
//     the vector width with at most 32 lanes per group;
//   - dequantize with per-tensor, per-token (per-channel axis 0) or
//     row-group scales in the row-major layout.
//
//===----------------------------------------------------------------------===//

#include "lowering/GpuDecodeAttention.h"
#include "lowering/GpuFusedRows.h"
#include "lowering/GpuKernelBuilder.h"
#include "lowering/GpuKvAppend.h"
#include "lowering/GpuMatmul.h"
#include "lowering/GpuReductionBuilder.h"
#include "lowering/GpuTensorReduce.h"
#include "lowering/Passes.h"

#include "dialect/LowbitOps.h"
#include "format/Scheme.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace lowbit {
#define GEN_PASS_DEF_LOWBITTOGPU
#include "lowering/Passes.h.inc"
} // namespace lowbit

using namespace mlir;
namespace ld = lowbit::dialect;
using namespace lowbit::gpu_mapping;

namespace {

//===----------------------------------------------------------------------===//
// Which schemes this mapping covers
//===----------------------------------------------------------------------===//

/// Dequantize: scale granularities whose group index is computable per run
/// of 16 output bytes.
bool dequantizeCovered(const lowbit::Scheme &scheme, Type outputType) {
  const lowbit::ScaleSpec &scale = scheme.scale;
  if (scale.layout != lowbit::ScaleLayout::RowMajor)
    return false;
  switch (scale.granularity) {
  case lowbit::Granularity::PerTensor:
  case lowbit::Granularity::PerToken:
    return true;
  case lowbit::Granularity::PerChannel:
    return scale.axis == 0;
  case lowbit::Granularity::Group:
    return scale.axis == 1 &&
           scale.groupSize % (kVectorBytes / bytesOf(outputType)) == 0;
  case lowbit::Granularity::Block:
    return false;
  }
  return false;
}

//===----------------------------------------------------------------------===//
// Kernel bodies
//===----------------------------------------------------------------------===//

/// Emits one gpu.launch per op; the scale and element arithmetic is
/// ScaleMath's.
class GpuKernelEmitter : public GpuReductionBuilder {
public:
  using GpuReductionBuilder::GpuReductionBuilder;

  /// Dynamic row-group quantize: `lanes` lanes per group, each loading
  /// `width` consecutive elements.
  void emitQuantizeRowGroups(Value input, Value codes, Value scales,
                             Value zeros, Value global, Value rows, Value cols,
                             int64_t lanes) {
    Type inputType = cast<MemRefType>(input.getType()).getElementType();
    int64_t width = kVectorBytes / bytesOf(inputType);
    int64_t groupSize = scheme.scale.groupSize;
    bool nibble = scheme.packing == lowbit::Packing::Nibble;
    bool withMinMax = usesMinMax();

    Value groupsPerRow = ceilDiv(cols, idx(groupSize));
    Value groupCount = arith::MulIOp::create(b, rows, groupsPerRow);
    Value laneCount = arith::MulIOp::create(b, groupCount, idx(lanes));
    // Grid-stride over warp segments, so that the lanes of a warp run the
    // same trips (the shuffles need all of them) and each thread's setup
    // is paid once for several trips.
    gpu::LaunchOp launch = createGridStrideLaunch(laneCount);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(launch.getBody().front().getTerminator());
    Value warpLane =
        arith::RemUIOp::create(b, launch.getThreadIds().x, idx(kWarpSize));
    // A two-level scheme's global scale, stored before this launch: read
    // and prepared as a divisor once per thread.
    Value globalValue = hasGlobal() ? loadScalar(global) : Value();
    lowbit::PreparedDivisor globalDivisor =
        globalValue ? prepareGlobalDivisor(globalValue)
                    : lowbit::PreparedDivisor();
    Value warpStride =
        arith::DivUIOp::create(b, gridThreads(launch), idx(kWarpSize));
    Value warpCount = ceilDiv(laneCount, idx(kWarpSize));
    Value firstWarp =
        arith::DivUIOp::create(b, globalThread(launch), idx(kWarpSize));
    auto loop = scf::ForOp::create(b, firstWarp, warpCount, warpStride);
    b.setInsertionPoint(loop.getBody()->getTerminator());

    Value thread = arith::AddIOp::create(
        b, arith::MulIOp::create(b, loop.getInductionVar(), idx(kWarpSize)),
        warpLane);
    Value lane = arith::RemUIOp::create(b, thread, idx(lanes));
    Value group = arith::DivUIOp::create(b, thread, idx(lanes));
    Value row = arith::DivUIOp::create(b, group, groupsPerRow);
    Value groupCol = arith::RemUIOp::create(b, group, groupsPerRow);
    Value laneOffset = arith::MulIOp::create(b, lane, idx(width));
    Value groupOffset = arith::MulIOp::create(b, groupCol, idx(groupSize));
    Value col0 = arith::AddIOp::create(b, groupOffset, laneOffset);
    Value valid =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, group, groupCount);
    // The vector path needs 16-byte aligned rows of the input and
    // width-aligned rows of the codes; any other shape takes the scalar
    // path with per-element guards (the ragged tail).
    Value fast = andAll(
        {valid, isAligned(input, kVectorBytes),
         isAligned(codes, nibble ? width / 2 : width), divides(width, cols),
         arith::CmpIOp::create(b, arith::CmpIPredicate::ule,
                               arith::AddIOp::create(b, col0, idx(width)), cols)
             .getResult()});

    // Load: out-of-range elements read as 0, which no statistic sees (all
    // start at 0 and ignore NaN).
    auto loadIf = scf::IfOp::create(b, SmallVector<Type>(width, b.getF32Type()),
                                    fast, true);
    {
      OpBuilder::InsertionGuard thenGuard(b);
      b.setInsertionPointToStart(loadIf.thenBlock());
      Value vector = loadVector(VectorType::get({width}, inputType), input,
                                ValueRange{row, col0});
      SmallVector<Value> elements;
      for (int64_t i = 0; i < width; ++i)
        elements.push_back(widen(vector::ExtractOp::create(b, vector, i)));
      scf::YieldOp::create(b, elements);
      b.setInsertionPointToStart(loadIf.elseBlock());
      SmallVector<Value> scalars;
      for (int64_t i = 0; i < width; ++i) {
        Value col = arith::AddIOp::create(b, col0, idx(i));
        auto scalarIf = scf::IfOp::create(b, b.getF32Type(),
                                          inBounds(valid, col, cols), true);
        b.setInsertionPointToStart(scalarIf.thenBlock());
        scf::YieldOp::create(
            b, widen(memref::LoadOp::create(b, input, ValueRange{row, col})));
        b.setInsertionPointToStart(scalarIf.elseBlock());
        scf::YieldOp::create(b, f32(0.0f));
        b.setInsertionPointAfter(scalarIf);
        scalars.push_back(scalarIf.getResult(0));
      }
      scf::YieldOp::create(b, scalars);
    }
    SmallVector<Value> elements(loadIf.getResults());

    // Statistics: this lane's elements, then the group's lanes; the
    // scale, computed by every lane of the group, stored by the first.
    SmallVector<Value> acc(withMinMax ? 3 : 1, f32(0.0f));
    for (Value element : elements)
      acc = accumulate(acc, element, withMinMax);
    lowbit::GroupParams params =
        pickLaneGroupScale(std::move(acc), lanes, globalValue, globalDivisor,
                           valid, lane, scales, zeros, row, groupCol);
    storeChunkCodes(elements, params, codes, row, col0, cols, valid, fast,
                    nibble);
  }

  /// Dequantize: a grid-stride loop over warp segments of 512 code bytes.
  /// Lane i loads the segment's 16-byte chunk i (one coalesced
  /// ld.global.v4); the lanes exchange the chunks' pieces with shuffles so
  /// that each of a lane's 16-byte output stores lands next to its
  /// neighbours' (the warp writes 512 contiguous bytes per store).
  void emitDequantize(Value codes, Value scales, Value zeros, Value global,
                      Value output, Value rows, Value cols) {
    Type outputType = cast<MemRefType>(output.getType()).getElementType();
    int64_t width = kVectorBytes / bytesOf(outputType); // elements per store
    bool nibble = scheme.packing == lowbit::Packing::Nibble;
    int64_t perByte = nibble ? 2 : 1;
    int64_t elementsPerLane = kVectorBytes * perByte;
    // A lane's chunk splits into `stores` units, each one 16-byte store.
    int64_t stores = elementsPerLane / width;
    int64_t unitBytes = kVectorBytes / stores;
    const lowbit::ScaleSpec &scale = scheme.scale;
    bool perTensor = scale.granularity == lowbit::Granularity::PerTensor;
    // Groups shorter than a chunk (nvfp4 from nibbles): a scale per unit.
    bool scalePerUnit = scale.granularity == lowbit::Granularity::Group &&
                        scale.groupSize % elementsPerLane != 0;
    bool asymmetric = scaleKind() == lowbit::ScaleKind::Asymmetric;

    Value packedCols = nibble ? ceilDiv(cols, idx(2)) : cols;
    Value chunksPerRow = ceilDiv(packedCols, idx(kVectorBytes));
    Value laneCount = arith::MulIOp::create(b, rows, chunksPerRow);
    Value segmentCount = ceilDiv(laneCount, idx(kWarpSize));
    gpu::LaunchOp launch = createGridStrideLaunch(laneCount);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(launch.getBody().front().getTerminator());

    Value lane =
        arith::RemUIOp::create(b, launch.getThreadIds().x, idx(kWarpSize));
    Value firstSegment =
        arith::DivUIOp::create(b, globalThread(launch), idx(kWarpSize));
    Value segmentStep =
        arith::DivUIOp::create(b, gridThreads(launch), idx(kWarpSize));
    Value globalValue = hasGlobal() ? loadScalar(global) : Value();
    lowbit::GroupParams tensorParams;
    if (perTensor) {
      tensorParams = loadParams(scales, zeros, idx(0), idx(0));
      tensorParams.global = globalValue;
    }
    // Whole segments of 16-byte chunks in aligned rows take the exchange;
    // the rest (ragged rows, the last partial segment) one element at a
    // time.
    Value aligned =
        andAll({isAligned(codes, kVectorBytes), isAligned(output, kVectorBytes),
                divides(elementsPerLane, cols)});
    // The exchange (docs/gpu.md): in round r, lane i = stores * q + m reads
    // unit r of lane (stores / 32) * ((r + m) mod stores) + q, which is
    // its data for store (r + m) mod stores; rotating by m puts store k's
    // data in slot k.
    Value lane32 = arith::IndexCastUIOp::create(b, b.getI32Type(), lane);
    Value rotation = arith::AndIOp::create(b, lane32, i32(stores - 1));
    Value sourceBase = arith::DivUIOp::create(b, lane32, i32(stores));
    int64_t sourceStride = kWarpSize / stores;
    // The output as one row of rows * cols elements (identity layout).
    Value flatOutput = memref::ReinterpretCastOp::create(
        b, MemRefType::get({ShapedType::kDynamic}, outputType), output,
        OpFoldResult(b.getIndexAttr(0)),
        ArrayRef<OpFoldResult>{
            OpFoldResult(arith::MulIOp::create(b, rows, cols).getResult())},
        ArrayRef<OpFoldResult>{OpFoldResult(b.getIndexAttr(1))});

    auto loop = scf::ForOp::create(b, firstSegment, segmentCount, segmentStep);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    Value segment = loop.getInductionVar();
    Value segmentLane0 = arith::MulIOp::create(b, segment, idx(kWarpSize));
    Value chunk = arith::AddIOp::create(b, segmentLane0, lane);
    Value valid =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, chunk, laneCount);
    Value row = arith::DivUIOp::create(b, chunk, chunksPerRow);
    Value byteCol0 = arith::MulIOp::create(
        b,
        arith::SubIOp::create(b, chunk,
                              arith::MulIOp::create(b, row, chunksPerRow)),
        idx(kVectorBytes));
    Value col0 = arith::MulIOp::create(b, byteCol0, idx(perByte));
    Value fast = andAll(
        {aligned,
         arith::CmpIOp::create(
             b, arith::CmpIPredicate::ule,
             arith::AddIOp::create(b, segmentLane0, idx(kWarpSize)), laneCount)
             .getResult()});

    // What each store needs: its unit's code bytes and, unless per tensor,
    // its scale (and zero point).
    // Units travel as 32-bit pieces (one register per 4 code bytes).
    int64_t piecesPerUnit = std::max<int64_t>(1, unitBytes / 4);
    SmallVector<Type> unitTypes(stores * piecesPerUnit, b.getI32Type());
    if (!perTensor) {
      unitTypes.append(stores, b.getF32Type());
      if (asymmetric)
        unitTypes.append(stores, b.getI32Type());
    }
    auto paramsAt = [&](Value paramRow, Value col) {
      lowbit::GroupParams params = loadParams(scales, zeros, paramRow, col);
      return SmallVector<Value>{params.scale, params.zero};
    };
    auto yieldUnits = [&](ArrayRef<SmallVector<Value>> pieces,
                          ArrayRef<SmallVector<Value>> params) {
      SmallVector<Value> results;
      for (const SmallVector<Value> &unit : pieces)
        results.append(unit.begin(), unit.end());
      if (!perTensor)
        for (size_t position = 0; position < (asymmetric ? 2u : 1u); ++position)
          for (const SmallVector<Value> &unit : params)
            results.push_back(unit[position]);
      scf::YieldOp::create(b, results);
    };
    auto units = scf::IfOp::create(b, unitTypes, fast, true);
    {
      OpBuilder::InsertionGuard thenGuard(b);
      b.setInsertionPointToStart(units.thenBlock());
      Value packed = loadVector(VectorType::get({kVectorBytes}, b.getI8Type()),
                                codes, ValueRange{row, byteCol0});
      Value words = vector::BitCastOp::create(
          b, VectorType::get({kVectorBytes / 4}, b.getI32Type()), packed);
      // This lane's units as 32-bit pieces, and their parameters.
      SmallVector<SmallVector<Value>> ownPieces(stores), ownParams(stores);
      for (int64_t r = 0; r < stores; ++r) {
        if (unitBytes >= 4) {
          for (int64_t w = 0; w < unitBytes / 4; ++w)
            ownPieces[r].push_back(
                vector::ExtractOp::create(b, words, r * unitBytes / 4 + w));
        } else {
          Value word = vector::ExtractOp::create(b, words, r * unitBytes / 4);
          ownPieces[r].push_back(arith::ShRUIOp::create(
              b, word, i32(int32_t(8 * ((r * unitBytes) % 4)))));
        }
      }
      if (!perTensor) {
        if (scalePerUnit) {
          for (int64_t r = 0; r < stores; ++r)
            ownParams[r] =
                paramsAt(row, arith::AddIOp::create(b, col0, idx(r * width)));
        } else {
          ownParams.assign(stores, paramsAt(row, col0));
        }
      }
      // Round r: unit r of the source lane (and its parameters, when they
      // differ per unit).
      SmallVector<SmallVector<Value>> slots(stores);
      for (int64_t r = 0; r < stores; ++r) {
        Value source = arith::AddIOp::create(
            b,
            arith::MulIOp::create(
                b,
                arith::AndIOp::create(
                    b, arith::AddIOp::create(b, rotation, i32(r)),
                    i32(stores - 1)),
                i32(sourceStride)),
            sourceBase);
        for (Value piece : ownPieces[r])
          slots[r].push_back(shuffleIdx(piece, source));
        if (!perTensor && scalePerUnit)
          for (Value param : ownParams[r])
            if (param)
              slots[r].push_back(shuffleIdx(param, source));
      }
      // Rotate right by m: slot k holds store k's data.
      for (int64_t step = 1; step < stores; step *= 2) {
        Value bit = arith::CmpIOp::create(
            b, arith::CmpIPredicate::ne,
            arith::AndIOp::create(b, rotation, i32(step)), i32(0));
        SmallVector<SmallVector<Value>> next(stores);
        for (int64_t k = 0; k < stores; ++k)
          for (size_t position = 0; position < slots[k].size(); ++position)
            next[k].push_back(
                select(bit, slots[(k - step + stores) % stores][position],
                       slots[k][position]));
        slots = std::move(next);
      }
      SmallVector<SmallVector<Value>> pieces(stores), params(stores);
      size_t pieceCount = ownPieces[0].size();
      for (int64_t k = 0; k < stores; ++k) {
        pieces[k].assign(slots[k].begin(), slots[k].begin() + pieceCount);
        if (perTensor)
          continue;
        if (scalePerUnit) {
          params[k].assign(slots[k].begin() + pieceCount, slots[k].end());
          if (!asymmetric)
            params[k].push_back(Value());
          continue;
        }
        // One scale per chunk: store k's came from lane
        // k * stride + q.
        Value source =
            arith::AddIOp::create(b, i32(k * sourceStride), sourceBase);
        for (Value param : ownParams[0])
          params[k].push_back(param ? shuffleIdx(param, source) : Value());
      }
      yieldUnits(pieces, params);

      // The ragged path: this lane's own bytes, one guarded load each.
      b.setInsertionPointToStart(units.elseBlock());
      SmallVector<SmallVector<Value>> ownBytes(stores), slowParams(stores);
      for (int64_t k = 0; k < stores; ++k) {
        ownBytes[k].assign(piecesPerUnit, i32(0));
        for (int64_t j = 0; j < unitBytes; ++j) {
          Value byteCol =
              arith::AddIOp::create(b, byteCol0, idx(k * unitBytes + j));
          auto ifByte = scf::IfOp::create(
              b, b.getI8Type(), inBounds(valid, byteCol, packedCols), true);
          b.setInsertionPointToStart(ifByte.thenBlock());
          scf::YieldOp::create(
              b, memref::LoadOp::create(b, codes, ValueRange{row, byteCol})
                     .getResult());
          b.setInsertionPointToStart(ifByte.elseBlock());
          scf::YieldOp::create(b, i8(0));
          b.setInsertionPointAfter(ifByte);
          Value &piece = ownBytes[k][size_t(j / 4)];
          piece = arith::OrIOp::create(
              b, piece,
              arith::ShLIOp::create(b,
                                    arith::ExtUIOp::create(b, b.getI32Type(),
                                                           ifByte.getResult(0)),
                                    i32(int32_t(8 * (j % 4)))));
        }
        if (perTensor)
          continue;
        // Lanes and units past the tensor read the first scale instead.
        Value unitCol = arith::AddIOp::create(b, col0, idx(k * width));
        Value inside = inBounds(valid, unitCol, cols);
        slowParams[k] = paramsAt(select(inside, row, idx(0)),
                                 select(inside, unitCol, idx(0)));
      }
      yieldUnits(ownBytes, slowParams);
    }

    // Decode each unit (shared by both paths) and store it right away, so
    // that only one unit's values are live at a time.
    Value segmentElement0 =
        arith::MulIOp::create(b, segment, idx(kWarpSize * elementsPerLane));
    for (int64_t k = 0; k < stores; ++k) {
      lowbit::GroupParams params = tensorParams;
      if (!perTensor) {
        params.scale = units.getResult(stores * piecesPerUnit + k);
        if (asymmetric)
          params.zero = units.getResult(stores * piecesPerUnit + stores + k);
        params.global = globalValue;
      }
      SmallVector<Value> unitCodes;
      for (int64_t j = 0; j < unitBytes; ++j) {
        Value piece = units.getResult(k * piecesPerUnit + j / 4);
        Value byte = arith::TruncIOp::create(
            b, b.getI8Type(),
            arith::ShRUIOp::create(b, piece, i32(int32_t(8 * (j % 4)))));
        if (!nibble) {
          unitCodes.push_back(byte);
          continue;
        }
        unitCodes.push_back(arith::AndIOp::create(b, byte, i8(0xF)));
        unitCodes.push_back(arith::ShRUIOp::create(b, byte, i8(4)));
      }
      SmallVector<Value> values;
      for (int64_t i = 0; i < width; i += 2) {
        auto [first, second] =
            dequantizePair(unitCodes[i], unitCodes[i + 1], params);
        values.push_back(narrow(first, outputType));
        values.push_back(narrow(second, outputType));
      }
      auto storeIf = scf::IfOp::create(b, fast, true);
      OpBuilder::InsertionGuard storeGuard(b);
      b.setInsertionPoint(storeIf.thenBlock()->getTerminator());
      // Chunk 32k + stores * q + ((k - m) mod stores) of the segment's
      // output: the warp's lanes write a permutation of 32 neighbouring
      // chunks.
      Value slot = arith::AndIOp::create(
          b, arith::SubIOp::create(b, i32(k + stores), rotation),
          i32(stores - 1));
      Value outputChunk = arith::AddIOp::create(
          b, i32(kWarpSize * k),
          arith::AddIOp::create(
              b, arith::MulIOp::create(b, sourceBase, i32(stores)), slot));
      Value element = arith::AddIOp::create(
          b, segmentElement0,
          arith::MulIOp::create(
              b, arith::IndexCastUIOp::create(b, b.getIndexType(), outputChunk),
              idx(width)));
      Value vector = vector::FromElementsOp::create(
          b, VectorType::get({width}, outputType), values);
      storeVector(vector, flatOutput, ValueRange{element});
      // The ragged path: each element of this unit on its own.
      b.setInsertionPoint(storeIf.elseBlock()->getTerminator());
      for (int64_t i = 0; i < width; ++i) {
        Value col = arith::AddIOp::create(b, col0, idx(k * width + i));
        auto ifElement =
            scf::IfOp::create(b, inBounds(valid, col, cols), false);
        OpBuilder::InsertionGuard elementGuard(b);
        b.setInsertionPoint(ifElement.thenBlock()->getTerminator());
        memref::StoreOp::create(b, values[size_t(i)], output,
                                ValueRange{row, col});
      }
    }
  }
};

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

struct QuantizeRowGroupsToGpu : OpRewritePattern<ld::QuantizeOp> {
  QuantizeRowGroupsToGpu(MLIRContext *context, int64_t threadsPerBlock)
      : OpRewritePattern(context), threadsPerBlock(threadsPerBlock) {}

  LogicalResult matchAndRewrite(ld::QuantizeOp op,
                                PatternRewriter &rewriter) const override {
    lowbit::Scheme scheme = ld::toScheme(op.getScheme());
    if (scheme.scale.mode != lowbit::ScaleMode::Dynamic ||
        lowbit::containerBits(scheme) > 8)
      return rewriter.notifyMatchFailure(op, "not a row-group dynamic scheme");
    Value input = operandBuffer(op.getInput());
    if (!input)
      return rewriter.notifyMatchFailure(op, "input not from a memref");
    Type inputType = cast<MemRefType>(input.getType()).getElementType();
    int64_t lanes = lanesPerGroup(scheme, inputType);
    if (lanes == 0)
      return rewriter.notifyMatchFailure(op, "groups do not split in lanes");
    FailureOr<QuantizeDestinations> destinations =
        QuantizeDestinations::find(op);
    if (failed(destinations))
      return rewriter.notifyMatchFailure(op, "results not materialized");
    // A two-level scheme's global: given, or computed here (below).
    bufferization::MaterializeInDestinationOp computedGlobal;
    Value global;
    if (op.getGlobal()) {
      computedGlobal = resultDestination(op.getGlobal(), op);
      if (!computedGlobal)
        return rewriter.notifyMatchFailure(op, "global not materialized");
      global = computedGlobal.getDest();
    } else if (op.getStaticGlobal()) {
      global = operandBuffer(op.getStaticGlobal());
      if (!global)
        return rewriter.notifyMatchFailure(op, "global not from a memref");
    }

    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    b.setInsertionPoint(op);
    Value rows = dimOf(b, input, 0);
    Value cols = dimOf(b, input, 1);
    GpuKernelEmitter emitter(b, scheme, threadsPerBlock);
    if (computedGlobal)
      // Launch 1 of 2: the tensor amax and the stored global scale
      // (GpuTensorReduce.h); the group launch reads the global back.
      emitTensorGlobalLaunch(rewriter, b, op, scheme, input, global,
                             threadsPerBlock);
    emitter.emitQuantizeRowGroups(
        input, destinations->codes.getDest(), destinations->scales.getDest(),
        destinations->zerosBuffer(), global, rows, cols, lanes);
    if (computedGlobal)
      rewriter.eraseOp(computedGlobal);
    destinations->eraseWith(rewriter, op);
    return success();
  }

  int64_t threadsPerBlock;
};

struct DequantizeToGpu : OpRewritePattern<ld::DequantizeOp> {
  DequantizeToGpu(MLIRContext *context, int64_t threadsPerBlock)
      : OpRewritePattern(context), threadsPerBlock(threadsPerBlock) {}

  LogicalResult matchAndRewrite(ld::DequantizeOp op,
                                PatternRewriter &rewriter) const override {
    lowbit::Scheme scheme = ld::toScheme(op.getScheme());
    auto output = resultDestination(op.getResult(), op);
    if (!output || lowbit::containerBits(scheme) > 8)
      return rewriter.notifyMatchFailure(op, "result not materialized");
    Value outputBuffer = output.getDest();
    Type outputType = cast<MemRefType>(outputBuffer.getType()).getElementType();
    if (!dequantizeCovered(scheme, outputType))
      return rewriter.notifyMatchFailure(op, "granularity not covered");
    Value codes = operandBuffer(op.getCodes());
    Value scales = operandBuffer(op.getScales());
    Value zeros = operandBuffer(op.getZeros());
    Value global = operandBuffer(op.getGlobal());
    if (!codes || !scales || (op.getZeros() && !zeros) ||
        (op.getGlobal() && !global))
      return rewriter.notifyMatchFailure(op, "operands not from memrefs");

    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    b.setInsertionPoint(op);
    // The output gives the logical shape (nibble codes cannot tell an odd
    // column count from the next even one).
    Value rows = dimOf(b, outputBuffer, 0);
    Value cols = dimOf(b, outputBuffer, 1);
    GpuKernelEmitter emitter(b, scheme, threadsPerBlock);
    emitter.emitDequantize(codes, scales, zeros, global, outputBuffer, rows,
                           cols);
    rewriter.eraseOp(output);
    rewriter.eraseOp(op);
    return success();
  }

  int64_t threadsPerBlock;
};

struct LowbitToGpuPass : lowbit::impl::LowbitToGpuBase<LowbitToGpuPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    lowbit::populateLowbitToGpuPatterns(patterns, threadsPerBlock);
    // Each rewrite erases the op's materialize users as well, which the
    // greedy driver tracks (the walk driver would visit them after).
    GreedyRewriteConfig config;
    config.enableFolding(false)
        .setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled)
        .setStrictness(GreedyRewriteStrictness::ExistingOps);
    if (failed(
            applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      return signalPassFailure();
    // The to_tensor ops of the inputs are left for lowbit-to-loops, which
    // runs next and erases those without uses.
  }
};

} // namespace

void lowbit::populateLowbitToGpuPatterns(RewritePatternSet &patterns,
                                         int64_t threadsPerBlock) {
  patterns.add<QuantizeRowGroupsToGpu, DequantizeToGpu>(patterns.getContext(),
                                                        threadsPerBlock);
  populateLowbitTensorReducePatterns(patterns, threadsPerBlock);
  populateLowbitRowReducePatterns(patterns, threadsPerBlock);
  populateGpuFusedRowsPatterns(patterns, threadsPerBlock);
  populateGpuKvPatterns(patterns, threadsPerBlock);
  populateGpuDecodeAttentionPatterns(patterns);
  populateGpuMatmulPatterns(patterns);
}
