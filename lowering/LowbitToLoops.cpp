//===- LowbitToLoops.cpp - lowbit.quantize/dequantize to loops ------------===//
//
// Rewrites each lowbit.quantize and lowbit.dequantize into scf loops over
// memrefs. The arithmetic, and its order, is the reference quantizer's
// (format/Quantize.cpp, docs/quantization.md): the kernels are compared
// with it bit for bit, so every formula below names its counterpart there.
//
// Bufferization boundary (docs/lowering.md): operands that come from
// `bufferization.to_tensor %m` are read from %m; results whose only use is
// `bufferization.materialize_in_destination %r in %m` are written straight
// into %m (no copy) and the boundary ops are erased. Other operands get a
// `bufferization.to_buffer`, other results a `memref.alloc` wrapped back
// with `bufferization.to_tensor`.
//
// Loop structure: an outer scf.parallel over independent work units (scale
// groups, or rows x packed bytes) and inner scf.for loops over elements. A
// dynamic per-tensor amax (per-tensor scales, and the computed NVFP4 global
// scale) is its own scf.parallel + scf.reduce nest, which makes one extra
// pass over the input.
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"
#include "lowering/ScaleMath.h"

#include "dialect/LowbitOps.h"
#include "format/Format.h"
#include "format/Scheme.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include "llvm/Support/Debug.h"

#include <algorithm>
#include <cfloat>
#include <functional>
#include <limits>
#include <optional>

#define DEBUG_TYPE "lowbit-to-loops"

namespace lowbit {
#define GEN_PASS_DEF_LOWBITTOLOOPS
#include "lowering/Passes.h.inc"
} // namespace lowbit

using namespace mlir;
namespace ld = lowbit::dialect;

namespace {

using lowbit::GroupParams;
using lowbit::ScaleKind;
using lowbit::Stats;

/// Rows and columns of one unit of the scale grid along each axis: either
/// the whole axis or a fixed number of elements.
struct AxisTiling {
  bool whole = false;
  int64_t size = 1;
};

/// Emits the loop nests; the per-group and per-element arithmetic is
/// ScaleMath's (shared with lowbit-to-gpu).
class KernelEmitter : public lowbit::ScaleMath {
public:
  KernelEmitter(ImplicitLocOpBuilder &builder, const lowbit::Scheme &scheme)
      : ScaleMath(builder, scheme) {
    const lowbit::ScaleSpec &scale = scheme.scale;
    switch (scale.granularity) {
    case lowbit::Granularity::PerTensor:
      rowTiling = {true, 0};
      colTiling = {true, 0};
      break;
    case lowbit::Granularity::PerToken:
      colTiling = {true, 0};
      break;
    case lowbit::Granularity::PerChannel:
      if (scale.axis == 0)
        colTiling = {true, 0};
      else
        rowTiling = {true, 0};
      break;
    case lowbit::Granularity::Group:
      if (scale.axis == 1)
        colTiling = {false, scale.groupSize};
      else
        rowTiling = {false, scale.groupSize};
      break;
    case lowbit::Granularity::Block:
      rowTiling = {false, scale.blockRows};
      colTiling = {false, scale.blockCols};
      break;
    }
  }

  /// Sets the logical tensor's [rows, cols] (index values).
  void setShape(Value rowsValue, Value colsValue) {
    rows = rowsValue;
    cols = colsValue;
    unitRows = unitCount(rows, rowTiling);
    unitCols = unitCount(cols, colTiling);
    if (scheme.scale.layout == lowbit::ScaleLayout::Swizzle128x4) {
      storedRows = roundUp(unitRows, 128);
      storedCols = roundUp(unitCols, 4);
    } else {
      storedRows = unitRows;
      storedCols = unitCols;
    }
  }

  Value packedCols() {
    return scheme.packing == lowbit::Packing::Nibble ? ceilDiv(cols, idx(2))
                                                     : cols;
  }
  std::pair<Value, Value> storedScaleShape() {
    return {storedRows, storedCols};
  }

  //===--------------------------------------------------------------------===//
  // Quantize
  //===--------------------------------------------------------------------===//

