//===- QuantizeEdgeTest.cpp - Edges of the reference quantizer ------------===//
//
// All-zero groups, NaN and inf, ragged shapes, the extremes of the MX
// exponent range, round-trip error bounds, and every error value.
//
//===----------------------------------------------------------------------===//

#include "TestHelpers.h"

#include <cfloat>
#include <limits>

using namespace lowbit;
using namespace lowbit::test;

namespace {

/// The named schemes plus user schemes that cover the other rules,
/// granularities and scale types.
std::vector<Scheme> schemesUnderTest() {
  std::vector<Scheme> schemes = namedSchemes();
  auto add = [&](Scheme scheme, const char *name) {
    scheme.name = name;
    schemes.push_back(scheme);
  };
  Scheme scheme = named("mxfp8");
  scheme.scale.rule = ScaleRule::E8M0RCeil;
  add(scheme, "mxfp8 rceil");
  scheme = named("nvfp4");
  scheme.scale.globalScale = GlobalScale::EncodeReciprocal;
  add(scheme, "nvfp4 encode");
  scheme = named("mxfp4");
  scheme.scale.layout = ScaleLayout::Swizzle128x4;
  add(scheme, "mxfp4 swizzled");
  Scheme int4{"", *lookupFormat("int4"), ScaleSpec{}, Packing::Nibble};
  add(int4, "int4 per tensor");
  int4.scale.granularity = Granularity::PerChannel;
  int4.scale.axis = 0;
  add(int4, "int4 per channel");
  int4.scale.granularity = Granularity::Block;
  int4.scale.blockRows = 4;
  int4.scale.blockCols = 8;
  int4.scale.allowTail = true;
  int4.scale.type = ScaleType::BF16;
  add(int4, "int4 block 4x8 bf16");
  Scheme e4m3Token{"", *lookupFormat("e4m3"), ScaleSpec{}, Packing::Byte};
  e4m3Token.scale.granularity = Granularity::PerToken;
  e4m3Token.scale.type = ScaleType::F16;
  add(e4m3Token, "e4m3 per token f16");
  Scheme uint8Columns{"", *lookupFormat("uint8"), ScaleSpec{}, Packing::Byte};
  uint8Columns.scale.granularity = Granularity::Group;
  uint8Columns.scale.axis = 0;
  uint8Columns.scale.groupSize = 5;
  uint8Columns.scale.allowTail = true;
  uint8Columns.scale.rule = ScaleRule::MinMax;
  uint8Columns.scale.zeroPoint = true;
  add(uint8Columns, "uint8 minmax group 5 axis 0");
  return schemes;
}

enum class Kind { Symmetric, Asymmetric, GlobalDecode, GlobalEncode };

Kind kindOf(const Scheme &scheme) {
  if (scheme.scale.zeroPoint)
    return Kind::Asymmetric;
  if (scheme.scale.globalScale == GlobalScale::DecodeMultiplier)
    return Kind::GlobalDecode;
  if (scheme.scale.globalScale == GlobalScale::EncodeReciprocal)
    return Kind::GlobalEncode;
  return Kind::Symmetric;
}

/// Spacing of the element format's values around magnitude `scaled`.
double elementStep(const Format &element, double scaled) {
  if (element.isInt())
    return 1;
  const FloatParams &params = element.floatParams();
  int exponent = scaled > 0 ? int(std::floor(std::log2(scaled))) : 0;
  exponent = std::max(exponent, 1 - params.bias);
  return std::ldexp(1.0, exponent - params.manBits);
}

bool scalesUsable(const QuantizedTensor &tensor) {
  std::string error;
  return validateQuantized(tensor, &error);
}

} // namespace

