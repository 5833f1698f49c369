//===- Oracle.cpp - Slow, independent reference for format conversion -----===//

#include "Oracle.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace oracle {

std::optional<Spec> namedSpec(const std::string &name) {
  auto floatSpec = [](int e, int m, int bias, bool isSigned, Specials s) {
    Spec spec;
    spec.expBits = e;
    spec.manBits = m;
    spec.bias = bias;
    spec.isSigned = isSigned;
    spec.specials = s;
    return spec;
  };
  auto intSpec = [](int bits, bool isSigned) {
    Spec spec;
    spec.isInt = true;
    spec.intBits = bits;
    spec.isSigned = isSigned;
    return spec;
  };
  // The contract's format table (OCP FP8 / MX v1.0, IEEE 754, bfloat16).
  if (name == "e4m3")
    return floatSpec(4, 3, 7, true, Specials::AllOnesNan);
  if (name == "e5m2")
    return floatSpec(5, 2, 15, true, Specials::Ieee);
  if (name == "e2m3")
    return floatSpec(2, 3, 1, true, Specials::FiniteOnly);
  if (name == "e3m2")
    return floatSpec(3, 2, 3, true, Specials::FiniteOnly);
  if (name == "e2m1")
    return floatSpec(2, 1, 1, true, Specials::FiniteOnly);
  if (name == "e8m0")
    return floatSpec(8, 0, 127, false, Specials::AllOnesNan);
  if (name == "ue4m3")
    return floatSpec(4, 3, 7, false, Specials::AllOnesNan);
  if (name == "f16")
    return floatSpec(5, 10, 15, true, Specials::Ieee);
  if (name == "bf16")
    return floatSpec(8, 7, 127, true, Specials::Ieee);
  if (name == "int8")
    return intSpec(8, true);
  if (name == "uint8")
    return intSpec(8, false);
  if (name == "int4")
    return intSpec(4, true);
  if (name == "uint4")
    return intSpec(4, false);
  return std::nullopt;
}

Oracle::Oracle(const Spec &spec) : spec_(spec) {
  if (spec.isInt) {
    bits_ = spec.intBits;
    int64_t maxInt = spec.isSigned ? (int64_t(1) << (bits_ - 1)) - 1
                                   : (int64_t(1) << bits_) - 1;
    for (int64_t v = 0; v <= maxInt; ++v) {
      magnitudes_.push_back(double(v));
      magnitudeCodes_.push_back(uint32_t(v));
    }
    virtualNext_ = double(maxInt + 1);
    return;
  }
  bits_ = (spec.isSigned ? 1 : 0) + spec.expBits + spec.manBits;
  // Every non-negative code, decoded; keep the finite ones.
  std::vector<std::pair<double, uint32_t>> table;
  uint32_t magnitudeCount = uint32_t(1) << (spec.expBits + spec.manBits);
  for (uint32_t code = 0; code < magnitudeCount; ++code) {
    double value = decode(code);
    if (std::isfinite(value))
      table.emplace_back(value, code);
  }
  std::sort(table.begin(), table.end());
  for (size_t i = 0; i < table.size(); ++i) {
    if (i > 0 && !(table[i].first > table[i - 1].first))
      throw std::logic_error("oracle: two codes with the same magnitude");
    magnitudes_.push_back(table[i].first);
    magnitudeCodes_.push_back(table[i].second);
  }
  // ulp(max) = 2^(binade exponent of max - manBits).
  int exponent;
  std::frexp(maxValue(), &exponent); // max = f * 2^exponent, f in [0.5, 1)
  virtualNext_ = maxValue() + std::ldexp(1.0, exponent - 1 - spec.manBits);
}

double Oracle::decode(uint32_t code) const {
  code &= codeCount() - 1;
  if (spec_.isInt) {
    int64_t value = code;
    if (spec_.isSigned && value >= (int64_t(1) << (bits_ - 1)))
      value -= int64_t(1) << bits_;
    return double(value);
  }
  int magnitudeBits = spec_.expBits + spec_.manBits;
  bool negative = spec_.isSigned && ((code >> magnitudeBits) & 1);
  uint32_t exponentField = (code >> spec_.manBits) & ((1u << spec_.expBits) - 1);
  uint32_t mantissaField = code & ((1u << spec_.manBits) - 1);
  uint32_t allOnesExponent = (1u << spec_.expBits) - 1;
  uint32_t allOnesMantissa = (1u << spec_.manBits) - 1;
  double value;
  if (spec_.specials == Specials::Ieee && exponentField == allOnesExponent) {
    if (mantissaField != 0)
      return std::numeric_limits<double>::quiet_NaN();
    value = std::numeric_limits<double>::infinity();
  } else if (spec_.specials == Specials::AllOnesNan &&
             exponentField == allOnesExponent &&
             mantissaField == allOnesMantissa) {
    return std::numeric_limits<double>::quiet_NaN();
  } else if (spec_.manBits > 0 && exponentField == 0) {
    // Subnormal: 0.mantissa * 2^(1 - bias).
    value = std::ldexp(double(mantissaField), 1 - spec_.bias - spec_.manBits);
  } else {
    // Normal: 1.mantissa * 2^(exponent - bias). Without mantissa bits
    // (e8m0) exponent field 0 is a normal binade too: there is no zero.
    value = std::ldexp(double((1u << spec_.manBits) + mantissaField),
                       int(exponentField) - spec_.bias - spec_.manBits);
  }
  return negative ? -value : value;
}

