//===- OracleTest.cpp - The reference oracle against known values ---------===//
//
// The oracle is checked on its own against hand-written facts from the
// specs, so it cannot silently agree with a broken fast path.
//
//===----------------------------------------------------------------------===//

#include "Oracle.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using oracle::Oracle;
using oracle::Round;

namespace {
Oracle named(const char *name) { return Oracle(*oracle::namedSpec(name)); }
const float kNan = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();
} // namespace

TEST_CASE("oracle: format tables from the specs", "[oracle]") {
  Oracle e2m1 = named("e2m1");
  const double e2m1Values[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  for (uint32_t code = 0; code < 8; ++code) {
    CHECK(e2m1.decode(code) == e2m1Values[code]);
    CHECK(e2m1.decode(code | 8) == -e2m1Values[code]);
  }
  CHECK(std::signbit(e2m1.decode(8)));

  Oracle e4m3 = named("e4m3");
  CHECK(e4m3.maxValue() == 448);
  CHECK(e4m3.maxCode() == 0x7E);
  CHECK(e4m3.isNan(0x7F));
  CHECK(e4m3.isNan(0xFF));
  CHECK(e4m3.decode(0x08) == std::ldexp(1.0, -6));
  CHECK(e4m3.decode(0x01) == std::ldexp(1.0, -9));
  CHECK(e4m3.decode(0x38) == 1.0);

  Oracle e5m2 = named("e5m2");
  CHECK(e5m2.maxValue() == 57344);
  CHECK(e5m2.maxCode() == 0x7B);
  CHECK(e5m2.decode(0x7C) == INFINITY);
  CHECK(e5m2.decode(0xFC) == -INFINITY);
  CHECK(e5m2.isNan(0x7D));
  CHECK(e5m2.decode(0x01) == std::ldexp(1.0, -16));

  CHECK(named("e2m3").maxValue() == 7.5);
  CHECK(named("e2m3").decode(1) == 0.125);
  CHECK(named("e3m2").maxValue() == 28);
  CHECK(named("e3m2").decode(1) == 0.0625);
  CHECK(named("e3m2").decode(4) == 0.25);

  Oracle e8m0 = named("e8m0");
  CHECK(e8m0.bits() == 8);
  CHECK(e8m0.decode(0x00) == std::ldexp(1.0, -127));
  CHECK(e8m0.decode(0x7F) == 1.0);
  CHECK(e8m0.decode(0xFE) == std::ldexp(1.0, 127));
  CHECK(e8m0.isNan(0xFF));
  CHECK(e8m0.maxCode() == 0xFE);

  Oracle ue4m3 = named("ue4m3");
  CHECK(ue4m3.bits() == 7);
  CHECK(ue4m3.maxValue() == 448);
  CHECK(ue4m3.isNan(0x7F));

  Oracle f16 = named("f16");
  CHECK(f16.maxValue() == 65504);
  CHECK(f16.decode(0x0001) == std::ldexp(1.0, -24));
  CHECK(f16.decode(0x3C00) == 1.0);
  Oracle bf16 = named("bf16");
  CHECK(bf16.decode(0x3F80) == 1.0);
  CHECK(bf16.maxValue() == std::ldexp(255.0, 120));

  Oracle int4 = named("int4");
  CHECK(int4.decode(0x8) == -8);
  CHECK(int4.decode(0x7) == 7);
  CHECK(named("uint4").decode(0xF) == 15);
}

TEST_CASE("oracle: published e4m3/e5m2/e2m1 conversions", "[oracle]") {
  Oracle e4m3 = named("e4m3");
  auto e4 = [&](float x, bool saturate = true) {
    return e4m3.decode(e4m3.encode(x, saturate));
  };
  CHECK(e4(480) == 448);
  CHECK(e4(416) == 416);
  CHECK(e4(-447.5f) == -448);
  CHECK(e4(23.5f) == 24);
  CHECK(e4(192.5f) == 192);
  CHECK(e4(304) == 320);
  CHECK(e4(368) == 384);
  CHECK(e4(248) == 256);
  CHECK(e4(432) == 448);
  CHECK(e4(100) == 96);
  CHECK(e4(400) == 384);
  CHECK(e4(336) == 320);
  CHECK(e4(272) == 256);
  CHECK(e4(79.5f) == 80);
  CHECK(e4(0.001953125f) == 0.001953125);
  CHECK(e4m3.encode(kInf) == 0x7E);
  CHECK(e4m3.encode(-kInf) == 0xFE);
  CHECK(e4m3.encode(kNan) == 0x7F);
  CHECK(e4m3.encode(-kNan) == 0x7F);
  // Non-saturating: 464 is a tie that goes to 448 (even code 0x7E); above
  // it the result is NaN with the input's sign.
  CHECK(e4m3.encode(464, false) == 0x7E);
  CHECK(e4m3.encode(std::nextafter(464.0f, 500.0f), false) == 0x7F);
  CHECK(e4m3.encode(-480, false) == 0xFF);
  CHECK(e4m3.encode(kInf, false) == 0x7F);
  // Subnormals kept, ties to even at the bottom.
  CHECK(e4m3.encode(std::ldexp(1.0f, -10)) == 0x00);         // tie 0 | 2^-9
  CHECK(e4m3.encode(std::ldexp(3.0f, -10)) == 0x02);         // tie 1 | 2 -> 2
  CHECK(e4m3.encode(-std::ldexp(1.0f, -11)) == 0x80);        // -0

  Oracle e5m2 = named("e5m2");
  CHECK(e5m2.decode(e5m2.encode(9.0f)) == 8.0);
  CHECK(e5m2.decode(e5m2.encode(1.125f)) == 1.0);
  CHECK(e5m2.encode(61440, false) == 0x7C);
  CHECK(e5m2.encode(-61440, false) == 0xFC);
  CHECK(e5m2.encode(61440, true) == 0x7B);
  CHECK(e5m2.encode(kNan) == 0x7F);

  Oracle e2m1 = named("e2m1");
  auto e2 = [&](float x) { return e2m1.decode(e2m1.encode(x)); };
  CHECK(e2(0.25f) == 0);
  CHECK(e2(0.75f) == 1);
  CHECK(e2(1.25f) == 1);
  CHECK(e2(1.75f) == 2);
  CHECK(e2(2.5f) == 2);
  CHECK(e2(3.5f) == 4);
  CHECK(e2(5.0f) == 4);
  CHECK(e2m1.encode(-0.25f) == 0x8);
  CHECK(e2m1.encode(7.0f) == 0x7);
  CHECK(e2m1.encode(7.0f, false) == 0x7); // no inf/NaN: still saturates
  CHECK(e2m1.encode(kNan) == 0x7);        // PTX: NaN -> +max
  CHECK(named("e2m3").encode(kNan) == 0x1F);
  CHECK(named("e3m2").encode(-kNan) == 0x1F);
}

TEST_CASE("oracle: e8m0, ue4m3 and integers", "[oracle]") {
  Oracle e8m0 = named("e8m0");
  CHECK(e8m0.encode(1.0f) == 0x7F);
  CHECK(e8m0.encode(0.0f) == 0x00);
  CHECK(e8m0.encode(-0.0f) == 0x00);
  // Unsigned formats encode |x| (NVIDIA's __nv_cvt_float_to_e8m0 does).
  CHECK(e8m0.encode(-4.0f) == 0x81);
  CHECK(e8m0.encode(-2.1f, true, Round::TowardPosInf) == 0x81);
  CHECK(e8m0.encode(std::ldexp(1.0f, -149)) == 0x00);
  CHECK(e8m0.encode(std::ldexp(1.0f, -127)) == 0x00);
  CHECK(e8m0.encode(std::ldexp(1.0f, 127)) == 0xFE);
  CHECK(e8m0.encode(std::numeric_limits<float>::max()) == 0xFE);
  CHECK(e8m0.encode(std::numeric_limits<float>::max(), false) == 0xFF);
  CHECK(e8m0.encode(kInf) == 0xFE);
  CHECK(e8m0.encode(kNan) == 0xFF);
  CHECK(e8m0.encode(2.9f) == 0x80);  // nearer 2 than 4
  CHECK(e8m0.encode(3.1f) == 0x81);
  CHECK(e8m0.encode(3.0f) == 0x81);  // tie rounds up in magnitude
  CHECK(e8m0.encode(1.5f) == 0x80);
  // Directed rounding (saturating): RCEIL-style scales use .rp.
  CHECK(e8m0.encode(2.1f, true, Round::TowardPosInf) == 0x81);
  CHECK(e8m0.encode(3.9f, true, Round::TowardZero) == 0x80);

  Oracle ue4m3 = named("ue4m3");
  CHECK(ue4m3.encode(448) == 0x7E);
  CHECK(ue4m3.encode(1000) == 0x7E);
  CHECK(ue4m3.encode(1000, false) == 0x7F);
  CHECK(ue4m3.encode(-1) == 0x38);
  CHECK(ue4m3.encode(-kInf) == 0x7E);
  CHECK(ue4m3.encode(kNan) == 0x7F);
  CHECK(ue4m3.encode(1.0f) == 0x38);

  Oracle int8 = named("int8");
  CHECK(int8.encode(2.5f) == 2);
  CHECK(int8.encode(3.5f) == 4);
  CHECK(int8.encode(-2.5f) == 0xFE);
  CHECK(int8.encode(-0.5f) == 0);
  CHECK(int8.encode(127.5f) == 127);
  CHECK(int8.encode(-200) == 0x80);
  CHECK(int8.encode(kInf) == 127);
  CHECK(int8.encode(kNan) == 0);
  Oracle uint4 = named("uint4");
  CHECK(uint4.encode(-3) == 0);
  CHECK(uint4.encode(14.5f) == 14);
  CHECK(uint4.encode(15.5f) == 15);
  CHECK(named("int4").encode(-8.5f) == 0x8);
  CHECK(named("int4").encode(7.49f) == 7);
}

TEST_CASE("oracle: MX scale exponents", "[oracle]") {
  // SEMANTICS: e4m3 amax=500 -> FLOOR k=0, RCEIL k=1; e2m1 amax=7 -> 0, 1.
  CHECK(oracle::mxFloorExponent(500, 448) == 0);
  CHECK(oracle::mxRceilExponent(500, 448) == 1);
  CHECK(oracle::mxFloorExponent(7, 6) == 0);
  CHECK(oracle::mxRceilExponent(7, 6) == 1);
  CHECK(oracle::mxFloorExponent(0, 448) == -127);
  CHECK(oracle::mxRceilExponent(448, 448) == 0);
}
