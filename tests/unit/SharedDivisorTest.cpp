//===- SharedDivisorTest.cpp - sharedQuotient against IEEE division -------===//
//
// The kernels' division by a shared divisor (format/SharedDivisor.h):
// exact near every decision of the formats it is used for (a stride of the
// divisors here; all of them in the sweep, SharedDivisorSweep.cpp), the
// special operands, and random pairs encoded to the formats that use it.
//
//===----------------------------------------------------------------------===//

#include "SharedDivisorWindows.h"

#include "format/Format.h"

#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <limits>
#include <random>

using namespace lowbit;
using lowbit::test::floatBits;

namespace {

Format formatNamed(const char *name) { return *lookupFormat(name); }

/// The quotient's f32 neighbours are one ulp apart.
bool withinOneUlp(float got, float want) {
  return got == want || std::nextafterf(want, INFINITY) == got ||
         std::nextafterf(want, -INFINITY) == got;
}

} // namespace

TEST_CASE("shared quotient: exact near every 5-bit number (every 97th "
          "divisor)") {
  uint64_t mismatches = 0;
  uint64_t checks = test::checkQuotientWindows(
      0, 97, sharedQuotient, [&](float, float) { ++mismatches; });
  CHECK(checks > 1000000);
  CHECK(mismatches == 0);
}

TEST_CASE("shared quotient: without the correction the windows fail") {
  // x * RN(1/d) alone is not RN(x/d): the check must be able to fail.
  auto uncorrected = [](float x, const SharedDivisor &divisor) {
    return std::copysign(std::fabs(x) * divisor.scale * divisor.reciprocal, x);
  };
  uint64_t mismatches = 0;
  test::checkQuotientWindows(0, 97, uncorrected,
                             [&](float, float) { ++mismatches; });
  CHECK(mismatches > 0);
}

TEST_CASE("shared quotient: special operands") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float values[] = {0.0f,       -0.0f,     1.0f,    -3.0f,    0x1p-149f,
                          -0x1p-140f, 0x1p-126f, FLT_MAX, -FLT_MAX, inf,
                          -inf,       nan,       5.0f,    0.25f,    -0.75f};
  const float divisors[] = {0.0f,      0x1p-149f, 0x1.8p-130f, 0x1p-126f,
                            0x1p-100f, 0.5f,      1.0f,        6.0f,
                            0x1p100f,  0x1p127f,  FLT_MAX,     inf};
  for (float d : divisors) {
    SharedDivisor prepared = prepareSharedDivisor(d);
    for (float x : values) {
      INFO("x = " << x << ", d = " << d);
      float got = sharedQuotient(x, prepared);
      float want = x / d;
      REQUIRE(std::isnan(got) == std::isnan(want));
      if (std::isnan(want))
        continue;
      CHECK(std::signbit(got) == std::signbit(want));
      float magnitude = std::fabs(want);
      if (magnitude >= 0x1p-80f && magnitude <= 0x1p80f)
        CHECK(withinOneUlp(got, want));
      else if (magnitude < 0x1p-80f)
        CHECK(std::fabs(got) < 0x1p-79f);
      else
        CHECK(std::fabs(got) > 0x1p79f);
    }
  }
}

TEST_CASE("shared quotient: random pairs encode as the division does") {
  const Format formats[] = {formatNamed("e2m1"), formatNamed("ue4m3"),
                            formatNamed("e4m3"), formatNamed("e5m2")};
  std::mt19937 random(31);
  std::uniform_real_distribution<float> ratio(-8.0f, 8.0f);
  std::uniform_int_distribution<int> exponent(-140, 120);
  uint64_t offByOne = 0;
  for (int i = 0; i < 200000; ++i) {
    float d = std::ldexp(1.0f + float(random() % 1024) / 1024.0f +
                             float(random() % 8192) * 0x1p-23f,
                         exponent(random));
    float x = ratio(random) * d;
    float got = sharedQuotient(x, prepareSharedDivisor(d));
    float want = x / d;
    INFO("x = " << x << ", d = " << d);
    for (const Format &format : formats)
      REQUIRE(encode(format, got) == encode(format, want));
    if (std::fabs(want) >= 0x1p-80f)
      REQUIRE(withinOneUlp(got, want));
    offByOne += floatBits(got) != floatBits(want);
  }
  // Nothing found off by one either (the windows are what the formats need).
  CHECK(offByOne == 0);
}

TEST_CASE("shared quotient: the formats it is exact for") {
  for (const char *name : {"e2m1", "ue4m3", "e4m3", "e5m2", "e2m3", "e3m2"})
    CHECK(sharedQuotientEncodesExactly(formatNamed(name)));
  // int8's midpoints (126.5) have 8 significant bits; e8m0's reach 2^127.
  for (const char *name : {"int8", "int4", "e8m0", "f16", "bf16"})
    CHECK_FALSE(sharedQuotientEncodesExactly(formatNamed(name)));
  std::vector<double> e2m1 = encodingDecisionPoints(formatNamed("e2m1"));
  CHECK(e2m1 ==
        std::vector<double>{0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 0.5, 6.0});
}