bool Oracle::isNan(uint32_t code) const { return std::isnan(decode(code)); }

uint32_t Oracle::nanResult() const {
  if (spec_.isInt)
    return 0;
  if (spec_.specials == Specials::FiniteOnly)
    return maxCode();
  // The canonical NaN: positive, exponent and mantissa all ones.
  return (1u << (spec_.expBits + spec_.manBits)) - 1;
}

uint32_t Oracle::withSign(uint32_t magnitudeCode, bool negative) const {
  if (!spec_.isSigned || !negative)
    return magnitudeCode;
  return magnitudeCode | (1u << (spec_.expBits + spec_.manBits));
}

uint32_t Oracle::overflowCode(bool negative, bool saturate) const {
  if (saturate || spec_.specials == Specials::FiniteOnly)
    return withSign(maxCode(), negative);
  if (spec_.specials == Specials::Ieee)
    return withSign(((1u << spec_.expBits) - 1) << spec_.manBits, negative);
  // No inf: overflow gives NaN, keeping the sign (e4m3: 0x7F | sign).
  return withSign((1u << (spec_.expBits + spec_.manBits)) - 1, negative);
}

uint32_t Oracle::encodeInt(double value, Round round) const {
  if (std::isnan(value))
    return 0; // PTX cvt.rni.sat: NaN gives 0.
  double lowest = spec_.isSigned ? -std::ldexp(1.0, bits_ - 1) : 0.0;
  double highest = maxValue();
  double rounded;
  if (std::isinf(value)) {
    rounded = value;
  } else if (round == Round::TowardZero) {
    rounded = std::trunc(value);
  } else if (round == Round::TowardPosInf) {
    rounded = std::ceil(value);
  } else {
    double below = std::floor(value);
    double fraction = value - below; // exact: value is an f32
    if (fraction > 0.5)
      rounded = below + 1;
    else if (fraction < 0.5)
      rounded = below;
    else // a tie: the even integer
      rounded = std::fmod(below, 2.0) == 0 ? below : below + 1;
  }
  rounded = std::min(std::max(rounded, lowest), highest);
  int64_t integer = int64_t(rounded);
  return uint32_t(integer) & (codeCount() - 1);
}

uint32_t Oracle::encode(float input, bool saturate, Round round) const {
  double value = input; // exact
  if (spec_.isInt)
    return encodeInt(value, round);
  if (std::isnan(value))
    return nanResult();
  // Unsigned formats (e8m0, ue4m3) encode |x|, as NVIDIA's
  // __nv_cvt_float_to_e8m0 does; rounding then applies to the magnitude.
  bool negative = spec_.isSigned && std::signbit(value);
  double magnitude = std::fabs(value);
  if (std::isinf(magnitude))
    return overflowCode(negative, saturate);
  // Below the smallest finite magnitude: only formats without zero (e8m0)
  // get here; they give code 0 (2^-bias), the closest they have.
  if (magnitude < magnitudes_.front())
    return withSign(magnitudeCodes_.front(), negative);

  // The interval [lower, upper) holding the magnitude; upper may be the
  // virtual value above max.
  size_t index = size_t(std::upper_bound(magnitudes_.begin(), magnitudes_.end(),
                                         magnitude) -
                        magnitudes_.begin()) -
                 1;
  double lower = magnitudes_[index];
  if (magnitude == lower)
    return withSign(magnitudeCodes_[index], negative);
  bool upperIsVirtual = index + 1 == magnitudes_.size();
  double upper = upperIsVirtual ? virtualNext_ : magnitudes_[index + 1];
  uint32_t lowerCode = magnitudeCodes_[index];
  uint32_t upperCode = upperIsVirtual ? maxCode() + 1 : magnitudeCodes_[index + 1];
  if (magnitude >= virtualNext_) {
    upperIsVirtual = true;
    upper = virtualNext_;
  }

  bool takeUpper;
  if (magnitude >= virtualNext_) {
    takeUpper = round != Round::TowardZero;
  } else if (round == Round::TowardZero) {
    takeUpper = false;
  } else if (round == Round::TowardPosInf) {
    takeUpper = !negative;
  } else {
    double belowDistance = magnitude - lower; // both exact in double
    double aboveDistance = upper - magnitude;
    if (belowDistance != aboveDistance) {
      takeUpper = aboveDistance < belowDistance;
    } else if (spec_.manBits == 0) {
      // A tie with no mantissa bits (e8m0, between 2^k and 2^(k+1)): both
      // neighbours' significands are the implicit 1, so "even" picks
      // neither; the tie rounds up in magnitude, as ml_dtypes does.
      takeUpper = true;
    } else {
      takeUpper = (upperCode & 1) == 0; // ties to the even code
    }
  }
  if (!takeUpper)
    return withSign(lowerCode, negative);
  if (upperIsVirtual)
    return overflowCode(negative, saturate);
  return withSign(upperCode, negative);
}

int mxFloorExponent(double amax, double elementMax) {
  if (!(amax > 0))
    return -127;
  int amaxExponent, maxExponent;
  std::frexp(amax, &amaxExponent);
  std::frexp(elementMax, &maxExponent);
  // frexp gives floor(log2(x)) + 1.
  return std::clamp(amaxExponent - maxExponent, -127, 127);
}

int mxRceilExponent(double amax, double elementMax) {
  if (!(amax > 0))
    return -127;
  int k = -127;
  while (k < 127 && std::ldexp(elementMax, k) < amax)
    ++k;
  return k;
}

} // namespace oracle