  void emitQuantize(Value input, Value codes, Value scales, Value zeros,
                    Value global, bool globalIsResult) {
    inputBuffer = input;
    codesBuffer = codes;
    scalesBuffer = scales;
    zerosBuffer = zeros;
    globalBuffer = global;
    bool isDynamic = scheme.scale.mode == lowbit::ScaleMode::Dynamic;

    Value globalValue;
    if (kind == ScaleKind::GlobalDecode || kind == ScaleKind::GlobalEncode) {
      if (globalIsResult) {
        // Pass 1: the tensor's amax, for the second-level scale.
        Stats tensorStats = emitTensorReduction(/*withMinMax=*/false);
        globalValue = computeGlobal(tensorStats.absMax);
        memref::StoreOp::create(b, globalValue, globalBuffer,
                                globalIndices(globalBuffer));
      } else {
        globalValue = loadGlobal();
      }
    }

    if (!isDynamic) {
      emitEncodeAll([&](Value row, Value col) {
        return loadParams(row, col, globalValue);
      });
      return;
    }

    if (scheme.scale.layout == lowbit::ScaleLayout::Swizzle128x4)
      emitZeroFill(scalesBuffer);

    if (scheme.scale.granularity == lowbit::Granularity::PerTensor) {
      Stats stats = emitTensorReduction(
          /*withMinMax=*/scheme.scale.rule == lowbit::ScaleRule::MinMax);
      GroupParams params = pickAndStore(stats, idx(0), idx(0), globalValue);
      emitEncodeAll([&](Value, Value) { return params; });
      return;
    }

    // One scf.parallel over scale groups; each reduces its elements, picks
    // and stores the scale and, when whole bytes belong to the group, also
    // converts them, so the input is read once from memory.
    bool fused = encodesWholeBytes();
    auto unitLoop = scf::ParallelOp::create(b, ValueRange{idx(0), idx(0)},
                                            ValueRange{unitRows, unitCols},
                                            ValueRange{idx(1), idx(1)});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(unitLoop.getBody()->getTerminator());
      Value unitRow = unitLoop.getInductionVars()[0];
      Value unitCol = unitLoop.getInductionVars()[1];
      auto [rowBegin, rowEnd] = unitRange(unitRow, rows, rowTiling);
      auto [colBegin, colEnd] = unitRange(unitCol, cols, colTiling);
      Stats stats =
          emitRangeReduction(rowBegin, rowEnd, colBegin, colEnd,
                             scheme.scale.rule == lowbit::ScaleRule::MinMax);
      GroupParams params = pickAndStore(stats, unitRow, unitCol, globalValue);
      if (fused)
        emitEncodeRange(rowBegin, rowEnd, colBegin, colEnd,
                        [&](Value, Value) { return params; });
    }
    if (fused)
      return;
    // Nibble packing with groups whose column start can be odd (odd group
    // width, or one group per column): two groups share a byte, so the
    // conversion is a second nest over rows x bytes that reads the stored
    // scales back.
    emitEncodeAll([&](Value row, Value col) {
      return loadParams(row, col, globalValue);
    });
  }

  //===--------------------------------------------------------------------===//
  // Dequantize
  //===--------------------------------------------------------------------===//

