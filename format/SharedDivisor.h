//===- SharedDivisor.h - Many quotients by one divisor --------*- C++ -*-===//
//
// A quantize kernel divides every element of a group by the same scale.
// `div.rn.f32` is a sequence of about ten SASS instructions with a call to
// a slow path; ptxas does not share its reciprocal between divisions. This
// is the kernels' replacement (docs/numerics.md, "Shared divisors"): the
// reciprocal once per divisor, then per quotient one multiply, two fused
// multiply-adds (Markstein's correction) and a sign. The kernels emit
// exactly these operations (lowering/ScaleMath.cpp); this plain C++ form is
// what the tests verify.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_FORMAT_SHAREDDIVISOR_H
#define LOWBIT_FORMAT_SHAREDDIVISOR_H

#include "format/Format.h"

#include <cstdint>
#include <vector>

namespace lowbit {

/// A divisor d >= 0 (not NaN), prepared once: d' = d * scale is 0, inf or
/// in [2^-22, 4), where its reciprocal is a normal f32.
struct SharedDivisor {
  float scale;   ///< the power of two 2^(127 - clamp(exponent field, 1, 253))
  float divisor; ///< min(d * scale, FLT_MAX)
  float reciprocal; ///< RN(1 / (d * scale))
};

SharedDivisor prepareSharedDivisor(float divisor);

/// x / d by the prepared divisor: |x| * scale times the reciprocal,
/// corrected once with the exact residual, with x's sign. Equal to RN(x / d)
/// wherever the quotient is within a few ulps of a number of at most
/// kSharedQuotientExactBits significant bits in [2^-80, 2^80] (verified
/// exhaustively, tests/unit/SharedDivisorTest.cpp) and within one ulp of
/// it elsewhere in that range; NaN exactly where x / d is; beyond the range,
/// on the same side of it.
float sharedQuotient(float value, const SharedDivisor &divisor);

/// Numbers with this many significant bits or fewer are the decisions the
/// exhaustive test covers.
constexpr int kSharedQuotientExactBits = 5;

/// The values at which encoding to `format` (saturating, RNE) changes its
/// result, non-negative side: the midpoints of consecutive values, the
/// smallest positive and the largest value.
std::vector<double> encodingDecisionPoints(const Format &format);

/// Whether encode(format, sharedQuotient(x, d)) == encode(format, x / d) for
/// every x and d: a float format whose every decision point has at most
/// kSharedQuotientExactBits significant bits and lies in [2^-80, 2^80].
bool sharedQuotientEncodesExactly(const Format &format);

} // namespace lowbit

#endif // LOWBIT_FORMAT_SHAREDDIVISOR_H
