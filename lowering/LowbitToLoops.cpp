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

/// How the stored scales enter the element conversion; the same four cases
/// as the reference's ScaleKind (format/Quantize.cpp).
enum class ScaleKind { Symmetric, Asymmetric, GlobalDecode, GlobalEncode };

ScaleKind scaleKindOf(const lowbit::Scheme &scheme) {
  if (scheme.scale.zeroPoint)
    return ScaleKind::Asymmetric;
  switch (scheme.scale.globalScale) {
  case lowbit::GlobalScale::DecodeMultiplier:
    return ScaleKind::GlobalDecode;
  case lowbit::GlobalScale::EncodeReciprocal:
    return ScaleKind::GlobalEncode;
  case lowbit::GlobalScale::None:
    break;
  }
  return ScaleKind::Symmetric;
}

/// Per-group statistics. As in the reference, NaN is skipped and every
/// statistic starts at 0.
struct Stats {
  Value absMax, min, max;
};

/// What converting one element needs from its group.
struct GroupParams {
  Value scale;  ///< the stored scale, decoded to f32
  Value zero;   ///< i32 zero point (asymmetric only)
  Value global; ///< f32 global scale (two-level schemes only)
};

/// Rows and columns of one unit of the scale grid along each axis: either
/// the whole axis or a fixed number of elements.
struct AxisTiling {
  bool whole = false;
  int64_t size = 1;
};