TEST_CASE("all-zero groups give zero codes and finite scales",
          "[quantize][zero]") {
  for (const Scheme &scheme : schemesUnderTest()) {
    INFO(scheme.name);
    std::vector<float> zeros(3 * 37, 0.0f);
    zeros[5] = -0.0f;
    QuantizedTensor tensor = quantizeOrFail(scheme, zeros, 3, 37);
    CHECK(scalesUsable(tensor));
    for (int64_t row = 0; row < 3; ++row)
      for (int64_t col = 0; col < 37; ++col) {
        float scale = scaleAt(tensor, row, col);
        CHECK(std::isfinite(scale));
        CHECK(scale > 0);
      }
    if (scheme.scale.globalScale != GlobalScale::None)
      CHECK(tensor.globalScale == 1.0f);
    if (scheme.scale.type == ScaleType::E8M0)
      for (int64_t col = 0; col < 37; col += 32)
        CHECK(tensor.scaleCodes[size_t(scaleIndexOf(scheme, 3, 37, 0, col))] ==
              0x00);
    for (float value : dequantizeOrFail(tensor))
      CHECK(value == 0.0f);
  }
}

TEST_CASE("a group whose scale underflows still gets a finite scale",
          "[quantize][zero]") {
  // f16 scale of 1e-30 / 127 underflows to 0 and is replaced by 1, so the
  // codes are the values themselves: 0.
  Scheme scheme = named("int8");
  scheme.scale.type = ScaleType::F16;
  QuantizedTensor tensor = quantizeOrFail(scheme, {1e-30f, -1e-30f}, 1, 2);
  CHECK(decodeScale(ScaleType::F16, tensor.scaleCodes[0]) == 1.0f);
  CHECK(tensor.codes == std::vector<uint8_t>{0, 0});
}

TEST_CASE("amax ignores NaN", "[quantize][special]") {
  float nan = std::numeric_limits<float>::quiet_NaN();
  QuantizedTensor tensor =
      quantizeOrFail(named("fp8_e4m3"), {nan, 2, -1}, 1, 3);
  CHECK(decodeScale(ScaleType::F32, tensor.scaleCodes[0]) == 2.0f / 448.0f);
  CHECK(tensor.codes[0] == 0x7F); // NaN stays NaN in e4m3
  CHECK(tensor.codes[1] == 0x7E);
}

TEST_CASE("NaN and inf inputs never give a NaN or inf scale",
          "[quantize][special]") {
  float nan = std::numeric_limits<float>::quiet_NaN();
  float inf = std::numeric_limits<float>::infinity();
  for (const Scheme &scheme : schemesUnderTest()) {
    INFO(scheme.name);
    std::vector<float> data = randomData(2, 64, 11);
    data[3] = nan;
    data[70] = inf;
    data[100] = -inf;
    QuantizedTensor tensor = quantizeOrFail(scheme, data, 2, 64);
    CHECK(scalesUsable(tensor));
    if (scheme.scale.globalScale != GlobalScale::None)
      CHECK(std::isfinite(tensor.globalScale));
    // The NaN element: NaN code for e4m3/e5m2, +max for FP6/FP4, 0 for
    // symmetric ints, the zero point for asymmetric ints.
    uint32_t nanCode = codeAt(tensor, 0, 3);
    const Format &element = scheme.element;
    if (kindOf(scheme) == Kind::Asymmetric)
      CHECK(nanCode == tensor.zeros[size_t(scaleIndexOf(scheme, 2, 64, 0, 3))]);
    else if (element.isInt())
      CHECK(nanCode == 0);
    else
      CHECK(nanCode == element.nanResultCode());
  }
}

TEST_CASE("symmetric inf input saturates with an f32-max scale",
          "[quantize][special]") {
  float inf = std::numeric_limits<float>::infinity();
  QuantizedTensor tensor = quantizeOrFail(named("fp8_e4m3"), {inf, 1}, 1, 2);
  CHECK(decodeScale(ScaleType::F32, tensor.scaleCodes[0]) == FLT_MAX);
  CHECK(tensor.codes == std::vector<uint8_t>{0x7E, 0x00});
}

