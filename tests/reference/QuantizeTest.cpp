//===- QuantizeTest.cpp - Hand-computed cases of the reference quantizer --===//
//
// Every expected code and scale below is worked out by hand from the
// formulas in docs/quantization.md (the working is in the comments), not
// recomputed with lowbit's own conversions.
//
//===----------------------------------------------------------------------===//

#include "TestHelpers.h"

#include <functional>

using namespace lowbit;
using namespace lowbit::test;

namespace {

} // namespace

TEST_CASE("fp8_e4m3: per-tensor amax / 448", "[quantize][named]") {
  // amax 448 -> scale 448 / 448 = 1 exactly. 3.3 lies between 3.25 and 3.5
  // and is nearer 3.25 = 0x45; -224 = -1.75 * 2^7 = 0xF6; 448 = 0x7E.
  QuantizedTensor tensor =
      quantizeOrFail(named("fp8_e4m3"), {448, -224, 3.3f, 0}, 1, 4);
  REQUIRE(tensor.scaleCodes == std::vector<uint32_t>{floatBits(1.0f)});
  CHECK(tensor.codes == std::vector<uint8_t>{0x7E, 0xF6, 0x45, 0x00});
  CHECK(dequantizeOrFail(tensor) == std::vector<float>{448, -224, 3.25f, 0});
}

TEST_CASE("fp8_e4m3: the scale is amax / 448 in f32", "[quantize][named]") {
  // amax 896 -> scale 2; 100 / 2 = 50 -> e4m3 48 or 52: 50 is a tie, even
  // mantissa is 48 (1.5 * 2^5 = 0x64).
  QuantizedTensor tensor =
      quantizeOrFail(named("fp8_e4m3"), {896, 100, -0.5f}, 1, 3);
  CHECK(decodeScale(ScaleType::F32, tensor.scaleCodes[0]) == 2.0f);
  CHECK(tensor.codes == std::vector<uint8_t>{0x7E, 0x64, 0xA8});
}

TEST_CASE("fp8_e5m2: per-tensor amax / 57344", "[quantize][named]") {
  // scale 1; 1.125 is a tie between 1.0 and 1.25, even is 1.0 (0x3C); 9 is
  // nearer 8 (0x48).
  QuantizedTensor tensor =
      quantizeOrFail(named("fp8_e5m2"), {57344, -1.125f, 9, 0}, 1, 4);
  CHECK(decodeScale(ScaleType::F32, tensor.scaleCodes[0]) == 1.0f);
  CHECK(tensor.codes == std::vector<uint8_t>{0x7B, 0xBC, 0x48, 0x00});
}

TEST_CASE("int8: per-tensor amax / 127", "[quantize][named]") {
  // amax 254 -> scale 2. -3 / 2 = -1.5 -> -2 (ties to even) = 0xFE;
  // 1 / 2 = 0.5 -> 0; 101 / 2 = 50.5 -> 50.
  QuantizedTensor tensor =
      quantizeOrFail(named("int8"), {254, -3, 1, 101}, 1, 4);
  CHECK(decodeScale(ScaleType::F32, tensor.scaleCodes[0]) == 2.0f);
  CHECK(tensor.codes == std::vector<uint8_t>{0x7F, 0xFE, 0x00, 0x32});
  CHECK(dequantizeOrFail(tensor) == std::vector<float>{254, -4, 0, 100});
}

TEST_CASE("int8_g64: groups of 64 with a short tail", "[quantize][named]") {
  // 70 columns: group 0 has 64 values with amax 127 (scale 1), the tail
  // group has 6 values with amax 254 (scale 2).
  std::vector<float> data(70, 0.0f);
  data[0] = 127;
  data[1] = -3.5f; // -> -4 = 0xFC
  data[64] = -254;
  data[69] = 5; // 5 / 2 = 2.5 -> 2
  QuantizedTensor tensor = quantizeOrFail(named("int8_g64"), data, 1, 70);
  REQUIRE(tensor.scaleCodes.size() == 2);
  CHECK(decodeScale(ScaleType::F32, tensor.scaleCodes[0]) == 1.0f);
  CHECK(decodeScale(ScaleType::F32, tensor.scaleCodes[1]) == 2.0f);
  CHECK(tensor.codes[0] == 0x7F);
  CHECK(tensor.codes[1] == 0xFC);
  CHECK(tensor.codes[64] == 0x81); // -127
  CHECK(tensor.codes[69] == 0x02);
}

