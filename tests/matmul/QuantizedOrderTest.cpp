// The quantized-activation matmul (docs/matmul.md, "Quantized
// activations"): the spec's w=/a= form and its refusals, the order of the
// reference on hand-built cases whose bits change under another order, the
// int32 accumulation, and the float64 bound for every pair of issue 28.
#include "matmul/QuantizedOrder.h"
#include "format/Codec.h"
#include "format/Format.h"
#include "matmul/MatmulBound.h"
#include "matmul/MatmulOrder.h"
#include "tests/matmul/MatmulTestData.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace lowbit;
using namespace lowbit::matmul;

namespace {

std::string refusalOf(std::string_view text) {
  std::string error;
  std::optional<MatmulSpec> spec = parseMatmulSpec(text, &error);
  CHECK_FALSE(spec.has_value());
  return error;
}

Scheme schemeNamed(std::string_view text) {
  std::optional<Scheme> scheme = parseSchemeText(text);
  REQUIRE(scheme);
  return *scheme;
}

/// A per-tensor tensor of `scheme` with one row of code values and scale 1.
QuantizedTensor codesRow(const Scheme &scheme, std::vector<float> values) {
  QuantizedTensor tensor(scheme);
  tensor.rows = 1;
  tensor.cols = int64_t(values.size());
  for (float value : values) {
    uint32_t code = encode(scheme.element, value);
    REQUIRE(scheme.element.decodeToFloat(code) == value);
    tensor.codes.push_back(uint8_t(code));
  }
  tensor.scaleCodes = {floatBits(1.0f)};
  return tensor;
}

} // namespace

TEST_CASE("quantized matmul spec: w= a= and the canonical text") {
  std::optional<MatmulSpec> spec =
      parseMatmulSpec("matmul w=fp8_e4m3 a=fp8_e4m3 from=bf16");
  REQUIRE(spec);
  REQUIRE(spec->activation);
  CHECK(spec->activation->name == "fp8_e4m3");
  CHECK(printMatmulSpec(*spec) ==
        "matmul w=fp8_e4m3 a=fp8_e4m3 from=bf16 to=bf16 dynamic");
  spec = parseMatmulSpec(
      "hadamard(128) | rmsnorm(eps=1e-05) | matmul w=mxfp4 a=mxfp4 bias "
      "n=64 k=256");
  REQUIRE(spec);
  CHECK(spec->prologues.size() == 2);
  std::string text = printMatmulSpec(*spec);
  CHECK(text == "hadamard(128) | rmsnorm(eps=1e-05) | matmul w=mxfp4 "
                "a=mxfp4 from=f32 to=f32 bias n=64 k=256");
  CHECK(parseMatmulSpec(text) == spec);
  // The weight-only form is unchanged.
  spec = parseMatmulSpec("matmul int4_g128 from=bf16");
  REQUIRE(spec);
  CHECK_FALSE(spec->activation);
  for (const ActivationPairEntry &pair : activationPairEntries()) {
    std::string pairText = std::string("matmul w=") + pair.weights +
                           " a=" + pair.activations + " from=bf16 bias";
    std::string error;
    std::optional<MatmulSpec> parsed = parseMatmulSpec(pairText, &error);
    INFO(pairText << ": " << error);
    REQUIRE(parsed);
    CHECK(parseMatmulSpec(printMatmulSpec(*parsed)) == parsed);
  }
}

