// The KV int8-group and FP8 schemes against their contract (docs/kv-cache.md).
#include "kv/KvQuantize.h"
#include "kv/KvEval.h"

#include "format/Quantize.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

using namespace lowbit;
using namespace lowbit::kv;

namespace {

/// The seed's contract, written out for one value: f32 scale = 127 /
/// max(amax, eps), q = clamp(rne(x * scale), -127, 127).
int8_t contractCode(float x, float amax) {
  float scale = 127.0f / std::max(amax, 1e-8f);
  float product = x * scale;
  return int8_t(std::clamp(std::rint(product), -127.0f, 127.0f));
}

} // namespace

TEST_CASE("kv_int8: a hand-computed group, ties to even") {
  std::vector<float> x = {1.0f, -2.0f, 0.5f, 4.0f};
  std::vector<int64_t> shape = {1, 4};
  Int8GroupOptions options;
  options.groupSize = 4;
  std::string error;
  auto tensor = quantizeInt8Groups(x, shape, options, &error);
  REQUIRE(tensor);
  // scale = 127 / 4 = 31.75; x * scale = 31.75, -63.5, 15.875, 127.
  CHECK(tensor->scales == std::vector<float>{31.75f});
  CHECK(tensor->codes == std::vector<int8_t>{32, -64, 16, 127});
  std::vector<float> back = dequantizeInt8Groups(*tensor);
  CHECK(back[0] == 32.0f / 31.75f);
  CHECK(back[1] == -64.0f / 31.75f);
  CHECK(back[3] == 4.0f);
}

TEST_CASE("kv_int8: a [2, 3, 8] tensor with G = 4 follows the contract") {
  std::vector<float> x = normalSamples(48, 7);
  x[5] = 0.0f; // one zero, one exact amax tie below
  x[13] = -x[12];
  std::vector<int64_t> shape = {2, 3, 8};
  Int8GroupOptions options;
  options.groupSize = 4;
  auto tensor = quantizeInt8Groups(x, shape, options, nullptr);
  REQUIRE(tensor);
  CHECK(tensor->scaleShape() == std::vector<int64_t>{2, 3, 2});
  REQUIRE(tensor->scales.size() == 12);
  REQUIRE(tensor->codes.size() == 48);
  for (int64_t group = 0; group < 12; ++group) {
    float amax = 0;
    for (int64_t i = 0; i < 4; ++i)
      amax = std::max(amax, std::fabs(x[group * 4 + i]));
    CHECK(tensor->scales[group] == 127.0f / amax);
    for (int64_t i = 0; i < 4; ++i)
      CHECK(tensor->codes[group * 4 + i] ==
            contractCode(x[group * 4 + i], amax));
  }
  std::vector<float> back = dequantizeInt8Groups(*tensor);
  for (size_t i = 0; i < x.size(); ++i)
    CHECK(back[i] == float(tensor->codes[i]) / tensor->scales[i / 4]);
}

TEST_CASE("kv_int8: a short last group, and rank 4") {
  std::vector<int64_t> shape = {2, 2, 3, 10};
  std::vector<float> x = normalSamples(120, 3);
  Int8GroupOptions options;
  options.groupSize = 4;
  auto tensor = quantizeInt8Groups(x, shape, options, nullptr);
  REQUIRE(tensor);
  CHECK(tensor->scaleShape() == std::vector<int64_t>{2, 2, 3, 3});
  // The last group of row 0 is columns 8 and 9 alone.
  float amax = std::max(std::fabs(x[8]), std::fabs(x[9]));
  CHECK(tensor->scales[2] == 127.0f / amax);
  CHECK(tensor->codes[9] == contractCode(x[9], amax));
}

TEST_CASE("kv_int8: the divisor convention equals lowbit's int8 groups") {
  std::vector<float> x = normalSamples(6 * 70, 11);
  std::vector<int64_t> shape = {6, 70};
  Int8GroupOptions options;
  options.convention = ScaleConvention::Divisor;
  auto tensor = quantizeInt8Groups(x, shape, options, nullptr);
  REQUIRE(tensor);
  Scheme scheme = *lookupScheme("int8_g64");
  scheme.scale.allowTail = true;
  auto reference = quantize(scheme, x, 6, 70, nullptr);
  REQUIRE(reference);
  CHECK(std::vector<int8_t>(reference->codes.begin(), reference->codes.end()) ==
        tensor->codes);
  for (size_t i = 0; i < tensor->scales.size(); ++i)
    CHECK(std::bit_cast<uint32_t>(tensor->scales[i]) ==
          reference->scaleCodes[i]);
  std::vector<float> back = dequantizeInt8Groups(*tensor);
  CHECK(back == *dequantize(*reference, nullptr));
}