TEST_CASE("mxfp8: SEMANTICS example amax 500", "[quantize][named][mx]") {
  std::vector<float> data(32, 0.0f);
  data[0] = 500;
  data[1] = -1;
  Scheme floor = named("mxfp8");
  Scheme rceil = floor;
  rceil.scale.rule = ScaleRule::E8M0RCeil;
  // FLOOR: floor(log2 500) = 8, emax(e4m3) = 8 -> k = 0 (code 127); 500
  // saturates to 448.
  QuantizedTensor floorTensor = quantizeOrFail(floor, data, 1, 32);
  CHECK(floorTensor.scaleCodes == std::vector<uint32_t>{127});
  CHECK(floorTensor.codes[0] == 0x7E);
  CHECK(floorTensor.codes[1] == 0xB8); // -1
  // RCEIL: 500 / 448 = 1.116 -> 2^1 (code 128); 500 / 2 = 250 is nearer
  // 256 (0x78) than 240.
  QuantizedTensor rceilTensor = quantizeOrFail(rceil, data, 1, 32);
  CHECK(rceilTensor.scaleCodes == std::vector<uint32_t>{128});
  CHECK(rceilTensor.codes[0] == 0x78);
  CHECK(rceilTensor.codes[1] == 0xB0); // -0.5
  CHECK(dequantizeOrFail(rceilTensor)[0] == 512.0f);
}

TEST_CASE("mxfp4: SEMANTICS example amax 7, nibble order",
          "[quantize][named][mx]") {
  std::vector<float> data(32, 0.0f);
  data[0] = 7;
  data[1] = 0.5f;
  data[2] = -1.5f;
  Scheme floor = named("mxfp4");
  Scheme rceil = floor;
  rceil.scale.rule = ScaleRule::E8M0RCeil;
  // FLOOR: floor(log2 7) = 2 = emax(e2m1) -> k = 0; 7 saturates to 6 (7).
  // Element 0 goes in the low nibble: byte 0 = 0x17 (0.5 is code 1).
  QuantizedTensor floorTensor = quantizeOrFail(floor, data, 1, 32);
  CHECK(floorTensor.scaleCodes == std::vector<uint32_t>{127});
  REQUIRE(floorTensor.codes.size() == 16);
  CHECK(floorTensor.codes[0] == 0x17);
  CHECK(floorTensor.codes[1] == 0x0B); // -1.5 = 0x8 | 3, then 0
  // RCEIL: 7 / 6 -> 2^1; 7 / 2 = 3.5 ties to 4 (code 6); 0.5 / 2 = 0.25
  // ties to 0.
  QuantizedTensor rceilTensor = quantizeOrFail(rceil, data, 1, 32);
  CHECK(rceilTensor.scaleCodes == std::vector<uint32_t>{128});
  CHECK(rceilTensor.codes[0] == 0x06);
  CHECK(rceilTensor.codes[1] == 0x0A); // -0.75 -> -1 = 0xA
}

TEST_CASE("mxfp6: e2m3 and e3m2 with power-of-two scales",
          "[quantize][named][mx]") {
  std::vector<float> data(32, 0.0f);
  data[0] = 30;
  data[1] = 1;
  data[2] = -1;
  // e2m3: floor(log2 30) = 4, emax 2 -> k = 2; 30 / 4 = 7.5 (0x1F);
  // 1 / 4 = 0.25 = 2 * 0.125 (0x02); -0.25 = 0x22. High 2 bits zero.
  QuantizedTensor e2m3 = quantizeOrFail(named("mxfp6_e2m3"), data, 1, 32);
  CHECK(e2m3.scaleCodes == std::vector<uint32_t>{129});
  CHECK(e2m3.codes[0] == 0x1F);
  CHECK(e2m3.codes[1] == 0x02);
  CHECK(e2m3.codes[2] == 0x22);
  // e3m2: emax 4 -> k = 0; 30 saturates to 28 (0x1F); 1 = 0x0C; -1 = 0x2C.
  QuantizedTensor e3m2 = quantizeOrFail(named("mxfp6_e3m2"), data, 1, 32);
  CHECK(e3m2.scaleCodes == std::vector<uint32_t>{127});
  CHECK(e3m2.codes[0] == 0x1F);
  CHECK(e3m2.codes[1] == 0x0C);
  CHECK(e3m2.codes[2] == 0x2C);
  for (uint8_t byte : e2m3.codes)
    CHECK((byte & 0xC0) == 0);
}