TEST_CASE("quantized matmul spec: pairs that cannot work are refused") {
  CHECK(refusalOf("matmul w=int8 a=fp8_e4m3") ==
        "'w=int8 a=fp8_e4m3': the weights are int8 and the activations "
        "e4m3: both integer or both float (no tensor-core instruction "
        "multiplies an integer by a float)");
  CHECK(refusalOf("matmul w=mxfp4 a=nvfp4") ==
        "'w=mxfp4 a=nvfp4': the activations' scales cover 16 along K and "
        "the weights' 32: the order scales each K block once per side, so "
        "both extents are equal (or one side's scale covers all of K)");
  CHECK(refusalOf("matmul w=int8 a=int4_g128")
            .ends_with("the activations' scheme has zero points: with "
                       "quantized activations "
                       "both sides are symmetric, so that a product of codes "
                       "is a product of "
                       "values"));
  CHECK(refusalOf("matmul w=fp8_e4m3 a=scheme(format=e4m3,scale=block(2x64),"
                  "tail=true)")
            .ends_with("the activations' scales are block; X takes one scale "
                       "per tensor, one per token (row of X) or groups along "
                       "K (group(G;axis=1))"));
  CHECK(refusalOf("hadamard(128) | matmul mxfp4") ==
        "the prologue 'hadamard(128)' goes in front of the activations' "
        "quantize: it needs 'matmul w=SCHEME a=SCHEME'");
  CHECK(refusalOf("matmul w=mxfp4 from=bf16") ==
        "'w=mxfp4' needs a=SCHEME next (the weight-only form is 'matmul "
        "SCHEME')");
  CHECK(refusalOf("matmul a=mxfp4 w=mxfp4") ==
        "'a=mxfp4': a= follows w=SCHEME (matmul w=SCHEME a=SCHEME)");
  CHECK(refusalOf("hadamard(128) | matmul w=mxfp4 a=mxfp4")
            .starts_with("the prologues at K = dynamic: 'hadamard(128)' needs "
                         "a static column "
                         "count"));
  CHECK(refusalOf("matmul w=scheme(format=int8,scale=per_token) "
                  "a=scheme(format=int8,scale=per_token) n=4 k=200000") ==
        "k=200000: an integer block of the order sums its code products in "
        "int32, exact for at most 131071 of them");
  CHECK(refusalOf("matmul w=mxfp4 a=scheme(format=e2m1,scale=group(32;axis="
                  "1),type=e8m0,rule=floor,packing=nibble) n=4 k=48") ==
        "k=48: the activations' last group of 32 straddles K's end and their "
        "scheme allows no tail (tail=false)");
  CHECK(refusalOf("matmul w=mxfp4 a=mxfp4 a=mxfp4") ==
        "'a=mxfp4': unknown key 'a' (from, to, n, k; w= and a= come first; "
        "or the words bias, dynamic)");
}

TEST_CASE("quantized matmul order: K blocks promote f32 partial sums") {
  // Block 0 holds 256; block 1 eight products of 2^-18, 2^-15 together:
  // acc = 256 + 2^-15, exact. One f32 chain over K would add each 2^-18 to
  // 256 (half an ulp is 2^-16) and lose every one.
  Scheme fp8 = schemeNamed("fp8_e4m3");
  std::vector<float> xs(136, 0.0f), ws(136, 0.0f);
  xs[0] = 16.0f;
  ws[0] = 16.0f;
  for (int index = 128; index < 136; ++index)
    xs[size_t(index)] = ws[size_t(index)] = std::ldexp(1.0f, -9);
  QuantizedTensor x = codesRow(fp8, xs), w = codesRow(fp8, ws);
  CHECK(orderBlockK(fp8, fp8, 136) == kPromotionK);
  std::vector<float> acc = quantizedAccumulate(x, w, {});
  CHECK(acc[0] == 256.0f + std::ldexp(1.0f, -15));
  float chain = 0.0f;
  for (size_t index = 0; index < xs.size(); ++index)
    chain = std::fmaf(xs[index], ws[index], chain);
  CHECK(chain == 256.0f); // the order really differs from one chain

  // The scale factor fx * fw is rounded to f32 before the block's fma:
  // fx = fw = 1 + 2^-12 gives (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24, a tie
  // that rounds to 1 + 2^-11; times p = 3 then 3 + 3 2^-11.
  x = codesRow(fp8, {1.0f, 2.0f});
  w = codesRow(fp8, {1.0f, 1.0f});
  x.scaleCodes = w.scaleCodes = {floatBits(1.0f + std::ldexp(1.0f, -12))};
  acc = quantizedAccumulate(x, w, {});
  CHECK(acc[0] == 3.0f * (1.0f + std::ldexp(1.0f, -11)));
  CHECK(acc[0] != std::fmaf(3.0f * (1.0f + std::ldexp(1.0f, -12)),
                            1.0f + std::ldexp(1.0f, -12), 0.0f));
}