  void emitDequantize(Value codes, Value scales, Value zeros, Value global,
                      Value output) {
    codesBuffer = codes;
    scalesBuffer = scales;
    zerosBuffer = zeros;
    globalBuffer = global;
    Value globalValue;
    if (kind == ScaleKind::GlobalDecode || kind == ScaleKind::GlobalEncode)
      globalValue = loadGlobal();
    Type outputType = cast<MemRefType>(output.getType()).getElementType();

    auto loop = scf::ParallelOp::create(b, ValueRange{idx(0), idx(0)},
                                        ValueRange{rows, packedCols()},
                                        ValueRange{idx(1), idx(1)});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    Value row = loop.getInductionVars()[0];
    Value byteCol = loop.getInductionVars()[1];
    Value byte =
        memref::LoadOp::create(b, codesBuffer, ValueRange{row, byteCol});
    auto storeOne = [&](Value col, Value code) {
      GroupParams params = loadParams(row, col, globalValue);
      Value value = dequantizeValue(code, params);
      if (outputType != b.getF32Type()) {
        // A NaN becomes the canonical 0x7fff that the GPU's cvt.rn and
        // CUDA's host conversions give, on every backend (docs/numerics.md).
        Value isNan =
            arith::CmpFOp::create(b, arith::CmpFPredicate::UNO, value, value);
        auto halfType = cast<FloatType>(outputType);
        Value canonicalNan = arith::ConstantOp::create(
            b, b.getFloatAttr(halfType, APFloat(halfType.getFloatSemantics(),
                                                APInt(16, 0x7fff))));
        value = arith::SelectOp::create(
            b, isNan, canonicalNan,
            arith::TruncFOp::create(b, outputType, value));
      }
      memref::StoreOp::create(b, value, output, ValueRange{row, col});
    };
    if (scheme.packing == lowbit::Packing::Byte) {
      storeOne(byteCol, byte);
      return;
    }
    Value lowCol = arith::MulIOp::create(b, byteCol, idx(2));
    storeOne(lowCol, arith::AndIOp::create(b, byte, i8(0xF)));
    Value highCol = arith::AddIOp::create(b, lowCol, idx(1));
    Value hasHigh =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, highCol, cols);
    auto ifHigh = scf::IfOp::create(b, hasHigh, /*withElseRegion=*/false);
    b.setInsertionPoint(ifHigh.thenBlock()->getTerminator());
    storeOne(highCol, arith::ShRUIOp::create(b, byte, i8(4)));
  }

