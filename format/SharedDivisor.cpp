//===- SharedDivisor.cpp - Many quotients by one divisor, no division -----===//
//
// Built with -ffp-contract=off: the operations are the kernel's, one
// rounding each (format/CMakeLists.txt).
//
//===----------------------------------------------------------------------===//

#include "format/SharedDivisor.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

namespace lowbit {
namespace {

uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}
float floatOf(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

/// min(value, FLT_MAX), NaN staying NaN (PTX min.NaN.f32, the kernels'
/// arith.minimumf).
float clampBelowInf(float value) {
  return std::isnan(value) ? value : std::fmin(value, FLT_MAX);
}

/// Significant bits of a positive finite double.
int significantBits(double value) {
  int exponent;
  double mantissa = std::frexp(value, &exponent);
  int bits = 0;
  while (mantissa != 0) {
    mantissa = std::ldexp(mantissa, 1);
    mantissa -= std::floor(mantissa);
    ++bits;
  }
  return bits;
}

} // namespace

SharedDivisor prepareSharedDivisor(float divisor) {
  // 2^(127 - e) for the biased exponent e clamped to [1, 253]: d * scale is
  // in [1, 2) for a normal d below 2^126, [2, 4) above, and [2^-22, 1) for a
  // subnormal d; 0 and inf stay themselves.
  int32_t exponentField = int32_t(bitsOf(divisor) >> 23) & 0xFF;
  exponentField = std::clamp(exponentField, 1, 253);
  float scale = floatOf(uint32_t(254 - exponentField) << 23);
  float scaled = divisor * scale;
  return {scale, clampBelowInf(scaled), 1.0f / scaled};
}

float sharedQuotient(float value, const SharedDivisor &divisor) {
  float numerator = std::fabs(value) * divisor.scale;
  float estimate = numerator * divisor.reciprocal;
  // The residual numerator - d' * estimate is exact near every decision
  // point (an FMA); clamping the estimate keeps an infinite one (x = inf,
  // or an overflow) from making it NaN (inf - inf). A NaN estimate (x NaN,
  // 0 / 0, inf / inf) stays NaN, as the quotient is.
  float residual =
      std::fmaf(-clampBelowInf(estimate), divisor.divisor, numerator);
  float corrected = std::fmaf(residual, divisor.reciprocal, estimate);
  return floatOf(bitsOf(corrected) | (bitsOf(value) & 0x80000000u));
}

std::vector<double> encodingDecisionPoints(const Format &format) {
  std::vector<double> values;
  for (uint32_t code = 0; code < format.codeCount(); ++code) {
    if (format.isNanCode(code) || format.isInfCode(code))
      continue;
    double value = format.decode(code);
    if (value >= 0)
      values.push_back(value);
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  std::vector<double> points;
  for (size_t i = 0; i + 1 < values.size(); ++i)
    points.push_back((values[i] + values[i + 1]) / 2);
  if (values.size() > 1)
    points.push_back(values[values[0] == 0 ? 1 : 0]);
  if (!values.empty())
    points.push_back(values.back());
  return points;
}

bool sharedQuotientEncodesExactly(const Format &format) {
  if (!format.isFloat())
    return false;
  for (double point : encodingDecisionPoints(format))
    if (point != 0 && (significantBits(point) > kSharedQuotientExactBits ||
                       point < 0x1p-80 || point > 0x1p80))
      return false;
  return true;
}

} // namespace lowbit