TEST_CASE("MX scales at the top of the f32 range", "[quantize][mx]") {
  std::vector<float> data(32, 0.0f);
  data[0] = 0x1.8p127f; // 1.5 * 2^127
  data[1] = 1.0f;
  Scheme floor = named("mxfp8");
  // FLOOR: floor(log2 amax) = 127, emax 8 -> k = 119; 1.5 * 2^8 = 384 is
  // exact in e4m3 and scales back exactly.
  QuantizedTensor tensor = quantizeOrFail(floor, data, 1, 32);
  CHECK(tensor.scaleCodes[0] == 127u + 119u);
  CHECK(dequantizeOrFail(tensor)[0] == 0x1.8p127f);
  CHECK(tensor.codes[1] == 0x00); // 2^-119 underflows to 0

  // amax = FLT_MAX: FLOOR k = 119, FLT_MAX / 2^119 = 511.99.. saturates
  // to 448. RCEIL: FLT_MAX / 448 = 2^119.19 -> k = 120, 255.99.. rounds
  // to 256 (0x78), and 256 * 2^120 = 2^128 overflows f32 on dequant.
  data[0] = FLT_MAX;
  tensor = quantizeOrFail(floor, data, 1, 32);
  CHECK(tensor.scaleCodes[0] == 127u + 119u);
  CHECK(tensor.codes[0] == 0x7E);
  Scheme rceil = floor;
  rceil.scale.rule = ScaleRule::E8M0RCeil;
  tensor = quantizeOrFail(rceil, data, 1, 32);
  CHECK(tensor.scaleCodes[0] == 127u + 120u);
  CHECK(tensor.codes[0] == 0x78);
  CHECK(std::isinf(dequantizeOrFail(tensor)[0]));
}

TEST_CASE("MX scales at the bottom of the f32 range", "[quantize][mx]") {
  std::vector<float> data(32, 0.0f);
  // amax = 2^-126 (smallest normal): FLOOR k = -126 - 2 = -128, clamped to
  // -127 (code 0x00); 2^-126 * 2^127 = 2, exact in e2m1 (code 4).
  data[0] = 0x1p-126f;
  for (ScaleRule rule : {ScaleRule::E8M0Floor, ScaleRule::E8M0RCeil}) {
    Scheme scheme = named("mxfp4");
    scheme.scale.rule = rule;
    INFO(scaleRuleName(rule));
    QuantizedTensor tensor = quantizeOrFail(scheme, data, 1, 32);
    CHECK(tensor.scaleCodes[0] == 0u);
    CHECK((tensor.codes[0] & 0xF) == 0x4);
    CHECK(dequantizeOrFail(tensor)[0] == 0x1p-126f);
  }
  // An f32-subnormal amax, 3 * 2^-130: k clamps to -127 under both rules;
  // 3 * 2^-130 * 2^127 = 0.375 rounds to 0.5 (code 1).
  data[0] = 0x3p-130f;
  for (ScaleRule rule : {ScaleRule::E8M0Floor, ScaleRule::E8M0RCeil}) {
    Scheme scheme = named("mxfp4");
    scheme.scale.rule = rule;
    INFO(scaleRuleName(rule));
    QuantizedTensor tensor = quantizeOrFail(scheme, data, 1, 32);
    CHECK(tensor.scaleCodes[0] == 0u);
    CHECK((tensor.codes[0] & 0xF) == 0x1);
    CHECK(dequantizeOrFail(tensor)[0] == 0x1p-128f);
  }
  // mxfp8 FLOOR, amax 2^-100: k = -108 -> code 19; exact round trip.
  data[0] = 0x1.4p-100f;
  QuantizedTensor tensor = quantizeOrFail(named("mxfp8"), data, 1, 32);
  CHECK(tensor.scaleCodes[0] == 19u);
  CHECK(dequantizeOrFail(tensor)[0] == 0x1.4p-100f);
}