private:
  //===--------------------------------------------------------------------===//
  // Constants and index arithmetic
  //===--------------------------------------------------------------------===//

  // idx and ceilDiv are kit::KernelEmitter's.
  Value roundUp(Value value, int64_t multiple) {
    return arith::MulIOp::create(b, ceilDiv(value, idx(multiple)),
                                 idx(multiple));
  }
  Value unitCount(Value dim, AxisTiling tiling) {
    return tiling.whole ? idx(1) : ceilDiv(dim, idx(tiling.size));
  }
  std::pair<Value, Value> unitRange(Value unit, Value dim, AxisTiling tiling) {
    if (tiling.whole)
      return {idx(0), dim};
    Value begin = arith::MulIOp::create(b, unit, idx(tiling.size));
    Value end = arith::MinUIOp::create(
        b, arith::AddIOp::create(b, begin, idx(tiling.size)), dim);
    return {begin, end};
  }
  Value unitOf(Value index, AxisTiling tiling) {
    if (tiling.whole)
      return idx(0);
    if (tiling.size == 1)
      return index;
    return arith::DivUIOp::create(b, index, idx(tiling.size));
  }

  /// Whether every byte of packed codes belongs to one group, so that a
  /// group can write its own bytes (no two parallel units share a byte).
  bool encodesWholeBytes() const {
    if (scheme.packing == lowbit::Packing::Byte)
      return true;
    return colTiling.whole || colTiling.size % 2 == 0;
  }

  /// Indices into the stored scale tensor of group (unitRow, unitCol): the
  /// row-major grid, or the Blackwell 128x4 tile layout (SEMANTICS.md:
  /// ((m/128)*ceil(K/4) + k/4)*512 + (m%32)*16 + ((m/32)%4)*4 + k%4).
  SmallVector<Value, 2> scaleIndices(Value unitRow, Value unitCol) {
    if (scheme.scale.layout != lowbit::ScaleLayout::Swizzle128x4)
      return {unitRow, unitCol};
    auto mul = [&](Value x, int64_t c) {
      return arith::MulIOp::create(b, x, idx(c)).getResult();
    };
    auto div = [&](Value x, int64_t c) {
      return arith::DivUIOp::create(b, x, idx(c)).getResult();
    };
    auto rem = [&](Value x, int64_t c) {
      return arith::RemUIOp::create(b, x, idx(c)).getResult();
    };
    auto add = [&](Value x, Value y) {
      return arith::AddIOp::create(b, x, y).getResult();
    };
    Value tilesPerRow = ceilDiv(unitCols, idx(4));
    Value tile = add(arith::MulIOp::create(b, div(unitRow, 128), tilesPerRow),
                     div(unitCol, 4));
    Value offset = add(add(mul(tile, 512), mul(rem(unitRow, 32), 16)),
                       add(mul(rem(div(unitRow, 32), 4), 4), rem(unitCol, 4)));
    return {arith::DivUIOp::create(b, offset, storedCols),
            arith::RemUIOp::create(b, offset, storedCols)};
  }

  SmallVector<Value, 2> globalIndices(Value buffer) {
    int64_t rank = cast<MemRefType>(buffer.getType()).getRank();
    return SmallVector<Value, 2>(rank, idx(0));
  }
  Value loadGlobal() {
    return memref::LoadOp::create(b, globalBuffer, globalIndices(globalBuffer));
  }

  //===--------------------------------------------------------------------===//
  // Statistics
  //===--------------------------------------------------------------------===//

  Value loadInput(Value row, Value col) {
    Value value = memref::LoadOp::create(b, inputBuffer, ValueRange{row, col});
    if (value.getType() != b.getF32Type())
      value = arith::ExtFOp::create(b, b.getF32Type(), value); // exact
    return value;
  }

  /// Sequential statistics of one group: scf.for over its rows and columns.
  Stats emitRangeReduction(Value rowBegin, Value rowEnd, Value colBegin,
                           Value colEnd, bool withMinMax) {
    SmallVector<Value> init(withMinMax ? 3 : 1, f32(0.0f));
    auto rowLoop = scf::ForOp::create(
        b, rowBegin, rowEnd, idx(1), init,
        [&](OpBuilder &, Location, Value row, ValueRange rowAcc) {
          auto colLoop = scf::ForOp::create(
              b, colBegin, colEnd, idx(1), rowAcc,
              [&](OpBuilder &, Location, Value col, ValueRange acc) {
                scf::YieldOp::create(
                    b, accumulate(acc, loadInput(row, col), withMinMax));
              });
          scf::YieldOp::create(b, colLoop.getResults());
        });
    return toStats(rowLoop.getResults(), withMinMax);
  }

  /// Statistics of the whole tensor: scf.parallel over rows, each row
  /// reduced by an scf.for, rows combined by scf.reduce. max and min are
  /// exact and order-independent, so the result equals a sequential scan.
  Stats emitTensorReduction(bool withMinMax) {
    return emitTensorStats(rows, cols, withMinMax, [&](Value row, Value col) {
      return loadInput(row, col);
    });
  }

  //===--------------------------------------------------------------------===//
  // Storing and loading scales (the arithmetic is ScaleMath's)
  //===--------------------------------------------------------------------===//

  /// Picks and stores the scale (and zero point) of group (unitRow,
  /// unitCol); returns what its elements' conversion needs.
  GroupParams pickAndStore(const Stats &stats, Value unitRow, Value unitCol,
                           Value global) {
    SmallVector<Value, 2> indices = scaleIndices(unitRow, unitCol);
    Value stored = pickScale(stats, global);
    memref::StoreOp::create(b, stored, scalesBuffer, indices);
    GroupParams params;
    params.scale = decodeScale(stored);
    params.global = global;
    if (kind == ScaleKind::Asymmetric) {
      Value zero = pickZero(stats.min, params.scale);
      memref::StoreOp::create(b, zero, zerosBuffer, indices);
      params.zero = arith::ExtUIOp::create(b, b.getI32Type(), zero);
    }
    return params;
  }

  /// What element (row, col) needs, read back from the stored scales.
  GroupParams loadParams(Value row, Value col, Value global) {
    SmallVector<Value, 2> indices =
        scaleIndices(unitOf(row, rowTiling), unitOf(col, colTiling));
    GroupParams params;
    params.scale =
        decodeScale(memref::LoadOp::create(b, scalesBuffer, indices));
    params.global = global;
    if (kind == ScaleKind::Asymmetric) {
      Value zero = memref::LoadOp::create(b, zerosBuffer, indices);
      params.zero = arith::ExtUIOp::create(b, b.getI32Type(), zero);
    }
    return params;
  }

  //===--------------------------------------------------------------------===//
  // Elements
  //===--------------------------------------------------------------------===//

  using ParamsAt = std::function<GroupParams(Value row, Value col)>;

  /// Converts the elements of packed byte (row, byteCol), whose columns
  /// end before `colEnd`, and stores the byte.
  void emitEncodeByte(Value row, Value byteCol, Value colEnd,
                      const ParamsAt &paramsAt) {
    if (scheme.packing == lowbit::Packing::Byte) {
      Value code =
          quantizeValue(loadInput(row, byteCol), paramsAt(row, byteCol));
      memref::StoreOp::create(b, code, codesBuffer, ValueRange{row, byteCol});
      return;
    }
    // Element 0 in the low nibble (SEMANTICS.md, Packing).
    Value lowCol = arith::MulIOp::create(b, byteCol, idx(2));
    Value low = arith::AndIOp::create(
        b, quantizeValue(loadInput(row, lowCol), paramsAt(row, lowCol)),
        i8(0xF));
    Value highCol = arith::AddIOp::create(b, lowCol, idx(1));
    Value hasHigh =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, highCol, colEnd);
    // A ragged last column leaves the high nibble zero.
    auto ifHigh = scf::IfOp::create(b, b.getI8Type(), hasHigh,
                                    /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifHigh.thenBlock());
      Value high =
          quantizeValue(loadInput(row, highCol), paramsAt(row, highCol));
      scf::YieldOp::create(
          b, Value(arith::ShLIOp::create(
                 b, arith::AndIOp::create(b, high, i8(0xF)), i8(4))));
      b.setInsertionPointToStart(ifHigh.elseBlock());
      scf::YieldOp::create(b, i8(0));
    }
    Value byte = arith::OrIOp::create(b, low, ifHigh.getResult(0));
    memref::StoreOp::create(b, byte, codesBuffer, ValueRange{row, byteCol});
  }

  /// Converts every element: scf.parallel over rows x packed bytes.
  void emitEncodeAll(const ParamsAt &paramsAt) {
    auto loop = scf::ParallelOp::create(b, ValueRange{idx(0), idx(0)},
                                        ValueRange{rows, packedCols()},
                                        ValueRange{idx(1), idx(1)});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    emitEncodeByte(loop.getInductionVars()[0], loop.getInductionVars()[1], cols,
                   paramsAt);
  }

  /// Converts the elements of one group: scf.for over its rows and bytes.
  /// Only called when the group owns whole bytes (encodesWholeBytes).
  void emitEncodeRange(Value rowBegin, Value rowEnd, Value colBegin,
                       Value colEnd, const ParamsAt &paramsAt) {
    Value byteBegin = colBegin, byteEnd = colEnd;
    if (scheme.packing == lowbit::Packing::Nibble) {
      byteBegin = arith::DivUIOp::create(b, colBegin, idx(2));
      byteEnd = ceilDiv(colEnd, idx(2));
    }
    scf::ForOp::create(
        b, rowBegin, rowEnd, idx(1), ValueRange{},
        [&](OpBuilder &, Location, Value row, ValueRange) {
          scf::ForOp::create(
              b, byteBegin, byteEnd, idx(1), ValueRange{},
              [&](OpBuilder &, Location, Value byteCol, ValueRange) {
                emitEncodeByte(row, byteCol, colEnd, paramsAt);
                scf::YieldOp::create(b);
              });
          scf::YieldOp::create(b);
        });
  }

  /// The swizzled layout's padding must read as zero.
  void emitZeroFill(Value buffer) {
    Type elementType = cast<MemRefType>(buffer.getType()).getElementType();
    Value zero = arith::ConstantOp::create(b, b.getZeroAttr(elementType));
    auto loop = scf::ParallelOp::create(b, ValueRange{idx(0), idx(0)},
                                        ValueRange{storedRows, storedCols},
                                        ValueRange{idx(1), idx(1)});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    memref::StoreOp::create(b, zero, buffer, loop.getInductionVars());
  }

  AxisTiling rowTiling, colTiling;
  Value rows, cols, unitRows, unitCols, storedRows, storedCols;
  Value inputBuffer, codesBuffer, scalesBuffer, zerosBuffer, globalBuffer;
};