TEST_CASE("nvfp4: both global conventions by hand",
          "[quantize][named][nvfp4]") {
  // Block 0 has amax 12, block 1 amax 3; tensor amax 12.
  std::vector<float> data(32, 0.0f);
  data[0] = 12;
  data[1] = -4;
  data[16] = 3;
  data[17] = 1;
  Scheme decodeScheme = named("nvfp4");
  Scheme encodeScheme = decodeScheme;
  encodeScheme.scale.globalScale = GlobalScale::EncodeReciprocal;

  // encode: gInv = 2688 / 12 = 224. s0 = 12 / 6 * 224 = 448 (0x7E), s1 =
  // 3 / 6 * 224 = 112 = 1.75 * 2^6 (0x6E). 12 * 224 / 448 = 6 (0x7);
  // -4 * 224 / 448 = -2 (0xC); 3 * 224 / 112 = 6; 1 * 224 / 112 = 2 (0x4).
  QuantizedTensor encoded = quantizeOrFail(encodeScheme, data, 1, 32);
  CHECK(encoded.globalScale == 224.0f);
  CHECK(encoded.scaleCodes == std::vector<uint32_t>{0x7E, 0x6E});
  CHECK(encoded.codes[0] == 0xC7);
  CHECK(encoded.codes[8] == 0x47);
  std::vector<float> encodedValues = dequantizeOrFail(encoded);
  CHECK(encodedValues[0] == 12.0f); // 6 * 448 / 224
  CHECK(encodedValues[1] == -4.0f);
  CHECK(encodedValues[17] == 1.0f);

  // decode: g = 12 / 2688 (not exact in f32); s0 = 12 / 6 / g rounds to
  // 448 and s1 = 3 / 6 / g to 112, so the codes are the same.
  QuantizedTensor decoded = quantizeOrFail(decodeScheme, data, 1, 32);
  CHECK(decoded.globalScale == 12.0f / 2688.0f);
  CHECK(decoded.scaleCodes == encoded.scaleCodes);
  CHECK(decoded.codes == encoded.codes);
  std::vector<float> decodedValues = dequantizeOrFail(decoded);
  CHECK(decodedValues[0] == Approx(12.0f).epsilon(1e-6));
  CHECK(decodedValues[17] == Approx(1.0f).epsilon(1e-6));
  // And exactly what the formula gives: q * (s * g).
  CHECK(decodedValues[17] == 2.0f * (112.0f * (12.0f / 2688.0f)));
}

TEST_CASE("nvfp4: a given global scale is used as is",
          "[quantize][named][nvfp4]") {
  std::vector<float> data(16, 0.0f);
  data[0] = 6;
  StaticScales given;
  given.globalScale = 1.0f / 64; // g: s = 6 / 6 / g = 64 (0x68)
  QuantizedTensor tensor = quantizeOrFail(named("nvfp4"), data, 1, 16, given);
  CHECK(tensor.globalScale == 1.0f / 64);
  CHECK(tensor.scaleCodes == std::vector<uint32_t>{0x68});
  CHECK(tensor.codes[0] == 0x07);
}