TEST_CASE("round trips stay within half a step of the local scale",
          "[quantize][roundtrip]") {
  const std::pair<int64_t, int64_t> shapes[] = {{1, 1}, {3, 37}, {17, 1000}};
  for (const Scheme &scheme : schemesUnderTest())
    for (auto [rows, cols] : shapes) {
      INFO(scheme.name << " " << rows << "x" << cols);
      std::vector<float> data = randomData(rows, cols, uint64_t(rows * cols));
      QuantizedTensor tensor = quantizeOrFail(scheme, data, rows, cols);
      std::vector<float> values = dequantizeOrFail(tensor);
      Kind kind = kindOf(scheme);
      size_t checked = 0;
      for (int64_t row = 0; row < rows; ++row)
        for (int64_t col = 0; col < cols; ++col) {
          size_t index = size_t(row * cols + col);
          double x = data[index];
          double scale = scaleAt(tensor, row, col);
          if (kind == Kind::GlobalDecode)
            scale *= tensor.globalScale;
          else if (kind == Kind::GlobalEncode)
            scale /= tensor.globalScale;
          double scaled = x / scale;
          double step = elementStep(scheme.element, std::fabs(scaled));
          // Values up to half a step past the largest code still round to
          // it, within half a step.
          bool inRange =
              std::fabs(scaled) <= scheme.element.maxValue() + 0.5 * step;
          if (kind == Kind::Asymmetric) {
            int zero =
                tensor
                    .zeros[size_t(scaleIndexOf(scheme, rows, cols, row, col))];
            double shifted = scaled + zero;
            inRange = shifted >= -0.5 && shifted <= quantMax(scheme) + 0.5;
            step = 1;
          } else if (scheme.element.isInt()) {
            inRange = std::fabs(scaled) <= quantMax(scheme) + 0.5;
          }
          if (!inRange)
            continue; // saturated (FLOOR) values are covered elsewhere
          ++checked;
          double bound = 0.5 * step * scale + 0x1p-22 * std::fabs(x) + 1e-37;
          INFO("row " << row << " col " << col << " x " << x << " x' "
                      << values[index]);
          REQUIRE(std::fabs(x - double(values[index])) <= bound);
        }
      CHECK(checked > size_t(rows * cols) / 2);
    }
}

TEST_CASE("the two NVFP4 conventions agree up to rounding",
          "[quantize][nvfp4]") {
  Scheme decodeScheme = named("nvfp4");
  Scheme encodeScheme = decodeScheme;
  encodeScheme.scale.globalScale = GlobalScale::EncodeReciprocal;
  const int64_t rows = 17, cols = 1000;
  std::vector<float> data = randomData(rows, cols, 5);
  QuantizedTensor decoded = quantizeOrFail(decodeScheme, data, rows, cols);
  QuantizedTensor encoded = quantizeOrFail(encodeScheme, data, rows, cols);
  // The stored globals are reciprocal up to f32 rounding.
  CHECK(double(decoded.globalScale) * double(encoded.globalScale) ==
        Approx(1.0).epsilon(1e-6));
  std::vector<float> decodedValues = dequantizeOrFail(decoded);
  std::vector<float> encodedValues = dequantizeOrFail(encoded);
  size_t sameCodes = 0;
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t col = 0; col < cols; ++col) {
      if (codeAt(decoded, row, col) != codeAt(encoded, row, col))
        continue;
      ++sameCodes;
      size_t index = size_t(row * cols + col);
      CHECK(decodedValues[index] ==
            Approx(encodedValues[index]).epsilon(1e-5).margin(1e-30));
    }
  CHECK(sameCodes >= size_t(rows * cols) * 999 / 1000);
}