//===----------------------------------------------------------------------===//
// The bufferization boundary
//===----------------------------------------------------------------------===//

MemRefType memrefTypeFor(Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  return MemRefType::get(type.getShape(), type.getElementType());
}

/// The buffer an operand tensor is read from.
Value bufferForOperand(ImplicitLocOpBuilder &b, Value tensor) {
  if (!tensor)
    return {};
  if (auto toTensor = tensor.getDefiningOp<bufferization::ToTensorOp>())
    return toTensor.getBuffer();
  return bufferization::ToBufferOp::create(b, memrefTypeFor(tensor), tensor,
                                           /*read_only=*/true);
}

/// Where a result is written: the destination of its one
/// materialize_in_destination (erased afterwards), or a new allocation
/// whose to_tensor replaces the result.
struct ResultBuffers {
  Operation *anchor;
  DominanceInfo &dominance;
  SmallVector<Operation *> boundaryOps;
  SmallVector<std::pair<Value, Value>> allocated; // (result, buffer)

  Value bufferFor(ImplicitLocOpBuilder &b, Value result, ArrayRef<Value> dims) {
    if (!result)
      return {};
    if (result.hasOneUse()) {
      auto materialize = dyn_cast<bufferization::MaterializeInDestinationOp>(
          *result.getUsers().begin());
      if (materialize && isa<MemRefType>(materialize.getDest().getType()) &&
          dominance.properlyDominates(materialize.getDest(), anchor)) {
        boundaryOps.push_back(materialize);
        return materialize.getDest();
      }
    }
    MemRefType type = memrefTypeFor(result);
    SmallVector<Value, 2> dynamicSizes;
    for (auto [position, size] : llvm::enumerate(type.getShape()))
      if (ShapedType::isDynamic(size))
        dynamicSizes.push_back(dims[position]);
    Value buffer = memref::AllocOp::create(b, type, dynamicSizes);
    allocated.push_back({result, buffer});
    return buffer;
  }