TEST_CASE("int4_g128: asymmetric with f16 scale and zero point",
          "[quantize][named]") {
  // lo = -1, hi = 3.5: scale = 4.5 / 15 = 0.3 -> f16 0x34CD
  // (0.300048828125). zero = rne(1 / 0.30005) = rne(3.33) = 3.
  // q: -1 -> -3 + 3 = 0; 0 -> 3; 2 -> rne(6.67) + 3 = 10; 3.5 -> 12 + 3 = 15.
  QuantizedTensor tensor =
      quantizeOrFail(named("int4_g128"), {-1, 0, 2, 3.5f}, 1, 4);
  CHECK(tensor.scaleCodes == std::vector<uint32_t>{0x34CD});
  CHECK(tensor.zeros == std::vector<uint8_t>{3});
  CHECK(tensor.codes == std::vector<uint8_t>{0x30, 0xFA});
  std::vector<float> values = dequantizeOrFail(tensor);
  float scale = 0.300048828125f;
  CHECK(values == std::vector<float>{-3 * scale, 0, 7 * scale, 12 * scale});
}

TEST_CASE("int4_g128: an all-positive group has zero point 0",
          "[quantize][named]") {
  // lo = min(2, 0) = 0, hi = 7.5 -> scale 0.5 exactly, zero 0; 2 -> 4.
  QuantizedTensor tensor =
      quantizeOrFail(named("int4_g128"), {2, 7.5f, 0.75f}, 1, 3);
  CHECK(decodeScale(ScaleType::F16, tensor.scaleCodes[0]) == 0.5f);
  CHECK(tensor.zeros == std::vector<uint8_t>{0});
  // 0.75 / 0.5 = 1.5 -> 2 (ties to even); the pad nibble of byte 1 is 0.
  CHECK(tensor.codes == std::vector<uint8_t>{0xF4, 0x02});
}

TEST_CASE("every granularity picks the scale of the right group",
          "[quantize][granularity]") {
  // x(r, c) = 7 (r + 1) (c + 1) on a 4x6 tensor, so each group's amax is a
  // multiple of 7 and amax / 7 is an exact scale.
  const int64_t rows = 4, cols = 6;
  std::vector<float> data;
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t col = 0; col < cols; ++col)
      data.push_back(
          float(7 * (row + 1) * (col + 1) * ((row + col) % 2 ? -1 : 1)));
  Scheme scheme{"", *lookupFormat("int4"), ScaleSpec{}, Packing::Nibble};
  struct Case {
    const char *name;
    ScaleSpec spec;
    std::function<float(int64_t, int64_t)> expectedScale;
  };
  auto spec = [](Granularity granularity, int axis, int groupSize,
                 int blockRows, int blockCols) {
    ScaleSpec result;
    result.granularity = granularity;
    result.axis = axis;
    result.groupSize = groupSize;
    result.blockRows = blockRows;
    result.blockCols = blockCols;
    result.allowTail = true;
    return result;
  };
  std::vector<Case> cases = {
      {"per_tensor", spec(Granularity::PerTensor, 1, 0, 0, 0),
       [](int64_t, int64_t) { return 24.0f; }},
      {"per_token", spec(Granularity::PerToken, 1, 0, 0, 0),
       [](int64_t r, int64_t) { return float(6 * (r + 1)); }},
      {"per_channel axis 0", spec(Granularity::PerChannel, 0, 0, 0, 0),
       [](int64_t r, int64_t) { return float(6 * (r + 1)); }},
      {"per_channel axis 1", spec(Granularity::PerChannel, 1, 0, 0, 0),
       [](int64_t, int64_t c) { return float(4 * (c + 1)); }},
      {"group 4 axis 1 (tail of 2)", spec(Granularity::Group, 1, 4, 0, 0),
       [](int64_t r, int64_t c) { return float((r + 1) * (c < 4 ? 4 : 6)); }},
      {"group 3 axis 0 (tail of 1)", spec(Granularity::Group, 0, 3, 0, 0),
       [](int64_t r, int64_t c) { return float((r < 3 ? 3 : 4) * (c + 1)); }},
      {"block 2x4 (tail)", spec(Granularity::Block, 1, 0, 2, 4),
       [](int64_t r, int64_t c) {
         return float((r < 2 ? 2 : 4) * (c < 4 ? 4 : 6));
       }},
  };
  for (const Case &testCase : cases) {
    INFO(testCase.name);
    scheme.scale = testCase.spec;
    QuantizedTensor tensor = quantizeOrFail(scheme, data, rows, cols);
    for (int64_t row = 0; row < rows; ++row)
      for (int64_t col = 0; col < cols; ++col) {
        INFO("row " << row << " col " << col);
        CHECK(scaleAt(tensor, row, col) == testCase.expectedScale(row, col));
        // The group's largest magnitude maps to +-7 (0x7 or 0x9).
        float value = data[size_t(row * cols + col)];
        if (std::fabs(value) == 7 * testCase.expectedScale(row, col))
          CHECK(codeAt(tensor, row, col) == (value > 0 ? 0x7u : 0x9u));
      }
  }
}