TEST_CASE("f16 and bf16 inputs are widened exactly", "[quantize][input]") {
  // 0x3C00 = 1.0 (f16), 0x4040 = 3.0 (bf16), 0xC000 = -2.0 in both.
  std::vector<uint16_t> half = {0x3C00, 0xC000};
  std::string error;
  auto fromHalf =
      quantizeHalf(named("int8"), HalfType::F16, half, 1, 2, {}, &error);
  REQUIRE(fromHalf);
  CHECK(fromHalf->codes == quantizeOrFail(named("int8"), {1, -2}, 1, 2).codes);
  std::vector<uint16_t> bf16 = {0x4040, 0xC000};
  auto fromBf16 =
      quantizeHalf(named("int8"), HalfType::BF16, bf16, 1, 2, {}, &error);
  REQUIRE(fromBf16);
  CHECK(fromBf16->codes == quantizeOrFail(named("int8"), {3, -2}, 1, 2).codes);
}

TEST_CASE("dequantize to f16 and bf16 rounds to nearest even",
          "[quantize][output]") {
  // int8 with scale 1/3 (static): code 1 -> 0.33333334f -> f16 0x3555,
  // bf16 0x3EAB.
  Scheme scheme = named("int8");
  scheme.scale.mode = ScaleMode::Static;
  StaticScales given;
  given.scaleCodes = std::vector<uint32_t>{floatBits(1.0f / 3.0f)};
  QuantizedTensor tensor = quantizeOrFail(scheme, {1.0f / 3.0f}, 1, 1, given);
  std::string error;
  auto half = dequantizeHalf(tensor, HalfType::F16, &error);
  auto bf16 = dequantizeHalf(tensor, HalfType::BF16, &error);
  REQUIRE(half);
  REQUIRE(bf16);
  CHECK((*half)[0] == 0x3555);
  CHECK((*bf16)[0] == 0x3EAB);
}

TEST_CASE("a dequantized f16 or bf16 NaN is the canonical 0x7fff",
          "[quantize][output][nan]") {
  // fp8_e5m2 with a static scale: codes 0xff and 0x7f are NaNs; the 16-bit
  // outputs are 0x7fff, as cvt.rn.{f16,bf16}.f32 and CUDA's host
  // conversions give (a quiet NaN's 0x7fc0/0xffc0 were written before).
  Scheme scheme = named("fp8_e5m2");
  scheme.scale.mode = ScaleMode::Static;
  StaticScales given;
  given.scaleCodes = std::vector<uint32_t>{floatBits(1.0f)};
  QuantizedTensor tensor =
      quantizeOrFail(scheme, {1.0f, 2.0f, 3.0f}, 1, 3, given);
  tensor.codes = {0xff, 0x7f, 0x3c}; // -NaN, +NaN, 1.0
  std::string error;
  for (HalfType type : {HalfType::F16, HalfType::BF16}) {
    auto bits = dequantizeHalf(tensor, type, &error);
    REQUIRE(bits);
    CHECK((*bits)[0] == 0x7fff);
    CHECK((*bits)[1] == 0x7fff);
    CHECK((*bits)[2] == (type == HalfType::F16 ? 0x3c00 : 0x3f80));
  }
}

