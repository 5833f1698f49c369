//===- FormatVectorsTest.cpp - lowbit's format model vs ml_dtypes ---------===//
//
// Checks the format model (format/Format.h, format/Codec.h) against the
// independent vectors in tests/data (made by tools/gen_test_vectors.py with
// ml_dtypes and numpy) and against the reference oracle, on every code,
// every f16 and bf16 input, a million random f32 inputs and the edge cases.
// Where ml_dtypes follows a different convention than lowbit's PTX one, the
// adjustment is made (and named) in testvectors::expectedCode.
//
//===----------------------------------------------------------------------===//

#include "Oracle.h"
#include "TestVectors.h"
#include "VectorCheck.h"

#include "format/Codec.h"
#include "format/Format.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

using namespace testvectors;

namespace {

const std::vector<std::string> kAllNamed = {
    "e4m3", "e5m2", "e2m3", "e3m2", "e2m1",  "e8m0", "ue4m3",
    "f16",  "bf16", "int8", "int4", "uint4", "uint8"};

lowbit::Format mustLookup(const std::string &name) {
  std::string error;
  std::optional<lowbit::Format> format = lowbit::lookupFormat(name, &error);
  INFO("lookupFormat(" << name << "): " << error);
  REQUIRE(format.has_value());
  return *format;
}

oracle::Oracle namedOracle(const std::string &name) {
  std::optional<oracle::Spec> spec = oracle::namedSpec(name);
  REQUIRE(spec.has_value());
  return oracle::Oracle(*spec);
}

bool sameValue(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

std::vector<float> asFloats(const std::vector<uint32_t> &bits) {
  std::vector<float> values(bits.size());
  for (size_t i = 0; i < bits.size(); ++i)
    values[i] = toFloat(bits[i]);
  return values;
}

/// Reference codes of `target` for a vector set, adjusted to lowbit's
/// conventions. ue4m3 is not in ml_dtypes: it is e4m3 without the sign, so
/// its expectation is the e4m3 code without the sign bit (unsigned formats
/// encode |x|, and e4m3 is symmetric), and 0x7F for NaN.
std::vector<uint32_t> expectedFor(const std::string &target,
                                  const std::string &fileStem,
                                  const std::vector<float> &inputs,
                                  bool saturate) {
  bool derived = target == "ue4m3";
  std::string source = derived ? "e4m3" : target;
  std::vector<uint32_t> reference = load(fileStem + source + ".bin");
  REQUIRE(reference.size() == inputs.size());
  oracle::Oracle format = namedOracle(source);
  std::vector<uint32_t> expected(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    uint32_t code = expectedCode(format, inputs[i], reference[i], saturate);
    if (derived) {
      if (std::isnan(inputs[i]))
        code = 0x7F;
      else
        code &= 0x7F;
    }
    expected[i] = code;
  }
  return expected;
}

bool hasReference(const std::string &fileStem, const std::string &target) {
  std::string source = target == "ue4m3" ? "e4m3" : target;
  std::ifstream probe(dataPath(fileStem + source + ".bin"));
  return bool(probe);
}

/// Modes worth checking: integers and formats without inf/NaN convert the
/// same way in both; they are checked in both anyway except integers
/// (non-saturating integer conversion is not part of the contract).
std::vector<bool> modesFor(const lowbit::Format &format) {
  if (format.isInt())
    return {true};
  return {true, false};
}

void checkTargets(const InputSet &inputs, const std::string &fileStem,
                  const std::vector<std::string> &targets) {
  for (const std::string &target : targets) {
    lowbit::Format format = mustLookup(target);
    oracle::Oracle oracle = namedOracle(target);
    bool reference = hasReference(fileStem, target);
    for (bool saturate : modesFor(format)) {
      if (reference) {
        std::vector<uint32_t> expected =
            expectedFor(target, fileStem, inputs.values, saturate);
        checkInputSet(target, format, oracle, inputs, &expected, saturate);
      } else {
        checkInputSet(target, format, oracle, inputs, nullptr, saturate);
      }
    }
  }
}

} // namespace

TEST_CASE("model: named formats have the contract's parameters",
          "[format]") {
  for (const std::string &name : kAllNamed) {
    INFO("format " << name);
    lowbit::Format format = mustLookup(name);
    oracle::Oracle oracle = namedOracle(name);
    const oracle::Spec &spec = oracle.spec();
    CHECK(format.isInt() == spec.isInt);
    CHECK(format.isSigned() == spec.isSigned);
    CHECK(format.bits() == oracle.bits());
    CHECK(format.maxValue() == oracle.maxValue());
    CHECK(format.maxCode() == oracle.maxCode());
    CHECK(format.nanResultCode() == oracle.nanResult());
    if (!spec.isInt) {
      oracle::Spec fromModel = specFromParams(format);
      CHECK(fromModel.expBits == spec.expBits);
      CHECK(fromModel.manBits == spec.manBits);
      CHECK(fromModel.bias == spec.bias);
      CHECK(fromModel.specials == spec.specials);
    }
    bool listed = std::any_of(
        lowbit::namedFormats().begin(), lowbit::namedFormats().end(),
        [&](const lowbit::Format &named) { return named.name() == name; });
    CHECK(listed);
  }
}

TEST_CASE("decode: every code of every format", "[format][decode]") {
  for (const std::string &name : kAllNamed) {
    lowbit::Format format = mustLookup(name);
    oracle::Oracle oracle = namedOracle(name);
    lowbit::Codec codec(format);
    std::vector<uint32_t> reference;
    bool hasFile = hasReference("decode_", name) && name != "ue4m3";
    if (hasFile)
      reference = load("decode_" + name + ".bin");
    Tally vsOracle(name + " every-code decode() vs-oracle");
    Tally vsCodec(name + " every-code Codec::decode vs-oracle");
    Tally vsReference(name + " every-code decode() vs-reference");
    Tally oracleVsReference(name + " every-code oracle vs-reference");
    for (uint32_t code = 0; code < format.codeCount(); ++code) {
      double truth = oracle.decode(code);
      auto describe = [&](double got, double want) {
        std::ostringstream out;
        out.precision(17);
        out << "code " << hex(code) << ": expected " << want << ", got "
            << got;
        return out.str();
      };
      double got = format.decode(code);
      vsOracle.check(sameValue(got, truth), describe(got, truth));
      double viaCodec = codec.decode(code);
      vsCodec.check(sameValue(viaCodec, truth), describe(viaCodec, truth));
      CHECK(format.isNanCode(code) == std::isnan(truth));
      CHECK(format.isInfCode(code) == std::isinf(truth));
      if (hasFile) {
        REQUIRE(reference.size() == format.codeCount());
        double want = toFloat(reference[code]);
        vsReference.check(sameValue(got, want), describe(got, want));
        oracleVsReference.check(sameValue(truth, want), describe(truth, want));
      }
    }
    CHECK(vsOracle.report() == 0);
    CHECK(vsCodec.report() == 0);
    if (hasFile) {
      CHECK(vsReference.report() == 0);
      CHECK(oracleVsReference.report() == 0);
    }
  }
}

TEST_CASE("widening: f16 and bf16 to f32 are exact", "[format][decode]") {
  std::vector<uint32_t> f16 = load("decode_f16.bin");
  std::vector<uint32_t> bf16 = load("decode_bf16.bin");
  Tally half("f16 every-code halfToFloat vs-reference");
  Tally brain("bf16 every-code bfloat16ToFloat vs-reference");
  for (uint32_t code = 0; code < 65536; ++code) {
    float want = toFloat(f16[code]);
    float got = lowbit::halfToFloat(uint16_t(code));
    half.check(sameValue(got, want), "f16 " + hex(code) + " -> " +
                                         hex(toBits(got)));
    want = toFloat(bf16[code]);
    got = lowbit::bfloat16ToFloat(uint16_t(code));
    brain.check(sameValue(got, want), "bf16 " + hex(code) + " -> " +
                                          hex(toBits(got)));
  }
  CHECK(half.report() == 0);
  CHECK(brain.report() == 0);
}

TEST_CASE("encode: every f16 and bf16 input", "[format][encode]") {
  std::vector<std::string> narrow = {"e4m3", "e5m2", "e2m3", "e3m2",
                                     "e2m1", "e8m0", "ue4m3", "int8",
                                     "int4", "uint4", "uint8"};
  for (std::string source : {"f16", "bf16"}) {
    InputSet inputs;
    inputs.name = source + "-exhaustive";
    // Widened with numpy/ml_dtypes, not with lowbit.
    inputs.values = asFloats(load("decode_" + source + ".bin"));
    inputs.raw16.resize(65536);
    for (uint32_t i = 0; i < 65536; ++i)
      inputs.raw16[i] = uint16_t(i);
    inputs.raw = source == "f16" ? InputSet::Raw::Half
                                 : InputSet::Raw::BFloat16;
    std::vector<std::string> targets = narrow;
    targets.push_back(source == "f16" ? "bf16" : "f16");
    checkTargets(inputs, source + "_all_to_", targets);
  }
}

TEST_CASE("encode: IEEE narrowing floatToHalf / floatToBFloat16",
          "[format][encode]") {
  // Non-saturating IEEE conversions (numpy / ml_dtypes): overflow gives inf,
  // NaN stays NaN (payload not compared).
  struct Case {
    const char *inputs, *reference;
    bool toHalf;
  };
  for (Case c : {Case{"decode_bf16.bin", "bf16_all_to_f16.bin", true},
                 Case{"decode_f16.bin", "f16_all_to_bf16.bin", false},
                 Case{"edges_f32.bin", "edges_to_f16.bin", true},
                 Case{"edges_f32.bin", "edges_to_bf16.bin", false}}) {
    std::vector<float> inputs = asFloats(load(c.inputs));
    std::vector<uint32_t> reference = load(c.reference);
    REQUIRE(inputs.size() == reference.size());
    Tally tally(std::string(c.toHalf ? "floatToHalf " : "floatToBFloat16 ") +
                c.reference + " vs-reference");
    for (size_t i = 0; i < inputs.size(); ++i) {
      uint32_t got = c.toHalf ? lowbit::floatToHalf(inputs[i])
                              : lowbit::floatToBFloat16(inputs[i]);
      uint32_t want = reference[i];
      bool ok = got == want;
      if (std::isnan(inputs[i])) {
        float gotValue = c.toHalf ? lowbit::halfToFloat(uint16_t(got))
                                  : lowbit::bfloat16ToFloat(uint16_t(got));
        ok = std::isnan(gotValue);
      }
      if (ok)
        tally.check(true, "");
      else
        tally.checkCode(inputs[i], got, want);
    }
    CHECK(tally.report() == 0);
  }
}

TEST_CASE("encode: random f32 inputs", "[format][encode]") {
  InputSet inputs;
  inputs.name = "random-f32";
  inputs.values = asFloats(load("random_f32.bin"));
  REQUIRE(inputs.values.size() >= 1000000);
  // Reference vectors for the ml_dtypes formats and int8; the oracle alone
  // for the others.
  checkTargets(inputs, "random_to_",
               {"e4m3", "e5m2", "e2m3", "e3m2", "e2m1", "e8m0", "ue4m3",
                "int8", "int4", "uint4", "uint8", "f16", "bf16"});
}

TEST_CASE("encode: edge cases (ties, max, min, specials)", "[format][encode]") {
  InputSet inputs;
  inputs.name = "edges";
  inputs.values = asFloats(load("edges_f32.bin"));
  checkTargets(inputs, "edges_to_",
               {"e4m3", "e5m2", "e2m3", "e3m2", "e2m1", "e8m0", "ue4m3",
                "int8", "int4", "uint4", "uint8", "f16", "bf16"});
}