TEST_CASE("scale shapes follow scaleShape", "[quantize][granularity]") {
  for (const Scheme &scheme : namedSchemes()) {
    INFO(scheme.name);
    QuantizedTensor tensor =
        quantizeOrFail(scheme, randomData(3, 37, 1), 3, 37);
    Shape2D shape = scaleShape(scheme, 3, 37);
    CHECK(tensor.scaleCodes.size() == size_t(shape.rows * shape.cols));
    Shape2D codes = codesShape(scheme, 3, 37);
    CHECK(tensor.codes.size() == size_t(codes.rows * codes.cols));
  }
}

TEST_CASE("swizzle_128x4 offsets", "[quantize][swizzle]") {
  // A few offsets by hand: a 512-byte tile holds 128 rows x 4 columns as
  // [32 rows][4 row blocks of 32][4 columns].
  CHECK(swizzle128x4Offset(0, 0, 8) == 0);
  CHECK(swizzle128x4Offset(0, 1, 8) == 1);
  CHECK(swizzle128x4Offset(1, 0, 8) == 16);
  CHECK(swizzle128x4Offset(32, 0, 8) == 4);
  CHECK(swizzle128x4Offset(0, 4, 8) == 512);
  CHECK(swizzle128x4Offset(128, 0, 8) == 1024);
  CHECK(swizzle128x4Offset(128, 0, 5) == 1024); // ceil(5 / 4) = 2 tiles
  CHECK(swizzle128x4Offset(127, 3, 4) == 31 * 16 + 3 * 4 + 3);

  // Independently: walk the tiles in storage order with a running counter.
  const int64_t rows = 256, scaleCols = 12;
  std::vector<int64_t> expected(size_t(rows * scaleCols), -1);
  int64_t offset = 0;
  for (int64_t tileRow = 0; tileRow < rows / 128; ++tileRow)
    for (int64_t tileCol = 0; tileCol < scaleCols / 4; ++tileCol)
      for (int64_t rowInBlock = 0; rowInBlock < 32; ++rowInBlock)
        for (int64_t block = 0; block < 4; ++block)
          for (int64_t colInTile = 0; colInTile < 4; ++colInTile) {
            int64_t row = tileRow * 128 + block * 32 + rowInBlock;
            int64_t col = tileCol * 4 + colInTile;
            expected[size_t(row * scaleCols + col)] = offset++;
          }
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t col = 0; col < scaleCols; ++col)
      REQUIRE(swizzle128x4Offset(row, col, scaleCols) ==
              expected[size_t(row * scaleCols + col)]);
}