TEST_CASE("quantized matmul order: int8 sums codes exactly in int32") {
  // 1101 products of 127 * 127 and one of -1: 17,757,028, past 2^24,
  // where an f32 sum would round.
  Scheme int8 = schemeNamed("scheme(format=int8,scale=per_token)");
  std::vector<float> xs(1102, 127.0f), ws(1102, 127.0f);
  xs[1101] = -1.0f;
  ws[1101] = 1.0f;
  QuantizedTensor x = codesRow(int8, xs), w = codesRow(int8, ws);
  float fx = 0.5f, fw = 3.0f;
  x.scaleCodes = {floatBits(fx)};
  w.scaleCodes = {floatBits(fw)};
  CHECK(orderBlockK(int8, int8, 1102) == 1102);
  int64_t exact = 0;
  float chain = 0.0f;
  for (size_t index = 0; index < xs.size(); ++index) {
    exact += int64_t(xs[index]) * int64_t(ws[index]);
    chain = std::fmaf(xs[index], ws[index], chain);
  }
  REQUIRE(exact == 1101 * 127 * 127 - 1);
  CHECK(double(chain) != double(exact));
  std::vector<float> acc = quantizedAccumulate(x, w, std::vector<float>{0.25f});
  CHECK(acc[0] == float(exact) * (fx * fw) + 0.25f);
}

TEST_CASE("quantized matmul order: scale factors fold the global scale") {
  std::vector<float> values = test::weightLikeMatrix(3, 40, 7);
  for (const char *name :
       {"nvfp4", "scheme(format=e2m1,scale=group(16;axis=1),tail=true,"
                 "type=ue4m3,rule=absmax,global=encode,packing=nibble)"}) {
    Scheme scheme = schemeNamed(name);
    std::optional<QuantizedTensor> tensor =
        quantize(scheme, values, 3, 40, nullptr);
    REQUIRE(tensor);
    std::vector<float> factors = scaleFactors(*tensor);
    REQUIRE(factors.size() == tensor->scaleCodes.size());
    float scale = decodeScale(ScaleType::UE4M3, tensor->scaleCodes[1]);
    CHECK(factors[1] == (scaleKindOf(scheme) == ScaleKind::GlobalDecode
                             ? scale * tensor->globalScale
                             : scale / tensor->globalScale));
  }
}

TEST_CASE("quantized matmul order: block-scaled FP4 applies the global "
          "scales once, after the K loop") {
  const int64_t m = 4, n = 5, k = 72;
  for (const char *name :
       {"nvfp4", "scheme(format=e2m1,scale=group(16;axis=1),tail=true,"
                 "type=ue4m3,rule=absmax,global=encode,packing=nibble)"}) {
    INFO(name);
    Scheme scheme = schemeNamed(name);
    REQUIRE(globalsAfterKLoop(scheme, scheme));
    std::optional<QuantizedTensor> x =
        quantize(scheme, test::weightLikeMatrix(m, k, 3), m, k, nullptr);
    std::optional<QuantizedTensor> w =
        quantize(scheme, test::weightLikeMatrix(n, k, 11), n, k, nullptr);
    REQUIRE((x && w));
    std::vector<float> acc = quantizedAccumulate(*x, *w, {});
    std::vector<float> xValues = codeValues(*x), wValues = codeValues(*w);
    std::vector<float> xScales = scaleFactors(*x, false),
                       wScales = scaleFactors(*w, false);
    std::vector<float> xFolded = scaleFactors(*x), wFolded = scaleFactors(*w);
    float product = globalFactor(*x) * globalFactor(*w);
    int differFromFolded = 0;
    for (int64_t row = 0; row < m; ++row)
      for (int64_t col = 0; col < n; ++col) {
        float sum = 0.0f, folded = 0.0f;
        for (int64_t begin = 0; begin < k; begin += 16) {
          float partial = 0.0f;
          for (int64_t index = begin; index < std::min(begin + 16, k); ++index)
            partial = std::fmaf(xValues[size_t(row * k + index)],
                                wValues[size_t(col * k + index)], partial);
          size_t xAt = size_t(scaleIndexOf(scheme, m, k, row, begin));
          size_t wAt = size_t(scaleIndexOf(scheme, n, k, col, begin));
          sum = std::fmaf(partial, xScales[xAt] * wScales[wAt], sum);
          folded = std::fmaf(partial, xFolded[xAt] * wFolded[wAt], folded);
        }
        CHECK(acc[size_t(row * n + col)] == sum * product);
        differFromFolded += acc[size_t(row * n + col)] != folded;
      }
    // The globals folded into each block's factor round differently.
    CHECK(differFromFolded > 0);
  }
  // MXFP4 has no global scale: G is 1 and the loop is the whole order.
  Scheme mx = schemeNamed("mxfp4");
  std::optional<QuantizedTensor> x =
      quantize(mx, test::weightLikeMatrix(m, k, 3), m, k, nullptr);
  REQUIRE(x);
  CHECK(globalFactor(*x) == 1.0f);
}