TEST_CASE("errors are values that name the problem", "[quantize][errors]") {
  std::string error;
  std::vector<float> data(40, 1.0f);
  SECTION("a group that does not divide the axis") {
    Scheme scheme = named("mxfp8");
    scheme.scale.allowTail = false;
    CHECK_FALSE(quantize(scheme, data, 1, 40, &error));
    CHECK(error == "group size 32 does not divide 40 columns and the scheme "
                   "allows no tail");
  }
  SECTION("an invalid scheme") {
    Scheme scheme = named("mxfp8");
    scheme.scale.zeroPoint = true;
    CHECK_FALSE(quantize(scheme, data, 1, 40, &error));
    CHECK(error.find("zero point") != std::string::npos);
  }
  SECTION("input size") {
    CHECK_FALSE(quantize(named("int8"), data, 3, 40, &error));
    CHECK(error == "the input has 40 values, a 3x40 tensor needs 120");
  }
  SECTION("empty") {
    CHECK_FALSE(quantize(named("int8"), {}, 0, 40, &error));
    CHECK(error == "the tensor is empty (0x40)");
  }
  SECTION("static without scales") {
    Scheme scheme = named("int8");
    scheme.scale.mode = ScaleMode::Static;
    CHECK_FALSE(quantize(scheme, data, 1, 40, &error));
    CHECK(error == "a static scheme needs its scales");
  }
  SECTION("static scale count") {
    Scheme scheme = named("int8_g64");
    scheme.scale.mode = ScaleMode::Static;
    StaticScales given;
    given.scaleCodes = std::vector<uint32_t>{floatBits(1), floatBits(1)};
    CHECK_FALSE(quantize(scheme, data, 1, 40, given, &error));
    CHECK(error == "scales has 2 entries, the scheme needs 1x1");
  }
  SECTION("static zero scale") {
    Scheme scheme = named("int8");
    scheme.scale.mode = ScaleMode::Static;
    StaticScales given;
    given.scaleCodes = std::vector<uint32_t>{floatBits(0)};
    CHECK_FALSE(quantize(scheme, data, 1, 40, given, &error));
    CHECK(error.find("scale [0, 0] must be finite and positive") == 0);
  }
  SECTION("static e8m0 NaN scale") {
    Scheme scheme = named("mxfp8");
    scheme.scale.mode = ScaleMode::Static;
    StaticScales given;
    given.scaleCodes = std::vector<uint32_t>{0xFF, 0x7F};
    CHECK_FALSE(quantize(scheme, data, 1, 40, given, &error));
    CHECK(error.find("scale [0, 0] must be finite and positive") == 0);
  }
  SECTION("static ue4m3 code too wide") {
    Scheme scheme = named("nvfp4");
    scheme.scale.mode = ScaleMode::Static;
    StaticScales given;
    given.scaleCodes = std::vector<uint32_t>{0x38, 0x38, 0x80};
    given.globalScale = 1.0f;
    CHECK_FALSE(quantize(scheme, data, 1, 40, given, &error));
    CHECK(error == "scale [0, 2] code 128 does not fit in ue4m3");
  }
  SECTION("static zero point out of range") {
    Scheme scheme = named("int4_g128");
    scheme.scale.mode = ScaleMode::Static;
    StaticScales given;
    given.scaleCodes = std::vector<uint32_t>{0x3C00};
    given.zeros = std::vector<uint8_t>{16};
    CHECK_FALSE(quantize(scheme, data, 1, 40, given, &error));
    CHECK(error == "zero point [0, 0] is 16, above the largest code 15");
  }
  SECTION("static global missing or bad") {
    Scheme scheme = named("nvfp4");
    scheme.scale.mode = ScaleMode::Static;
    StaticScales given;
    given.scaleCodes = std::vector<uint32_t>{0x38, 0x38, 0x38};
    CHECK_FALSE(quantize(scheme, data, 1, 40, given, &error));
    CHECK(error.find("needs its global scale") != std::string::npos);
    given.globalScale = std::numeric_limits<float>::infinity();
    CHECK_FALSE(quantize(scheme, data, 1, 40, given, &error));
    CHECK(error.find("the global scale must be finite and positive") == 0);
  }
  SECTION("a global scale for a scheme without one") {
    StaticScales given;
    given.globalScale = 2.0f;
    CHECK_FALSE(quantize(named("mxfp8"), data, 1, 40, given, &error));
    CHECK(error == "a global scale was given but the scheme has none");
  }
  SECTION("dequantize checks sizes") {
    QuantizedTensor tensor = quantizeOrFail(named("mxfp4"), data, 1, 40);
    tensor.codes.pop_back();
    CHECK_FALSE(dequantize(tensor, &error));
    CHECK(error == "codes has 19 entries, the scheme needs 1x20");
  }
}
