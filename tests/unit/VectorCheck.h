//===- VectorCheck.h - Run one input set through lowbit and the oracle ----===//

#ifndef LOWBIT_TESTS_UNIT_VECTORCHECK_H
#define LOWBIT_TESTS_UNIT_VECTORCHECK_H

#include "Oracle.h"
#include "TestVectors.h"

#include "format/Codec.h"
#include "format/Format.h"

#include <catch2/catch.hpp>

namespace testvectors {

inline oracle::Spec specFromParams(const lowbit::Format &format) {
  oracle::Spec spec;
  spec.isSigned = format.isSigned();
  if (format.isInt()) {
    spec.isInt = true;
    spec.intBits = format.bits();
    return spec;
  }
  const lowbit::FloatParams &params = format.floatParams();
  spec.expBits = params.expBits;
  spec.manBits = params.manBits;
  spec.bias = params.bias;
  spec.specials = params.specials == lowbit::SpecialCodes::Ieee
                      ? oracle::Specials::Ieee
                  : params.specials == lowbit::SpecialCodes::AllOnesNan
                      ? oracle::Specials::AllOnesNan
                      : oracle::Specials::FiniteOnly;
  return spec;
}

/// Inputs of one set, as f32, and (optionally) the same inputs as raw f16
/// or bf16 bits for the Codec's half-precision array paths.
struct InputSet {
  std::string name;
  std::vector<float> values;
  std::vector<uint16_t> raw16;
  enum class Raw { None, Half, BFloat16 } raw = Raw::None;
};

/// Checks `format` on `inputs` in one mode: the scalar fast path
/// (lowbit::encode), the Codec array paths and the oracle. With `expected`
/// (reference codes already adjusted to lowbit's conventions), everything
/// is compared with it; without, the fast paths are compared with the
/// oracle. Each comparison prints a "vectors:" line.
inline void checkInputSet(const std::string &formatName,
                          const lowbit::Format &format,
                          const oracle::Oracle &oracle, const InputSet &inputs,
                          const std::vector<uint32_t> *expected,
                          bool saturate) {
  lowbit::EncodeOptions options;
  options.saturate = saturate;
  std::string prefix = formatName + " " + inputs.name + " " +
                       (saturate ? "sat" : "nonsat") + " ";
  size_t count = inputs.values.size();

  std::vector<uint32_t> oracleCodes(count);
  for (size_t i = 0; i < count; ++i)
    oracleCodes[i] = oracle.encode(inputs.values[i], saturate);
  const std::vector<uint32_t> &truth = expected ? *expected : oracleCodes;
  std::string against = expected ? "vs-reference" : "vs-oracle";

  if (expected) {
    Tally tally(prefix + "oracle vs-reference");
    for (size_t i = 0; i < count; ++i)
      tally.checkCode(inputs.values[i], oracleCodes[i], truth[i]);
    CHECK(tally.report() == 0);
  }

  Tally scalar(prefix + "encode() " + against);
  for (size_t i = 0; i < count; ++i)
    scalar.checkCode(inputs.values[i],
                     lowbit::encode(format, inputs.values[i], options),
                     truth[i]);
  CHECK(scalar.report() == 0);

  lowbit::Codec codec(format, options);
  Tally array(prefix + "Codec::encode(f32[]) " + against);
  if (format.bits() <= 8) {
    std::vector<uint8_t> codes(count);
    codec.encode(inputs.values.data(), codes.data(), count);
    for (size_t i = 0; i < count; ++i)
      array.checkCode(inputs.values[i], codes[i], truth[i]);
  } else {
    std::vector<uint16_t> codes(count);
    codec.encode(inputs.values.data(), codes.data(), count);
    for (size_t i = 0; i < count; ++i)
      array.checkCode(inputs.values[i], codes[i], truth[i]);
  }
  CHECK(array.report() == 0);

  if (inputs.raw != InputSet::Raw::None && format.bits() <= 8) {
    bool half = inputs.raw == InputSet::Raw::Half;
    Tally halfArray(prefix + (half ? "Codec::encodeHalf " : "Codec::encodeBFloat16 ") +
                    against);
    std::vector<uint8_t> codes(count);
    if (half)
      codec.encodeHalf(inputs.raw16.data(), codes.data(), count);
    else
      codec.encodeBFloat16(inputs.raw16.data(), codes.data(), count);
    for (size_t i = 0; i < count; ++i)
      halfArray.checkCode(inputs.values[i], codes[i], truth[i]);
    CHECK(halfArray.report() == 0);
  }
}

} // namespace testvectors

#endif // LOWBIT_TESTS_UNIT_VECTORCHECK_H
