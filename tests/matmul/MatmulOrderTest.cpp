// The ordered reference (docs/matmul.md) and the float64 bound.
#include "format/Codec.h"
#include "matmul/MatmulBound.h"
#include "matmul/MatmulOrder.h"
#include "tests/matmul/MatmulTestData.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

using namespace lowbit;
using namespace lowbit::matmul;

namespace {

std::vector<uint8_t> f32Bytes(const std::vector<float> &values) {
  std::vector<uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::vector<float> f32Values(const std::vector<uint8_t> &bytes) {
  std::vector<float> values(bytes.size() / 4);
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

QuantizedTensor quantizeOrFail(const Scheme &scheme,
                               const std::vector<float> &values, int64_t rows,
                               int64_t cols) {
  std::string error;
  std::optional<QuantizedTensor> tensor =
      quantize(scheme, values, rows, cols, &error);
  INFO(error);
  REQUIRE(tensor);
  return *tensor;
}

} // namespace

TEST_CASE("matmul order: a hand-computed int8 product with a bias") {
  // amax 127 gives the scale 1: the codes are the values.
  std::vector<float> weights = {127, -1, 2, 0, 3, -127};
  QuantizedTensor w =
      quantizeOrFail(*lookupScheme("int8"), weights, /*rows=*/2, /*cols=*/3);
  std::vector<float> x = {1, 2, 3, -1, 0, 0.5f};
  std::vector<float> bias = {0.5f, -1};
  std::string error;
  std::optional<std::vector<uint8_t>> y = orderedMatmul(
      w, ValueType::F32, f32Bytes(x), 2, bias, ValueType::F32, &error);
  INFO(error);
  REQUIRE(y);
  // Row 0: 127 - 2 + 6 + 0.5, 0 + 6 - 381 - 1; row 1: -127 + 1 + 0.5,
  // 0 - 63.5 - 1.
  CHECK(f32Values(*y) == std::vector<float>{131.5f, -376, -125.5f, -64.5f});
  // f16 output: the same values, all exact in f16.
  y = orderedMatmul(w, ValueType::F32, f32Bytes(x), 2, bias, ValueType::F16,
                    &error);
  REQUIRE(y);
  CHECK(halfToFloat(uint16_t((*y)[2] | (*y)[3] << 8)) == -376.0f);
}

TEST_CASE("matmul order: slices, chunks and fma are really the order") {
  // Slice 0 holds k = 0 (1.0); slice 1 holds k = 32, 33 (2^-24 each). In
  // the order p[1] = 2^-23 and acc = 1 + 2^-23; summing k in sequence
  // gives 1 (each 2^-24 is a tie that rounds to even).
  const int64_t k = 64;
  std::vector<float> x(k, 0.0f), w(k, 1.0f);
  x[0] = 1.0f;
  x[32] = x[33] = std::ldexp(1.0f, -24);
  std::vector<float> acc = orderedAccumulate(x, w, {}, 1, 1, k);
  float sequential = 0;
  for (int64_t index = 0; index < k; ++index)
    sequential += x[size_t(index)] * w[size_t(index)];
  CHECK(sequential == 1.0f);
  CHECK(acc[0] == 1.0f + std::ldexp(1.0f, -23));

  // Chunk 32 (k = 1024) wraps back to slice 0, after chunk 0: both 2^-24
  // meet 1.0 one at a time and vanish. A 33rd slice would keep them.
  const int64_t wide = 1024 + 64;
  std::vector<float> xw(wide, 0.0f), ww(wide, 1.0f);
  xw[0] = 1.0f;
  xw[1024] = xw[1025] = std::ldexp(1.0f, -24);
  CHECK(orderedAccumulate(xw, ww, {}, 1, 1, wide)[0] == 1.0f);
  // The same terms one chunk later (slice 1) do add up.
  std::swap(xw[1024], xw[1024 + 32]);
  std::swap(xw[1025], xw[1025 + 32]);
  CHECK(orderedAccumulate(xw, ww, {}, 1, 1, wide)[0] ==
        1.0f + std::ldexp(1.0f, -23));

  // fmaf rounds x w + p once: (1 + 2^-12)^2 - 1 keeps its 2^-24 term,
  // which a multiply then an add would lose.
  std::vector<float> xf = {-1.0f, 1.0f + std::ldexp(1.0f, -12)};
  std::vector<float> wf = {1.0f, 1.0f + std::ldexp(1.0f, -12)};
  float product = xf[1] * wf[1];
  CHECK(product - 1.0f == std::ldexp(1.0f, -11));
  CHECK(orderedAccumulate(xf, wf, {}, 1, 1, 2)[0] ==
        std::ldexp(1.0f, -11) + std::ldexp(1.0f, -24));

  // The bias comes after the slices' sum: 1 + 2^-23 + (-1) in that order.
  std::vector<float> bias = {-1.0f};
  CHECK(orderedAccumulate(x, w, bias, 1, 1, k)[0] == std::ldexp(1.0f, -23));
}

TEST_CASE("matmul order: the output rounding") {
  CHECK(roundOutputBits(ValueType::F16, 65520.0f) == 0x7c00u); // to inf
  CHECK(roundOutputBits(ValueType::F16, -65520.0f) == 0xfc00u);
  CHECK(roundOutputBits(ValueType::F16, 1.0f + std::ldexp(1.0f, -11)) ==
        0x3c00u); // tie to even
  CHECK(roundOutputBits(ValueType::BF16, 1.0f + std::ldexp(1.0f, -8)) ==
        0x3f80u);
  CHECK(roundOutputBits(ValueType::BF16, -NAN) == 0x7fffu);
  CHECK(roundOutputBits(ValueType::F32, -NAN) == 0x7fffffffu);
  CHECK(roundOutputBits(ValueType::F32, -0.0f) == 0x80000000u);
}

TEST_CASE("matmul order: f16 and bf16 X take w rounded to their dtype") {
  // Both codes are 127 and dequantize to about 1 + 2^-9: not a bf16.
  std::vector<float> weights = {1.0f + std::ldexp(1.0f, -9), 1.0f};
  Scheme scheme = *parseSchemeText("scheme(format=int8,scale=per_tensor)");
  QuantizedTensor w = quantizeOrFail(scheme, weights, 1, 2);
  std::string error;
  std::optional<std::vector<float>> asF32 =
      orderedWeights(w, ValueType::F32, &error);
  std::optional<std::vector<float>> asBf16 =
      orderedWeights(w, ValueType::BF16, &error);
  std::optional<std::vector<float>> asF16 =
      orderedWeights(w, ValueType::F16, &error);
  REQUIRE(asF32);
  REQUIRE(asBf16);
  REQUIRE(asF16);
  for (size_t index = 0; index < 2; ++index) {
    float value = (*asF32)[index];
    CHECK((*asBf16)[index] == bfloat16ToFloat(floatToBFloat16(value)));
    CHECK((*asF16)[index] == halfToFloat(floatToHalf(value)));
  }
  // The code for 1 + 2^-9 (scale (1 + 2^-9) / 127) is not exactly
  // representable in bf16, so the rounding shows.
  CHECK((*asBf16)[0] != (*asF32)[0]);
}

TEST_CASE("matmul order: refusals are messages") {
  std::vector<float> weights(4 * 64, 0.5f);
  QuantizedTensor w = quantizeOrFail(*lookupScheme("mxfp4"), weights, 4, 64);
  std::vector<float> x(3 * 63, 1.0f);
  std::string error;
  CHECK_FALSE(orderedMatmul(w, ValueType::F32, f32Bytes(x), 3, {},
                            ValueType::F32, &error));
  CHECK(error == "X holds 756 bytes, not 3 x 64 f32 elements");
  std::vector<float> xGood(3 * 64, 1.0f), bias(5, 0.0f);
  CHECK_FALSE(orderedMatmul(w, ValueType::F32, f32Bytes(xGood), 3, bias,
                            ValueType::F32, &error));
  CHECK(error == "the bias has 5 elements, not n=4");
}

TEST_CASE("matmul bound: the depth is slice length + 31 (+1 with a bias)") {
  CHECK(roundingDepth(1, false) == 1 + 31);
  CHECK(roundingDepth(100, false) == 32 + 31);
  CHECK(roundingDepth(1024, true) == 32 + 31 + 1);
  CHECK(roundingDepth(1025, false) == 64 + 31);
  CHECK(roundingDepth(4096, false) == 128 + 31);
}

TEST_CASE("matmul bound: holds for every weight scheme, and can fail") {
  const int64_t m = 5, n = 19, k = 200;
  std::vector<float> weights = test::weightLikeMatrix(n, k, 11);
  std::vector<float> bias = test::biasVector(n, 12);
  for (const test::WeightSchemeCase &weightCase : test::weightSchemeCases()) {
    Scheme scheme = test::schemeOf(weightCase);
    QuantizedTensor w = quantizeOrFail(scheme, weights, n, k);
    for (ValueType dtype : {ValueType::F32, ValueType::F16, ValueType::BF16}) {
      INFO(weightCase.label << " from=" << valueTypeName(dtype));
      std::vector<uint8_t> xBytes = test::normalActivations(dtype, m, k, 13);
      std::string error;
      std::optional<std::vector<uint8_t>> y =
          orderedMatmul(w, dtype, xBytes, m, bias, dtype, &error);
      INFO(error);
      REQUIRE(y);
      std::vector<float> x = widenActivations(dtype, xBytes);
      std::vector<float> wOrdered = *orderedWeights(w, dtype, &error);
      BoundCheck check =
          checkFloat64Bound(x, wOrdered, bias, *y, dtype, m, n, k);
      INFO(check.failure);
      CHECK(check.holds);
      CHECK(check.worstRatio <= 1.0);
      // Not vacuous: f32 stays within a few u of S; f16/bf16 within u_out.
      CHECK(check.worstRelative < (dtype == ValueType::F32   ? 1e-6
                                   : dtype == ValueType::F16 ? 1e-3
                                                             : 4e-3));
    }
  }
  // Not a check that cannot fail: Y[0,0] moved by 1e-4 of its S (the
  // bound is about 4e-6 S here) fails it, and so does an inf.
  Scheme scheme = *lookupScheme("mxfp8");
  QuantizedTensor w = quantizeOrFail(scheme, weights, n, k);
  std::vector<uint8_t> xBytes =
      test::normalActivations(ValueType::F32, m, k, 13);
  std::string error;
  std::vector<uint8_t> y =
      *orderedMatmul(w, ValueType::F32, xBytes, m, {}, ValueType::F32, &error);
  std::vector<float> x = widenActivations(ValueType::F32, xBytes);
  std::vector<float> wOrdered = *orderedWeights(w, ValueType::F32, &error);
  std::vector<float> values = f32Values(y);
  double absSum = 0;
  for (int64_t index = 0; index < k; ++index)
    absSum += std::fabs(double(x[size_t(index)]) * wOrdered[size_t(index)]);
  values[0] += float(absSum * 1e-4);
  BoundCheck broken = checkFloat64Bound(x, wOrdered, {}, f32Bytes(values),
                                        ValueType::F32, m, n, k);
  CHECK_FALSE(broken.holds);
  CHECK(broken.failure.starts_with("Y[0,0] = "));
  values[0] = INFINITY;
  CHECK_FALSE(checkFloat64Bound(x, wOrdered, {}, f32Bytes(values),
                                ValueType::F32, m, n, k)
                  .holds);
}