  /// Finishes the rewrite once the loops are emitted after `b`'s point.
  void finish(ImplicitLocOpBuilder &b) {
    for (Operation *op : boundaryOps)
      op->erase();
    for (auto [result, buffer] : allocated) {
      Value tensor = bufferization::ToTensorOp::create(
          b, result.getType(), buffer, /*restrict=*/true, /*writable=*/true);
      result.replaceAllUsesWith(tensor);
    }
  }
};

Value dimOf(ImplicitLocOpBuilder &b, Value buffer, int64_t dim) {
  auto type = cast<MemRefType>(buffer.getType());
  if (!type.isDynamicDim(dim))
    return arith::ConstantIndexOp::create(b, type.getDimSize(dim));
  return memref::DimOp::create(b, buffer, dim);
}

Value staticOrDim(ImplicitLocOpBuilder &b, int64_t size, Value buffer,
                  int64_t dim) {
  if (!ShapedType::isDynamic(size))
    return arith::ConstantIndexOp::create(b, size);
  return dimOf(b, buffer, dim);
}

/// Refusals shared by both ops: what the loops cannot express.
LogicalResult checkLowerable(Operation *op, const lowbit::Scheme &scheme) {
  if (lowbit::containerBits(scheme) > 8)
    return op->emitOpError()
           << "lowbit-to-loops handles codes of at most 8 bits; "
           << scheme.element.name() << " needs a 16-bit container";
  return success();
}

