//===- ParametricFormatTest.cpp - User formats vs the oracle --------------===//
//
// lowbit accepts formats by parameters ([u]e<E>m<M>[b<BIAS>][-ieee|-fn|
// -finite], [u]int<N>). No third-party library knows these, so the fast
// path is compared with the oracle, built from the parsed parameters, on
// every code, every f16 and bf16 input and the random f32 set.
//
//===----------------------------------------------------------------------===//

#include "Oracle.h"
#include "TestVectors.h"
#include "VectorCheck.h"

#include "format/Codec.h"
#include "format/Format.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace testvectors;

namespace {

// A spread of shapes: more mantissa than exponent, IEEE specials with an
// odd bias, unsigned, no mantissa (e8m0-like), finite-only, a wide
// integer.
const char *const kUserFormats[] = {
    "e3m4",      "e4m3b11-ieee", "ue5m3",   "e5m0",      "e2m2",
    "e4m3-ieee", "e5m2-fn",      "e3m3-finite", "ue4m4-fn", "e6m1",
    "e4m4b5",    "int6",         "uint3"};

} // namespace

TEST_CASE("parametric formats: fast path vs oracle", "[format][parametric]") {
  InputSet random;
  random.name = "random-f32";
  random.values.clear();
  for (uint32_t bits : load("random_f32.bin"))
    random.values.push_back(toFloat(bits));
  InputSet edges;
  edges.name = "edges";
  for (uint32_t bits : load("edges_f32.bin"))
    edges.values.push_back(toFloat(bits));
  InputSet halves, brains;
  halves.name = "f16-exhaustive";
  halves.raw = InputSet::Raw::Half;
  brains.name = "bf16-exhaustive";
  brains.raw = InputSet::Raw::BFloat16;
  std::vector<uint32_t> f16 = load("decode_f16.bin");
  std::vector<uint32_t> bf16 = load("decode_bf16.bin");
  for (uint32_t i = 0; i < 65536; ++i) {
    halves.values.push_back(toFloat(f16[i]));
    halves.raw16.push_back(uint16_t(i));
    brains.values.push_back(toFloat(bf16[i]));
    brains.raw16.push_back(uint16_t(i));
  }

  for (const char *name : kUserFormats) {
    std::string error;
    std::optional<lowbit::Format> format = lowbit::lookupFormat(name, &error);
    INFO("format " << name << ": " << error);
    REQUIRE(format.has_value());
    oracle::Oracle oracle(specFromParams(*format));
    CHECK(format->maxValue() == oracle.maxValue());
    CHECK(format->maxCode() == oracle.maxCode());
    CHECK(format->nanResultCode() == oracle.nanResult());

    Tally decode(std::string(name) + " every-code decode() vs-oracle");
    for (uint32_t code = 0; code < format->codeCount(); ++code) {
      double want = oracle.decode(code), got = format->decode(code);
      bool ok = std::isnan(want) ? std::isnan(got)
                                 : got == want &&
                                       std::signbit(got) == std::signbit(want);
      decode.check(ok, "code " + hex(code));
    }
    CHECK(decode.report() == 0);

    std::vector<bool> modes = format->isInt() ? std::vector<bool>{true}
                                              : std::vector<bool>{true, false};
    for (bool saturate : modes)
      for (const InputSet *inputs : {&halves, &brains, &random, &edges})
        checkInputSet(name, *format, oracle, *inputs, nullptr, saturate);
  }
}

TEST_CASE("parametric formats: spelled parameters", "[format][parametric]") {
  // The default bias is the IEEE one, 2^(E-1) - 1, and an explicit b<BIAS>
  // wins; "u" drops the sign bit.
  std::optional<lowbit::Format> e3m4 = lowbit::lookupFormat("e3m4");
  REQUIRE(e3m4.has_value());
  CHECK(e3m4->floatParams().bias == 3);
  CHECK(e3m4->bits() == 8);
  std::optional<lowbit::Format> biased = lowbit::lookupFormat("e4m3b11-ieee");
  REQUIRE(biased.has_value());
  CHECK(biased->floatParams().bias == 11);
  CHECK(biased->hasInf());
  std::optional<lowbit::Format> unsignedFormat = lowbit::lookupFormat("ue5m3");
  REQUIRE(unsignedFormat.has_value());
  CHECK(!unsignedFormat->isSigned());
  CHECK(unsignedFormat->bits() == 8);
  // A named format's parameters spelled out give the named format.
  std::optional<lowbit::Format> spelled = lowbit::lookupFormat("e4m3b7-fn");
  REQUIRE(spelled.has_value());
  CHECK(spelled->name() == "e4m3");
}