TEST_CASE("kv_int8: zero groups, NaN and infinity") {
  std::vector<float> x = {0.0f,
                          0.0f,
                          0.0f,
                          0.0f,
                          std::numeric_limits<float>::quiet_NaN(),
                          1.0f,
                          -1.0f,
                          0.5f,
                          std::numeric_limits<float>::infinity(),
                          1.0f,
                          2.0f,
                          3.0f};
  std::vector<int64_t> shape = {3, 4};
  Int8GroupOptions options;
  options.groupSize = 4;
  auto tensor = quantizeInt8Groups(x, shape, options, nullptr);
  REQUIRE(tensor);
  // All zero: eps guards the division, codes and values stay 0.
  CHECK(tensor->scales[0] == 127.0f / 1e-8f);
  CHECK(dequantizeInt8Groups(*tensor)[0] == 0.0f);
  // NaN neither decides the scale nor gets a nonzero code.
  CHECK(tensor->scales[1] == 127.0f);
  CHECK(tensor->codes[4] == 0);
  CHECK(tensor->codes[5] == 127);
  // An infinity makes the scale 0: every code of the group is 0.
  CHECK(tensor->scales[2] == 0.0f);
  for (int i = 8; i < 12; ++i)
    CHECK(tensor->codes[i] == 0);
}

TEST_CASE("kv_int8: bad input is refused with a message") {
  std::string error;
  std::vector<float> x(8, 1.0f);
  Int8GroupOptions options;
  std::vector<int64_t> rank1 = {8};
  CHECK_FALSE(quantizeInt8Groups(x, rank1, options, &error));
  CHECK(error.find("rank >= 2") != std::string::npos);
  std::vector<int64_t> wrongSize = {3, 4};
  CHECK_FALSE(quantizeInt8Groups(x, wrongSize, options, &error));
  CHECK(error.find("12") != std::string::npos);
  std::vector<int64_t> shape = {2, 4};
  options.groupSize = 0;
  CHECK_FALSE(quantizeInt8Groups(x, shape, options, &error));
  CHECK(error.find("group size 0") != std::string::npos);
  options.groupSize = 4;
  options.epsilon = 0.0f;
  CHECK_FALSE(quantizeInt8Groups(x, shape, options, &error));
  CHECK(error.find("epsilon") != std::string::npos);
  std::vector<int64_t> zeroDim = {0, 4};
  options.epsilon = 1e-8f;
  CHECK_FALSE(quantizeInt8Groups({}, zeroDim, options, &error));
  CHECK(error.find("dimension 0") != std::string::npos);
  CHECK(parseScaleConvention("multiplier") == ScaleConvention::Multiplier);
  CHECK(parseScaleConvention("divisor") == ScaleConvention::Divisor);
  CHECK_FALSE(parseScaleConvention("reciprocal"));
}

TEST_CASE("kv_fp8: per tensor and per head, saturating") {
  std::vector<int64_t> shape = {1, 3, 2, 4}; // [batch, heads, tokens, dim]
  std::vector<float> x = normalSamples(24, 5);
  x[0] = 1e6f; // saturates to the format's max
  std::vector<float> scales = {0.5f, 2.0f, 0.25f};
  Format e4m3 = *lookupFormat("e4m3");
  auto perHead =
      quantizeFp8Kv(x, shape, Fp8KvOptions(e4m3, 1), scales, nullptr);
  REQUIRE(perHead);
  for (size_t i = 0; i < x.size(); ++i) {
    float scale = scales[i / 8];
    CHECK(perHead->codes[i] == encode(e4m3, x[i] / scale));
  }
  CHECK(e4m3.decode(perHead->codes[0]) == 448.0);
  std::vector<float> back = dequantizeFp8Kv(*perHead);
  CHECK(back[0] == 448.0f * 0.5f);
  CHECK(back[9] == e4m3.decodeToFloat(perHead->codes[9]) * 2.0f);

  Format e5m2 = *lookupFormat("e5m2");
  std::vector<float> one = {0.125f};
  auto perTensor = quantizeFp8Kv(x, shape, Fp8KvOptions(e5m2), one, nullptr);
  REQUIRE(perTensor);
  CHECK(perTensor->codes[3] == encode(e5m2, x[3] / 0.125f));

  std::string error;
  CHECK_FALSE(quantizeFp8Kv(x, shape, Fp8KvOptions(e4m3, 1), one, &error));
  CHECK(error.find("needs 3") != std::string::npos);
  std::vector<float> negative = {-1.0f};
  CHECK_FALSE(quantizeFp8Kv(x, shape, Fp8KvOptions(e4m3), negative, &error));
  CHECK(error.find("> 0") != std::string::npos);
  CHECK_FALSE(quantizeFp8Kv(x, shape, Fp8KvOptions(e4m3, 3), scales, &error));
  CHECK(error.find("head axis 3") != std::string::npos);
  CHECK_FALSE(quantizeFp8Kv(x, shape, Fp8KvOptions(*lookupFormat("e2m1")), one,
                            &error));
  CHECK(error.find("8-bit float") != std::string::npos);
}