class KernelEmitter {
public:
  KernelEmitter(ImplicitLocOpBuilder &builder, const lowbit::Scheme &scheme)
      : b(builder), scheme(scheme), kind(scaleKindOf(scheme)) {
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
    elementFormatAttr = ld::toFormatAttr(b.getContext(), scheme.element);
    if (auto format = lowbit::scaleTypeFormat(scale.type))
      scaleFormatAttr = ld::toFormatAttr(b.getContext(), *format);
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

  Value idx(int64_t value) { return arith::ConstantIndexOp::create(b, value); }
  Value f32(float value) {
    return arith::ConstantOp::create(b, b.getF32FloatAttr(value));
  }
  Value i32(int32_t value) {
    return arith::ConstantOp::create(b, b.getI32IntegerAttr(value));
  }
  Value i8(int32_t value) {
    return arith::ConstantOp::create(b, b.getI8IntegerAttr(int8_t(value)));
  }
  /// (value + divisor - 1) / divisor; arith.ceildivui would need
  /// arith-expand on every target.
  Value ceilDiv(Value value, Value divisor) {
    Value biased = arith::SubIOp::create(
        b, arith::AddIOp::create(b, value, divisor), idx(1));
    return arith::DivUIOp::create(b, biased, divisor);
  }
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
  // Float helpers that mirror the reference's std:: calls exactly
  //===--------------------------------------------------------------------===//

  Value select(Value condition, Value ifTrue, Value ifFalse) {
    return arith::SelectOp::create(b, condition, ifTrue, ifFalse);
  }
  Value cmpf(arith::CmpFPredicate predicate, Value lhs, Value rhs) {
    return arith::CmpFOp::create(b, predicate, lhs, rhs);
  }
  /// std::max(a, b): b if a < b, else a.
  Value stdMax(Value lhs, Value rhs) {
    return select(cmpf(arith::CmpFPredicate::OLT, lhs, rhs), rhs, lhs);
  }
  /// std::min(a, b): b if b < a, else a.
  Value stdMin(Value lhs, Value rhs) {
    return select(cmpf(arith::CmpFPredicate::OLT, rhs, lhs), rhs, lhs);
  }
  /// std::clamp(v, lo, hi): lo if v < lo, hi if hi < v, else v.
  Value stdClamp(Value value, Value low, Value high) {
    return select(
        cmpf(arith::CmpFPredicate::OLT, value, low), low,
        select(cmpf(arith::CmpFPredicate::OLT, high, value), high, value));
  }
  Value isNan(Value value) {
    return cmpf(arith::CmpFPredicate::UNO, value, value);
  }
  Value isInf(Value value) {
    Value magnitude = math::AbsFOp::create(b, value);
    return cmpf(arith::CmpFPredicate::OEQ, magnitude,
                f32(std::numeric_limits<float>::infinity()));
  }
  Value divf(Value lhs, Value rhs) {
    return arith::DivFOp::create(b, lhs, rhs);
  }
  Value mulf(Value lhs, Value rhs) {
    return arith::MulFOp::create(b, lhs, rhs);
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

  /// Folds one element into the statistics (reference: gatherStats).
  SmallVector<Value> accumulate(ValueRange acc, Value value, bool withMinMax) {
    Value nan = isNan(value);
    SmallVector<Value> next;
    Value magnitude = math::AbsFOp::create(b, value);
    next.push_back(select(nan, acc[0], stdMax(acc[0], magnitude)));
    if (withMinMax) {
      next.push_back(select(nan, acc[1], stdMin(acc[1], value)));
      next.push_back(select(nan, acc[2], stdMax(acc[2], value)));
    }
    return next;
  }

  Stats toStats(ValueRange values, bool withMinMax) {
    Stats stats{values[0], Value(), Value()};
    if (withMinMax) {
      stats.min = values[1];
      stats.max = values[2];
    }
    return stats;
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
    SmallVector<Value> init(withMinMax ? 3 : 1, f32(0.0f));
    auto loop = scf::ParallelOp::create(
        b, ValueRange{idx(0)}, ValueRange{rows}, ValueRange{idx(1)}, init,
        [&](OpBuilder &, Location, ValueRange ivs, ValueRange) {
          SmallVector<Value> rowInit(withMinMax ? 3 : 1, f32(0.0f));
          auto colLoop = scf::ForOp::create(
              b, idx(0), cols, idx(1), rowInit,
              [&](OpBuilder &, Location, Value col, ValueRange acc) {
                scf::YieldOp::create(
                    b, accumulate(acc, loadInput(ivs[0], col), withMinMax));
              });
          auto reduce = scf::ReduceOp::create(b, colLoop.getResults());
          for (auto [position, region] :
               llvm::enumerate(reduce.getReductions())) {
            Block &block = region.front();
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPointToEnd(&block);
            Value lhs = block.getArgument(0), rhs = block.getArgument(1);
            Value combined =
                position == 1 ? stdMin(lhs, rhs) : stdMax(lhs, rhs);
            scf::ReduceReturnOp::create(b, combined);
          }
        });
    return toStats(loop.getResults(), withMinMax);
  }

  //===--------------------------------------------------------------------===//
  // Scales (reference: computeGlobal, pickScaleCode, pickZero)
  //===--------------------------------------------------------------------===//

  float quantMax() const { return float(lowbit::quantMax(scheme)); }

  /// The stored second-level scale, always finite and positive.
  Value computeGlobal(Value tensorAbsMax) {
    double product = lowbit::quantMax(scheme) *
                     lowbit::scaleTypeFormat(scheme.scale.type)->maxValue();
    Value denominator = f32(float(std::min(product, double(FLT_MAX))));
    Value raw = kind == ScaleKind::GlobalDecode
                    ? divf(tensorAbsMax, denominator)
                    : divf(denominator, tensorAbsMax);
    // sanitizeGlobal: 0 and NaN give 1, inf gives the f32 max. For the
    // encode convention an all-zero tensor (2688 / 0 = inf) gives 1.
    Value sanitized = select(
        isInf(raw), f32(FLT_MAX),
        select(arith::OrIOp::create(
                   b, cmpf(arith::CmpFPredicate::OEQ, raw, f32(0)), isNan(raw)),
               f32(1.0f), raw));
    if (kind == ScaleKind::GlobalEncode)
      sanitized = select(cmpf(arith::CmpFPredicate::OEQ, tensorAbsMax, f32(0)),
                         f32(1.0f), sanitized);
    return sanitized;
  }

  Type storedScaleType() const {
    switch (scheme.scale.type) {
    case lowbit::ScaleType::F32:
      return b.getF32Type();
    case lowbit::ScaleType::F16:
      return b.getF16Type();
    case lowbit::ScaleType::BF16:
      return b.getBF16Type();
    case lowbit::ScaleType::E8M0:
    case lowbit::ScaleType::UE4M3:
      return b.getI8Type();
    }
    return {};
  }

  /// Rounds an f32 scale to the scale type, RNE and saturating (reference:
  /// encodeScale); returns the value as it is stored in the scale tensor.
  Value encodeScale(Value value, StringRef rounding = "rn") {
    switch (scheme.scale.type) {
    case lowbit::ScaleType::F32:
      // floatScaleCode: a scale is never inf.
      return select(isInf(value),
                    math::CopySignOp::create(b, f32(FLT_MAX), value), value);
    case lowbit::ScaleType::F16:
    case lowbit::ScaleType::BF16: {
      // Saturating, unlike arith.truncf: an f16 scale of 1e6 is 65504.
      Value code = ld::EncodeOp::create(b, b.getI16Type(), value,
                                        scaleFormatAttr, true, rounding);
      return arith::BitcastOp::create(b, storedScaleType(), code);
    }
    case lowbit::ScaleType::E8M0:
    case lowbit::ScaleType::UE4M3:
      return ld::EncodeOp::create(b, b.getI8Type(), value, scaleFormatAttr,
                                  true, rounding);
    }
    return {};
  }

  /// The f32 value of a stored scale (reference: decodeScale).
  Value decodeScale(Value stored) {
    switch (scheme.scale.type) {
    case lowbit::ScaleType::F32:
      return stored;
    case lowbit::ScaleType::F16:
    case lowbit::ScaleType::BF16:
      return arith::ExtFOp::create(b, b.getF32Type(), stored); // exact
    case lowbit::ScaleType::E8M0:
    case lowbit::ScaleType::UE4M3:
      return ld::DecodeOp::create(b, b.getF32Type(), stored, scaleFormatAttr);
    }
    return {};
  }

  /// The stored form of 1.0 in the scale type (oneScaleCode).
  Value storedOne() {
    switch (scheme.scale.type) {
    case lowbit::ScaleType::F32:
      return f32(1.0f);
    case lowbit::ScaleType::F16:
      return arith::ConstantOp::create(b, b.getF16FloatAttr(1.0f));
    case lowbit::ScaleType::BF16:
      return arith::ConstantOp::create(b, b.getFloatAttr(b.getBF16Type(), 1.0));
    case lowbit::ScaleType::E8M0:
    case lowbit::ScaleType::UE4M3:
      return i8(int32_t(
          lowbit::encode(*lowbit::scaleTypeFormat(scheme.scale.type), 1.0f)));
    }
    return {};
  }

  /// A stored scale whose value is 0 (underflow, or an all-zero group)
  /// becomes 1, so every stored scale is finite and positive.
  Value replaceZeroScale(Value stored) {
    Value isZero =
        cmpf(arith::CmpFPredicate::OEQ, decodeScale(stored), f32(0.0f));
    return select(isZero, storedOne(), stored);
  }

  /// OCP MX FLOOR: k = floor(log2(amax)) - emax, clamped to [-127, 127];
  /// floor(log2) is the f32 exponent (ilogb), subnormals included.
  Value floorScaleCode(Value absMax) {
    int emax = lowbit::elementEmax(scheme.element);
    Value bits = arith::BitcastOp::create(b, b.getI32Type(), absMax);
    Value exponentField = arith::AndIOp::create(
        b, arith::ShRUIOp::create(b, bits, i32(23)), i32(0xFF));
    Value mantissa = arith::AndIOp::create(b, bits, i32(0x7FFFFF));
    Value normalExponent = arith::SubIOp::create(b, exponentField, i32(127));
    // A subnormal's leading 1 is at bit 31 - clz; its value is 2^(bit-149).
    Value topBit = arith::SubIOp::create(
        b, i32(31), math::CountLeadingZerosOp::create(b, mantissa));
    Value subnormalExponent = arith::SubIOp::create(b, topBit, i32(149));
    Value isSubnormal = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                              exponentField, i32(0));
    Value exponent = select(isSubnormal, subnormalExponent, normalExponent);
    // The reference maps inf to exponent 127 + emax, i.e. k = 127.
    exponent = select(isInf(absMax), i32(127 + emax), exponent);
    Value k = arith::SubIOp::create(b, exponent, i32(emax));
    k = arith::MaxSIOp::create(b, arith::MinSIOp::create(b, k, i32(127)),
                               i32(-127));
    Value code = arith::TruncIOp::create(b, b.getI8Type(),
                                         arith::AddIOp::create(b, k, i32(127)));
    // An all-zero block gives code 0x00 (2^-127).
    return select(cmpf(arith::CmpFPredicate::OEQ, absMax, f32(0)), i8(0), code);
  }

  /// The stored scale of one group, from its statistics.
  Value pickScale(const Stats &stats, Value global) {
    const lowbit::ScaleSpec &spec = scheme.scale;
    Value qmax = f32(quantMax());
    switch (spec.rule) {
    case lowbit::ScaleRule::E8M0Floor:
      return floorScaleCode(stats.absMax);
    case lowbit::ScaleRule::E8M0RCeil:
      // The smallest power of two >= amax / max: e8m0 rounding up.
      return encodeScale(divf(stats.absMax, qmax), "rp");
    case lowbit::ScaleRule::MinMax: {
      Value low = stdMin(stats.min, f32(0.0f));
      Value high = stdMax(stats.max, f32(0.0f));
      Value range = arith::SubFOp::create(b, high, low);
      return replaceZeroScale(encodeScale(divf(range, qmax)));
    }
    case lowbit::ScaleRule::AbsMax:
      break;
    }
    if (kind == ScaleKind::GlobalDecode || kind == ScaleKind::GlobalEncode) {
      lowbit::Format scaleFormat = *lowbit::scaleTypeFormat(spec.type);
      float scaleMin =
          float(scaleFormat.hasSubnormals() ? scaleFormat.minSubnormal()
                                            : scaleFormat.minNormal());
      float scaleMax = float(scaleFormat.maxValue());
      Value perQmax = divf(stats.absMax, qmax);
      Value wanted = kind == ScaleKind::GlobalDecode ? divf(perQmax, global)
                                                     : mulf(perQmax, global);
      return encodeScale(stdClamp(wanted, f32(scaleMin), f32(scaleMax)));
    }
    return replaceZeroScale(encodeScale(divf(stats.absMax, qmax)));
  }

  /// zero = clamp(rne(-min(low, 0) / scale), 0, levels) (pickZero).
  Value pickZero(Value low, Value scale) {
    Value negated = arith::NegFOp::create(b, stdMin(low, f32(0.0f)));
    Value zero = math::RoundEvenOp::create(b, divf(negated, scale));
    zero = stdClamp(zero, f32(0.0f), f32(quantMax()));
    return arith::FPToUIOp::create(b, b.getI8Type(), zero);
  }

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

  /// One element's code, in an i8 whose high bits are zero.
  Value quantizeValue(Value value, const GroupParams &params) {
    switch (kind) {
    case ScaleKind::Symmetric:
      return encodeElement(divf(value, params.scale));
    case ScaleKind::GlobalDecode:
      return encodeElement(divf(value, mulf(params.scale, params.global)));
    case ScaleKind::GlobalEncode:
      return encodeElement(divf(mulf(value, params.global), params.scale));
    case ScaleKind::Asymmetric:
      break;
    }
    // quantizeAsymmetric: clamp(rne(x / s) + zero, 0, levels); NaN gives 0.
    float levels = quantMax();
    Value rounded = math::RoundEvenOp::create(b, divf(value, params.scale));
    rounded = select(isNan(rounded), f32(0.0f), rounded);
    rounded = stdClamp(rounded, f32(-levels - 1), f32(levels + 1));
    Value sum = arith::AddIOp::create(
        b, arith::FPToSIOp::create(b, b.getI32Type(), rounded), params.zero);
    Value clamped = arith::MaxSIOp::create(
        b, arith::MinSIOp::create(b, sum, i32(int32_t(levels))), i32(0));
    return arith::TruncIOp::create(b, b.getI8Type(), clamped);
  }

  Value encodeElement(Value value) {
    return ld::EncodeOp::create(b, b.getI8Type(), value, elementFormatAttr);
  }

  /// reference dequantize(): the f32 value of one code.
  Value dequantizeValue(Value code, const GroupParams &params) {
    if (kind == ScaleKind::Asymmetric) {
      Value mask = i32(int32_t(scheme.element.codeMask()));
      Value codeValue = arith::AndIOp::create(
          b, arith::ExtUIOp::create(b, b.getI32Type(), code), mask);
      Value shifted = arith::SubIOp::create(b, codeValue, params.zero);
      return mulf(arith::SIToFPOp::create(b, b.getF32Type(), shifted),
                  params.scale);
    }
    Value decoded =
        ld::DecodeOp::create(b, b.getF32Type(), code, elementFormatAttr);
    switch (kind) {
    case ScaleKind::GlobalDecode:
      return mulf(decoded, mulf(params.scale, params.global));
    case ScaleKind::GlobalEncode:
      return divf(mulf(decoded, params.scale), params.global);
    default:
      return mulf(decoded, params.scale);
    }
  }

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

  ImplicitLocOpBuilder &b;
  lowbit::Scheme scheme;
  ScaleKind kind;
  AxisTiling rowTiling, colTiling;
  ld::FormatAttrInterface elementFormatAttr, scaleFormatAttr;
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
