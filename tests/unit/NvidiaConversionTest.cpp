//===- NvidiaConversionTest.cpp - lowbit vs NVIDIA's own conversions ------===//
//
// cuda_fp8.h, cuda_fp6.h and cuda_fp4.h have host implementations of the
// conversions the hardware does; they are NVIDIA's statement of what `cvt`
// returns, so they are an oracle independent of ml_dtypes and of lowbit's
// table-search oracle. Every f16 and bf16 input and a random f32 set are
// compared; the whole f32 range is the `sweep` test.
//
//===----------------------------------------------------------------------===//

#include "NvidiaConversions.h"

#include "format/Codec.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <random>

using namespace lowbit;
using namespace lowbit::test;

namespace {

struct Mismatches {
  uint64_t checked = 0, failed = 0;
};

void checkInput(const NvidiaCase &nvCase, const Codec &codec, uint32_t bits,
                Mismatches &result) {
  float value = bitsToFloat(bits);
  ++result.checked;
  uint32_t expected = nvCase.convert(value);
  uint32_t got = codec.encode(value);
  if (expected == got)
    return;
  if (result.failed++ < 5)
    std::printf("  %s: input %a (0x%08x): NVIDIA 0x%02x, lowbit 0x%02x\n",
                nvCase.label, double(value), bits, expected, got);
}

} // namespace

TEST_CASE("fast path equals NVIDIA host conversions", "[nvidia]") {
  std::mt19937_64 rng(2026);
  std::vector<uint32_t> randomBits(1 << 20);
  for (uint32_t &bits : randomBits)
    bits = uint32_t(rng());
  for (const NvidiaCase &nvCase : nvidiaCases()) {
    Codec codec(*lookupFormat(nvCase.format), nvCase.options);
    Mismatches result;
    for (uint32_t i = 0; i < 65536; ++i) {
      checkInput(nvCase, codec, i << 16, result); // every bf16
      checkInput(nvCase, codec, floatBits(halfToFloat(uint16_t(i))), result);
    }
    for (uint32_t bits : randomBits)
      checkInput(nvCase, codec, bits, result);
    std::printf("vectors: %s vs NVIDIA host: %llu checked (all f16, all "
                "bf16, 2^20 random f32), %llu mismatches\n",
                nvCase.label, (unsigned long long)result.checked,
                (unsigned long long)result.failed);
    CHECK(result.failed == 0);
  }
}

TEST_CASE("array paths equal the scalar path", "[nvidia]") {
  // The array loops are compiled for several ISAs; they must give the same
  // bits as the scalar form for f32, f16 and bf16 inputs.
  std::vector<uint16_t> all16(65536);
  for (uint32_t i = 0; i < 65536; ++i)
    all16[i] = uint16_t(i);
  std::vector<float> asHalf(65536), asBFloat16(65536);
  for (uint32_t i = 0; i < 65536; ++i) {
    asHalf[i] = halfToFloat(uint16_t(i));
    asBFloat16[i] = bfloat16ToFloat(uint16_t(i));
  }
  for (const NvidiaCase &nvCase : nvidiaCases()) {
    Codec codec(*lookupFormat(nvCase.format), nvCase.options);
    std::vector<uint8_t> fromHalf(65536), fromBFloat16(65536),
        fromF32(65536);
    codec.encodeHalf(all16.data(), fromHalf.data(), all16.size());
    codec.encodeBFloat16(all16.data(), fromBFloat16.data(), all16.size());
    codec.encode(asHalf.data(), fromF32.data(), asHalf.size());
    uint64_t failed = 0;
    for (uint32_t i = 0; i < 65536; ++i) {
      failed += fromHalf[i] != codec.encode(asHalf[i]);
      failed += fromF32[i] != codec.encode(asHalf[i]);
      failed += fromBFloat16[i] != codec.encode(asBFloat16[i]);
    }
    INFO(nvCase.label);
    CHECK(failed == 0);
  }
}