TEST_CASE("quantized matmul bound: holds for every pair, and can fail") {
  int64_t m = 17, n = 13, k = 300;
  for (const ActivationPairEntry &pair : activationPairEntries()) {
    INFO(pair.label);
    std::string text = std::string("matmul w=") + pair.weights +
                       " a=" + pair.activations + " from=bf16 to=f32 bias";
    std::optional<MatmulSpec> spec = parseMatmulSpec(text);
    REQUIRE(spec);
    std::string error;
    std::optional<QuantizedTensor> w =
        quantize(spec->scheme, test::weightLikeMatrix(n, k, 3), n, k, &error);
    REQUIRE(w);
    std::vector<uint8_t> xBytes =
        test::normalActivations(ValueType::BF16, m, k, 5);
    std::vector<float> bias = test::biasVector(n, 9);
    std::optional<std::vector<uint8_t>> y =
        orderedQuantizedMatmul(*spec, *w, xBytes, m, bias, &error);
    INFO(error);
    REQUIRE(y);
    std::vector<PrologueOperands> sides;
    std::optional<QuantizedTensor> x = quantizeActivations(
        *spec, widenActivations(ValueType::BF16, xBytes), m, k, sides, &error);
    REQUIRE(x);
    for (ValueType output : {ValueType::F32, ValueType::BF16}) {
      std::vector<uint8_t> rounded =
          roundOutput(output, quantizedAccumulate(*x, *w, bias));
      BoundCheck check = checkQuantizedBound(*x, *w, bias, rounded, output);
      INFO(check.failure);
      CHECK(check.holds);
      CHECK(check.worstRatio <= 1.0);
    }
    CHECK(*y == roundOutput(ValueType::F32, quantizedAccumulate(*x, *w, bias)));
    // A Y moved by 1e-4 of S fails it.
    std::vector<float> acc = quantizedAccumulate(*x, *w, bias);
    acc[5] += 1e-3f * std::fabs(acc[5]) + 1e-3f;
    CHECK_FALSE(checkQuantizedBound(*x, *w, bias,
                                    roundOutput(ValueType::F32, acc),
                                    ValueType::F32)
                    .holds);
  }
}

TEST_CASE("quantized matmul order: refusals are messages") {
  std::optional<MatmulSpec> spec =
      parseMatmulSpec("matmul w=fp8_e4m3 a=fp8_e4m3 from=f32");
  REQUIRE(spec);
  std::optional<QuantizedTensor> w = quantize(
      schemeNamed("mxfp4"), test::weightLikeMatrix(4, 64, 1), 4, 64, nullptr);
  REQUIRE(w);
  std::string error;
  std::vector<uint8_t> xBytes(4 * 64 * 4);
  CHECK_FALSE(orderedQuantizedMatmul(*spec, *w, xBytes, 4, {}, &error));
  CHECK(error == "the weights were quantized with mxfp4, not the spec's "
                 "fp8_e4m3");
  w = quantize(spec->scheme, test::weightLikeMatrix(4, 64, 1), 4, 64, nullptr);
  REQUIRE(w);
  CHECK_FALSE(orderedQuantizedMatmul(*spec, *w, xBytes, 3, {}, &error));
  CHECK(error == "X holds 1024 bytes, not 3 x 64 f32 elements");
}