TEST_CASE("swizzled scales hold the row-major scales, padding zero",
          "[quantize][swizzle]") {
  for (const char *name : {"mxfp8", "nvfp4"}) {
    INFO(name);
    Scheme rowMajor = named(name);
    Scheme swizzled = rowMajor;
    swizzled.scale.layout = ScaleLayout::Swizzle128x4;
    // 130 rows pad to 256; 3 (mxfp8: 96 / 32) or 6 (nvfp4) scale columns
    // pad to 4 or 8.
    const int64_t rows = 130, cols = 96;
    std::vector<float> data = randomData(rows, cols, 7);
    QuantizedTensor plain = quantizeOrFail(rowMajor, data, rows, cols);
    QuantizedTensor tiled = quantizeOrFail(swizzled, data, rows, cols);
    Shape2D logical = scaleShape(rowMajor, rows, cols);
    Shape2D padded = scaleShape(swizzled, rows, cols);
    CHECK(padded.rows == 256);
    CHECK(padded.cols == (logical.cols + 3) / 4 * 4);
    REQUIRE(tiled.scaleCodes.size() == size_t(padded.rows * padded.cols));
    CHECK(tiled.codes == plain.codes);
    std::vector<bool> used(tiled.scaleCodes.size(), false);
    for (int64_t row = 0; row < logical.rows; ++row)
      for (int64_t col = 0; col < logical.cols; ++col) {
        size_t offset = size_t(swizzle128x4Offset(row, col, logical.cols));
        used[offset] = true;
        CHECK(tiled.scaleCodes[offset] ==
              plain.scaleCodes[size_t(row * logical.cols + col)]);
      }
    for (size_t offset = 0; offset < used.size(); ++offset)
      if (!used[offset])
        CHECK(tiled.scaleCodes[offset] == 0);
    CHECK(dequantizeOrFail(tiled) == dequantizeOrFail(plain));
  }
}

TEST_CASE("nibble packing: element 0 in the low nibble, rows padded",
          "[quantize][packing]") {
  // int4 per tensor, amax 7 -> scale 1: codes are the values.
  Scheme scheme{"", *lookupFormat("int4"), ScaleSpec{}, Packing::Nibble};
  QuantizedTensor tensor = quantizeOrFail(scheme, {1, 2, 3, -1, -7, 7}, 2, 3);
  // Row 0: 1 | 2 << 4 = 0x21, then 3 and a zero pad nibble. Row 1: -1 is
  // 0xF and -7 is 0x9 (two's complement): 0x9F, then 7.
  CHECK(tensor.codes == std::vector<uint8_t>{0x21, 0x03, 0x9F, 0x07});
}

TEST_CASE("static scales reproduce dynamic ones", "[quantize][static]") {
  std::vector<Scheme> schemes = namedSchemes();
  Scheme rceil = named("mxfp4");
  rceil.scale.rule = ScaleRule::E8M0RCeil;
  schemes.push_back(rceil);
  Scheme encodeNvfp4 = named("nvfp4");
  encodeNvfp4.scale.globalScale = GlobalScale::EncodeReciprocal;
  schemes.push_back(encodeNvfp4);
  Scheme swizzled = named("mxfp8");
  swizzled.scale.layout = ScaleLayout::Swizzle128x4;
  schemes.push_back(swizzled);
  for (const Scheme &scheme : schemes) {
    INFO(scheme.name << " " << globalScaleName(scheme.scale.globalScale));
    const int64_t rows = 17, cols = 1000;
    std::vector<float> data = randomData(rows, cols, 3);
    QuantizedTensor dynamic = quantizeOrFail(scheme, data, rows, cols);
    Scheme staticScheme = scheme;
    staticScheme.scale.mode = ScaleMode::Static;
    StaticScales given;
    given.scaleCodes = dynamic.scaleCodes;
    if (scheme.scale.zeroPoint)
      given.zeros = dynamic.zeros;
    if (scheme.scale.globalScale != GlobalScale::None)
      given.globalScale = dynamic.globalScale;
    QuantizedTensor fixed =
        quantizeOrFail(staticScheme, data, rows, cols, given);
    CHECK(fixed.codes == dynamic.codes);
    CHECK(fixed.scaleCodes == dynamic.scaleCodes);
    CHECK(fixed.zeros == dynamic.zeros);
  }
}

TEST_CASE("static scales are used as given", "[quantize][static]") {
  Scheme scheme = named("fp8_e4m3");
  scheme.scale.mode = ScaleMode::Static;
  StaticScales given;
  given.scaleCodes = std::vector<uint32_t>{floatBits(0.5f)};
  // 300 / 0.5 = 600 saturates to 448; 1 / 0.5 = 2 (0x40).
  QuantizedTensor tensor = quantizeOrFail(scheme, {300, 1}, 1, 2, given);
  CHECK(tensor.codes == std::vector<uint8_t>{0x7E, 0x40});
}
