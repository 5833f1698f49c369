//===- ScaleMath.cpp - The reference quantizer's arithmetic as IR ---------===//
//
// Every formula names its counterpart in format/Quantize.cpp; the order of
// the f32 operations is the reference's (docs/quantization.md).
//
//===----------------------------------------------------------------------===//

#include "lowering/ScaleMath.h"

#include "format/Format.h"
#include "format/SharedDivisor.h"
#include "llvm/Support/ErrorHandling.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <algorithm>
#include <cfloat>
#include <limits>

using namespace mlir;
namespace ld = lowbit::dialect;

namespace lowbit {

ScaleMath::ScaleMath(ImplicitLocOpBuilder &builder, const Scheme &scheme)
    : KernelEmitter(builder), scheme(scheme), kind(scaleKindOf(scheme)) {
  elementFormatAttr = ld::toFormatAttr(b.getContext(), scheme.element);
  if (auto format = scaleTypeFormat(scheme.scale.type))
    scaleFormatAttr = ld::toFormatAttr(b.getContext(), *format);
}

Value ScaleMath::cmpf(arith::CmpFPredicate predicate, Value lhs, Value rhs) {
  return arith::CmpFOp::create(b, predicate, lhs, rhs);
}
/// std::max(a, b): b if a < b, else a.
Value ScaleMath::stdMax(Value lhs, Value rhs) {
  return select(cmpf(arith::CmpFPredicate::OLT, lhs, rhs), rhs, lhs);
}
/// std::min(a, b): b if b < a, else a.
Value ScaleMath::stdMin(Value lhs, Value rhs) {
  return select(cmpf(arith::CmpFPredicate::OLT, rhs, lhs), rhs, lhs);
}
/// std::clamp(v, lo, hi): lo if v < lo, hi if hi < v, else v.
Value ScaleMath::stdClamp(Value value, Value low, Value high) {
  return select(
      cmpf(arith::CmpFPredicate::OLT, value, low), low,
      select(cmpf(arith::CmpFPredicate::OLT, high, value), high, value));
}
Value ScaleMath::isNan(Value value) {
  return cmpf(arith::CmpFPredicate::UNO, value, value);
}
Value ScaleMath::isInf(Value value) {
  Value magnitude = math::AbsFOp::create(b, value);
  return cmpf(arith::CmpFPredicate::OEQ, magnitude,
              f32(std::numeric_limits<float>::infinity()));
}
Value ScaleMath::divf(Value lhs, Value rhs) {
  return arith::DivFOp::create(b, lhs, rhs);
}
Value ScaleMath::mulf(Value lhs, Value rhs) {
  return arith::MulFOp::create(b, lhs, rhs);
}
/// Folds one element into the statistics (reference: gatherStats).
SmallVector<Value> ScaleMath::accumulate(ValueRange acc, Value value,
                                         bool withMinMax) {
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

Stats ScaleMath::toStats(ValueRange values, bool withMinMax) {
  Stats stats{values[0], Value(), Value()};
  if (withMinMax) {
    stats.min = values[1];
    stats.max = values[2];
  }
  return stats;
}
Stats ScaleMath::emitTensorStats(
    Value rows, Value cols, bool withMinMax,
    function_ref<Value(Value row, Value col)> loadElement) {
  SmallVector<Value> init(withMinMax ? 3 : 1, f32(0.0f));
  auto loop = scf::ParallelOp::create(
      b, ValueRange{idx(0)}, ValueRange{rows}, ValueRange{idx(1)}, init,
      [&](OpBuilder &, Location, ValueRange ivs, ValueRange) {
        SmallVector<Value> rowInit(withMinMax ? 3 : 1, f32(0.0f));
        auto colLoop = scf::ForOp::create(
            b, idx(0), cols, idx(1), rowInit,
            [&](OpBuilder &, Location, Value col, ValueRange acc) {
              scf::YieldOp::create(
                  b, accumulate(acc, loadElement(ivs[0], col), withMinMax));
            });
        auto reduce = scf::ReduceOp::create(b, colLoop.getResults());
        for (auto [position, region] :
             llvm::enumerate(reduce.getReductions())) {
          Block &block = region.front();
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToEnd(&block);
          Value lhs = block.getArgument(0), rhs = block.getArgument(1);
          Value combined = position == 1 ? stdMin(lhs, rhs) : stdMax(lhs, rhs);
          scf::ReduceReturnOp::create(b, combined);
        }
      });
  return toStats(loop.getResults(), withMinMax);
}

float ScaleMath::quantMax() const { return float(::lowbit::quantMax(scheme)); }

/// The stored second-level scale, always finite and positive.
Value ScaleMath::computeGlobal(Value tensorAbsMax) {
  double product = ::lowbit::quantMax(scheme) *
                   scaleTypeFormat(scheme.scale.type)->maxValue();
  Value denominator = f32(float(std::min(product, double(FLT_MAX))));
  Value raw = kind == ScaleKind::GlobalDecode ? divf(tensorAbsMax, denominator)
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

Type ScaleMath::storedScaleType() const {
  return storedScaleTypeOf(b, scheme.scale.type);
}

Type storedScaleTypeOf(Builder &b, ScaleType type) {
  switch (type) {
  case ScaleType::F32:
    return b.getF32Type();
  case ScaleType::F16:
    return b.getF16Type();
  case ScaleType::BF16:
    return b.getBF16Type();
  case ScaleType::E8M0:
  case ScaleType::UE4M3:
    return b.getI8Type();
  }
  return {};
}

/// Rounds an f32 scale to the scale type, RNE and saturating (reference:
/// encodeScale); returns the value as it is stored in the scale tensor.
Value ScaleMath::encodeScale(Value value, StringRef rounding) {
  switch (scheme.scale.type) {
  case ScaleType::F32:
    // floatScaleCode: a scale is never inf.
    return select(isInf(value),
                  math::CopySignOp::create(b, f32(FLT_MAX), value), value);
  case ScaleType::F16:
  case ScaleType::BF16: {
    // Saturating, unlike arith.truncf: an f16 scale of 1e6 is 65504.
    Value code = ld::EncodeOp::create(b, b.getI16Type(), value, scaleFormatAttr,
                                      true, rounding);
    return arith::BitcastOp::create(b, storedScaleType(), code);
  }
  case ScaleType::E8M0:
  case ScaleType::UE4M3:
    return ld::EncodeOp::create(b, b.getI8Type(), value, scaleFormatAttr, true,
                                rounding);
  }
  return {};
}

/// The f32 value of a stored scale (reference: decodeScale).
Value ScaleMath::decodeScale(Value stored) {
  switch (scheme.scale.type) {
  case ScaleType::F32:
    return stored;
  case ScaleType::F16:
  case ScaleType::BF16:
    return arith::ExtFOp::create(b, b.getF32Type(), stored); // exact
  case ScaleType::E8M0:
  case ScaleType::UE4M3:
    return ld::DecodeOp::create(b, b.getF32Type(), stored, scaleFormatAttr);
  }
  return {};
}

/// The stored form of 1.0 in the scale type (oneScaleCode).
Value ScaleMath::storedOne() {
  switch (scheme.scale.type) {
  case ScaleType::F32:
    return f32(1.0f);
  case ScaleType::F16:
    return arith::ConstantOp::create(b, b.getF16FloatAttr(1.0f));
  case ScaleType::BF16:
    return arith::ConstantOp::create(b, b.getFloatAttr(b.getBF16Type(), 1.0));
  case ScaleType::E8M0:
  case ScaleType::UE4M3:
    return i8(int32_t(encode(*scaleTypeFormat(scheme.scale.type), 1.0f)));
  }
  return {};
}

/// A stored scale whose value is 0 (underflow, or an all-zero group)
/// becomes 1, so every stored scale is finite and positive.
Value ScaleMath::replaceZeroScale(Value stored) {
  Value isZero =
      cmpf(arith::CmpFPredicate::OEQ, decodeScale(stored), f32(0.0f));
  return select(isZero, storedOne(), stored);
}

/// OCP MX FLOOR: k = floor(log2(amax)) - emax, clamped to [-127, 127];
/// floor(log2) is the f32 exponent (ilogb), subnormals included.
Value ScaleMath::floorScaleCode(Value absMax) {
  int emax = elementEmax(scheme.element);
  Value bits = arith::BitcastOp::create(b, b.getI32Type(), absMax);
  Value exponentField = arith::AndIOp::create(
      b, arith::ShRUIOp::create(b, bits, i32(23)), i32(0xFF));
  Value mantissa = arith::AndIOp::create(b, bits, i32(0x7FFFFF));
  Value normalExponent = arith::SubIOp::create(b, exponentField, i32(127));
  // A subnormal's leading 1 is at bit 31 - clz; its value is 2^(bit-149).
  Value topBit = arith::SubIOp::create(
      b, i32(31), math::CountLeadingZerosOp::create(b, mantissa));
  Value subnormalExponent = arith::SubIOp::create(b, topBit, i32(149));
  Value isSubnormal =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, exponentField, i32(0));
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
Value ScaleMath::pickScale(const Stats &stats, Value global,
                           const PreparedDivisor &globalDivisor) {
  const ScaleSpec &spec = scheme.scale;
  Value qmax = f32(quantMax());
  switch (spec.rule) {
  case ScaleRule::E8M0Floor:
    return floorScaleCode(stats.absMax);
  case ScaleRule::E8M0RCeil:
    // The smallest power of two >= amax / max: e8m0 rounding up.
    return encodeScale(divf(stats.absMax, qmax), "rp");
  case ScaleRule::MinMax: {
    Value low = stdMin(stats.min, f32(0.0f));
    Value high = stdMax(stats.max, f32(0.0f));
    Value range = arith::SubFOp::create(b, high, low);
    return replaceZeroScale(encodeScale(divf(range, qmax)));
  }
  case ScaleRule::AbsMax:
    break;
  case ScaleRule::AbsMaxReciprocal:
  case ScaleRule::SignedMaxReciprocal:
    llvm_unreachable("llama.cpp's rules are refused by SchemeAttr::verify "
                     "(referenceOnlyReason)");
  }
  if (kind == ScaleKind::GlobalDecode || kind == ScaleKind::GlobalEncode) {
    Format scaleFormat = *scaleTypeFormat(spec.type);
    float scaleMin =
        float(scaleFormat.hasSubnormals() ? scaleFormat.minSubnormal()
                                          : scaleFormat.minNormal());
    float scaleMax = float(scaleFormat.maxValue());
    // amax / qmax stays a division: the shared quotient is not exact where
    // it is subnormal, and the division by the global below needs its bits.
    Value perQmax = divf(stats.absMax, qmax);
    Value wanted = kind == ScaleKind::GlobalEncode ? mulf(perQmax, global)
                   : globalDivisor ? divideShared(perQmax, globalDivisor)
                                   : divf(perQmax, global);
    return encodeScale(stdClamp(wanted, f32(scaleMin), f32(scaleMax)));
  }
  return replaceZeroScale(encodeScale(divf(stats.absMax, qmax)));
}

/// zero = clamp(rne(-min(low, 0) / scale), 0, levels) (pickZero).
Value ScaleMath::pickZero(Value low, Value scale) {
  Value negated = arith::NegFOp::create(b, stdMin(low, f32(0.0f)));
  Value zero = math::RoundEvenOp::create(b, divf(negated, scale));
  zero = stdClamp(zero, f32(0.0f), f32(quantMax()));
  return arith::FPToUIOp::create(b, b.getI8Type(), zero);
}
Value ScaleMath::scaledForEncode(Value value, const GroupParams &params) {
  switch (kind) {
  case ScaleKind::GlobalDecode:
    if (params.divisor)
      return divideShared(value, params.divisor);
    return divf(value, mulf(params.scale, params.global));
  case ScaleKind::GlobalEncode:
    if (params.divisor)
      return divideShared(mulf(value, params.global), params.divisor);
    return divf(mulf(value, params.global), params.scale);
  default:
    if (params.reciprocal)
      return mulf(value, params.reciprocal);
    if (params.divisor)
      return divideShared(value, params.divisor);
    return divf(value, params.scale);
  }
}

Value ScaleMath::quantizeValue(Value value, const GroupParams &params) {
  if (kind != ScaleKind::Asymmetric)
    return encodeElement(scaledForEncode(value, params));
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

std::pair<Value, Value> ScaleMath::quantizePair(Value first, Value second,
                                                const GroupParams &params) {
  if (kind == ScaleKind::Asymmetric)
    return {quantizeValue(first, params), quantizeValue(second, params)};
  Value pair = vector::FromElementsOp::create(
      b, VectorType::get({2}, b.getF32Type()),
      ValueRange{scaledForEncode(first, params),
                 scaledForEncode(second, params)});
  Value codes = ld::EncodeOp::create(b, VectorType::get({2}, b.getI8Type()),
                                     pair, elementFormatAttr);
  return {vector::ExtractOp::create(b, codes, ArrayRef<int64_t>{0}),
          vector::ExtractOp::create(b, codes, ArrayRef<int64_t>{1})};
}

Value ScaleMath::encodeElement(Value value) {
  return ld::EncodeOp::create(b, b.getI8Type(), value, elementFormatAttr);
}

/// reference dequantize(): the f32 value of one code.
Value ScaleMath::dequantizeValue(Value code, const GroupParams &params) {
  if (kind == ScaleKind::Asymmetric) {
    Value mask = i32(int32_t(scheme.element.codeMask()));
    Value codeValue = arith::AndIOp::create(
        b, arith::ExtUIOp::create(b, b.getI32Type(), code), mask);
    if (magicIntegerDecode) {
      // (2^23 + c) - (2^23 + z): both exact, 0 <= c, z < 2^8.
      Value difference = arith::SubFOp::create(b, magicFloat(codeValue),
                                               magicFloat(params.zero));
      return mulf(difference, params.scale);
    }
    Value shifted = arith::SubIOp::create(b, codeValue, params.zero);
    return mulf(arith::SIToFPOp::create(b, b.getF32Type(), shifted),
                params.scale);
  }
  if (magicIntegerDecode && scheme.element.isInt())
    return scaleDecoded(magicDecodeInt(code), params);
  Value decoded =
      ld::DecodeOp::create(b, b.getF32Type(), code, elementFormatAttr);
  return scaleDecoded(decoded, params);
}

Value ScaleMath::magicFloat(Value unsignedBits) {
  Value bits = arith::OrIOp::create(b, unsignedBits, i32(0x4b000000));
  return arith::BitcastOp::create(b, b.getF32Type(), bits);
}

Value ScaleMath::magicDecodeInt(Value code) {
  const Format &element = scheme.element;
  Value bits = arith::AndIOp::create(
      b, arith::ExtUIOp::create(b, b.getI32Type(), code),
      i32(int32_t(element.codeMask())));
  // Two's complement c to the offset binary c + 2^(b-1): flip the sign bit.
  int32_t offset = element.isSigned() ? int32_t(1) << (element.bits() - 1) : 0;
  if (offset != 0)
    bits = arith::XOrIOp::create(b, bits, i32(offset));
  return arith::SubFOp::create(b, magicFloat(bits),
                               f32(float(8388608 + offset)));
}

Value ScaleMath::scaleDecoded(Value decoded, const GroupParams &params) {
  switch (kind) {
  case ScaleKind::GlobalDecode:
    return mulf(decoded, mulf(params.scale, params.global));
  case ScaleKind::GlobalEncode:
    return divf(mulf(decoded, params.scale), params.global);
  default:
    return mulf(decoded, params.scale);
  }
}

std::pair<Value, Value> ScaleMath::dequantizePair(Value first, Value second,
                                                  const GroupParams &params) {
  // No x2 conversion decodes integers: the magic form goes per element.
  if (kind == ScaleKind::Asymmetric ||
      (magicIntegerDecode && scheme.element.isInt()))
    return {dequantizeValue(first, params), dequantizeValue(second, params)};
  Value codes = vector::FromElementsOp::create(
      b, VectorType::get({2}, b.getI8Type()), ValueRange{first, second});
  Value decoded = ld::DecodeOp::create(b, VectorType::get({2}, b.getF32Type()),
                                       codes, elementFormatAttr);
  return {scaleDecoded(vector::ExtractOp::create(b, decoded, 0), params),
          scaleDecoded(vector::ExtractOp::create(b, decoded, 1), params)};
}

GroupParams ScaleMath::withExactReciprocal(GroupParams params) {
  // An e8m0 scale is 2^k with k in [-127, 127], so 1 / 2^k = 2^-k is an
  // exact f32 (2^-127 a subnormal), and x * 2^-k and x / 2^k are the same
  // real number rounded once: the same bits, subnormal results included
  // (no flush to zero on either instruction).
  if (kind == ScaleKind::Symmetric && scheme.scale.type == ScaleType::E8M0) {
    params.reciprocal = divf(f32(1.0f), params.scale);
    return params;
  }
  // Every element's quotient only matters through its encoding, which the
  // shared quotient keeps for these formats.
  if (kind == ScaleKind::Asymmetric ||
      !sharedQuotientEncodesExactly(scheme.element))
    return params;
  params.divisor = prepareDivisor(kind == ScaleKind::GlobalDecode
                                      ? mulf(params.scale, params.global)
                                      : params.scale);
  return params;
}

PreparedDivisor ScaleMath::prepareGlobalDivisor(Value global) {
  std::optional<Format> scaleFormat = scaleTypeFormat(scheme.scale.type);
  if (kind != ScaleKind::GlobalDecode || !scaleFormat ||
      !sharedQuotientEncodesExactly(*scaleFormat))
    return {};
  return prepareDivisor(global);
}

PreparedDivisor ScaleMath::prepareDivisor(Value divisor) {
  // prepareSharedDivisor: 2^(127 - clamp(exponent field, 1, 253)).
  Value bits = arith::BitcastOp::create(b, b.getI32Type(), divisor);
  Value field = arith::AndIOp::create(
      b, arith::ShRUIOp::create(b, bits, i32(23)), i32(0xFF));
  field = arith::MaxSIOp::create(b, arith::MinSIOp::create(b, field, i32(253)),
                                 i32(1));
  Value scale = arith::BitcastOp::create(
      b, b.getF32Type(),
      arith::ShLIOp::create(b, arith::SubIOp::create(b, i32(254), field),
                            i32(23)));
  Value scaled = mulf(divisor, scale);
  return {scale, arith::MinimumFOp::create(b, scaled, f32(FLT_MAX)),
          divf(f32(1.0f), scaled)};
}

Value ScaleMath::divideShared(Value value, const PreparedDivisor &divisor) {
  // sharedQuotient: the estimate, Markstein's correction with the exact
  // residual, and the value's sign.
  Value numerator = mulf(math::AbsFOp::create(b, value), divisor.scale);
  Value estimate = mulf(numerator, divisor.reciprocal);
  Value residual = math::FmaOp::create(
      b,
      arith::NegFOp::create(
          b, arith::MinimumFOp::create(b, estimate, f32(FLT_MAX))),
      divisor.divisor, numerator);
  Value corrected =
      math::FmaOp::create(b, residual, divisor.reciprocal, estimate);
  Value sign = arith::AndIOp::create(
      b, arith::BitcastOp::create(b, b.getI32Type(), value),
      i32(int32_t(0x80000000u)));
  return arith::BitcastOp::create(
      b, b.getF32Type(),
      arith::OrIOp::create(
          b, arith::BitcastOp::create(b, b.getI32Type(), corrected), sign));
}

} // namespace lowbit
