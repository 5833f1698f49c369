//===- SharedDivisorWindows.h - sharedQuotient's windows -----*- C++ -*-===//
//
// For every divisor mantissa d in [1, 2) (a stride of them in the fast
// test, all 2^23 in the sweep) and every number m with at most
// kSharedQuotientExactBits significant bits in [1, 2), the 2 * kWindow + 1
// floats x nearest m * d must give sharedQuotient(x, d) == x / d bit for
// bit. Scaling x, or d, by a power of two scales every intermediate and
// the quotient exactly while they stay normal (or exact), which holds for
// quotients in [2^-80, 2^80] and d' in [2^-22, 4) (docs/numerics.md,
// "Shared divisors"), so these windows stand for every such decision point
// and divisor. One x step moves the quotient by 1/2 to 2 of its ulps, so the
// window reaches 4 ulps either side; further out the 1-ulp bound decides.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TESTS_UNIT_SHAREDDIVISORWINDOWS_H
#define LOWBIT_TESTS_UNIT_SHAREDDIVISORWINDOWS_H

#include "format/SharedDivisor.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>

namespace lowbit::test {

constexpr int kWindow = 8;

inline uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

/// Checks the divisors 1 + k * 2^-23 for k = first, first + step, ... below
/// 2^23; calls `report` with each mismatch and returns how many checks ran.
/// `quotient` is the function under test (sharedQuotient, or a broken one
/// that the test expects to fail).
inline uint64_t checkQuotientWindows(
    uint32_t first, uint32_t step,
    const std::function<float(float, const SharedDivisor &)> &quotient,
    const std::function<void(float x, float d)> &report) {
  uint64_t checks = 0;
  int points = 1 << (kSharedQuotientExactBits - 1);
  for (uint64_t k = first; k < (uint64_t(1) << 23); k += step) {
    uint32_t dBits = 0x3f800000u | uint32_t(k);
    float d;
    std::memcpy(&d, &dBits, sizeof d);
    SharedDivisor prepared = prepareSharedDivisor(d);
    for (int j = 0; j < points; ++j) {
      double mantissa = 1.0 + double(j) / points;
      float x = float(double(d) * mantissa);
      for (int i = 0; i < kWindow; ++i)
        x = std::nextafterf(x, 0.0f);
      for (int i = 0; i <= 2 * kWindow; ++i) {
        ++checks;
        if (floatBits(quotient(x, prepared)) != floatBits(x / d))
          report(x, d);
        x = std::nextafterf(x, INFINITY);
      }
    }
  }
  return checks;
}

} // namespace lowbit::test

#endif // LOWBIT_TESTS_UNIT_SHAREDDIVISORWINDOWS_H