LogicalResult lowerQuantize(ld::QuantizeOp op, DominanceInfo &dominance) {
  lowbit::Scheme scheme = ld::toScheme(op.getScheme());
  if (failed(checkLowerable(op, scheme)))
    return failure();
  ImplicitLocOpBuilder b(op.getLoc(), op);
  KernelEmitter emitter(b, scheme);

  Value input = bufferForOperand(b, op.getInput());
  auto inputType = cast<RankedTensorType>(op.getInput().getType());
  Value rows = staticOrDim(b, inputType.getDimSize(0), input, 0);
  Value cols = staticOrDim(b, inputType.getDimSize(1), input, 1);
  emitter.setShape(rows, cols);

  ResultBuffers results{op, dominance, {}, {}};
  Value codes =
      results.bufferFor(b, op.getCodes(), {rows, emitter.packedCols()});
  auto [scaleRows, scaleCols] = emitter.storedScaleShape();
  Value one = arith::ConstantIndexOp::create(b, 1);
  Value scales =
      op.getStaticScales()
          ? bufferForOperand(b, op.getStaticScales())
          : results.bufferFor(b, op.getScales(), {scaleRows, scaleCols});
  Value zeros = op.getStaticZeros() ? bufferForOperand(b, op.getStaticZeros())
                                    : results.bufferFor(b, op.getZeros(),
                                                        {scaleRows, scaleCols});
  Value global = op.getStaticGlobal()
                     ? bufferForOperand(b, op.getStaticGlobal())
                     : results.bufferFor(b, op.getGlobal(), {one, one});
  emitter.emitQuantize(input, codes, scales, zeros, global,
                       /*globalIsResult=*/bool(op.getGlobal()));
  results.finish(b);
  op.erase();
  return success();
}

LogicalResult lowerDequantize(ld::DequantizeOp op, DominanceInfo &dominance) {
  lowbit::Scheme scheme = ld::toScheme(op.getScheme());
  if (failed(checkLowerable(op, scheme)))
    return failure();
  auto resultType = cast<RankedTensorType>(op.getResult().getType());
  ImplicitLocOpBuilder b(op.getLoc(), op);
  ResultBuffers results{op, dominance, {}, {}};

  // The logical column count: nibble-packed codes cannot tell an odd count
  // from the next even one, so a dynamic one must come from the
  // destination.
  Value output;
  Value codes = bufferForOperand(b, op.getCodes());
  Value rows = staticOrDim(b, resultType.getDimSize(0), codes, 0);
  Value cols;
  if (!resultType.isDynamicDim(1)) {
    cols = arith::ConstantIndexOp::create(b, resultType.getDimSize(1));
  } else if (scheme.packing == lowbit::Packing::Byte) {
    cols = dimOf(b, codes, 1);
  } else {
    Value result = op.getResult();
    bufferization::MaterializeInDestinationOp materialize;
    if (result.hasOneUse())
      materialize = dyn_cast<bufferization::MaterializeInDestinationOp>(
          *result.getUsers().begin());
    if (!materialize || !isa<MemRefType>(materialize.getDest().getType()) ||
        !dominance.properlyDominates(materialize.getDest(), op)) {
      // Nothing was created that depends on the op yet except constants.
      return op.emitOpError()
             << "with nibble packing and a dynamic column count needs its "
                "result materialized into a destination memref: the codes "
                "cannot tell an odd column count from the next even one";
    }
    cols = dimOf(b, materialize.getDest(), 1);
  }
  output = results.bufferFor(b, op.getResult(), {rows, cols});

  KernelEmitter emitter(b, scheme);
  emitter.setShape(rows, cols);
  emitter.emitDequantize(codes, bufferForOperand(b, op.getScales()),
                         bufferForOperand(b, op.getZeros()),
                         bufferForOperand(b, op.getGlobal()), output);
  results.finish(b);
  op.erase();
  return success();
}

struct LowbitToLoopsPass
    : public lowbit::impl::LowbitToLoopsBase<LowbitToLoopsPass> {
  void runOnOperation() override {
    SmallVector<Operation *> targets;
    getOperation().walk([&](Operation *op) {
      if (isa<ld::QuantizeOp, ld::DequantizeOp>(op))
        targets.push_back(op);
    });
    DominanceInfo dominance(getOperation());
    bool failedAny = false;
    for (Operation *op : targets) {
      LogicalResult result =
          isa<ld::QuantizeOp>(op)
              ? lowerQuantize(cast<ld::QuantizeOp>(op), dominance)
              : lowerDequantize(cast<ld::DequantizeOp>(op), dominance);
      failedAny |= failed(result);
    }
    if (failedAny)
      return signalPassFailure();
    // Inputs read through their buffers leave dead to_tensor ops behind.
    SmallVector<Operation *> dead;
    getOperation().walk([&](bufferization::ToTensorOp toTensor) {
      if (toTensor->use_empty())
        dead.push_back(toTensor);
    });
    for (Operation *op : dead)
      op->erase();
  }
};

} // namespace
