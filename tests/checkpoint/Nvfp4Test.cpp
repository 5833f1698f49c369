//===- Nvfp4Test.cpp - NVFP4 of ModelOpt and compressed-tensors -----------===//
//
// Random e2m1 code bytes and positive e4m3 block scales, in ModelOpt's and
// compressed-tensors' tensors: each imports to lowbit's nvfp4 with its own
// global-scale convention, dequantizes to e2m1 x e4m3 x global (decode) or
// / global (encode), exports the same bytes, and ModelOpt converts to
// compressed-tensors with the codes and block scales unchanged and each
// global replaced by its f32 reciprocal.
//
//===----------------------------------------------------------------------===//

#include "checkpoint/Nvfp4.h"
#include "tests/checkpoint/CheckpointTesting.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <random>

using namespace lowbit;
using namespace lowbit::checkpoint;
using namespace lowbit::checkpoint::testing;
using Catch::Matchers::Contains;

namespace {

/// e2m1 (OCP FP4): sign bit 3, then 0, 0.5, 1, 1.5, 2, 3, 4, 6.
float e2m1Value(uint8_t code) {
  static const float magnitudes[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  return (code & 8 ? -1.0f : 1.0f) * magnitudes[code & 7];
}

struct Nvfp4Files {
  int64_t n = 16, k = 64;
  std::vector<uint8_t> codes, scales;
  float global = 0.0123f, input = 0.5f;
  std::vector<OwnedTensor> tensors;

  Nvfp4Files(bool modelOpt, unsigned seed) {
    std::mt19937 random(seed);
    for (int64_t i = 0; i < n * k / 2; ++i)
      codes.push_back(uint8_t(random()));
    // Positive finite e4m3 codes (0x7F is NaN).
    for (int64_t i = 0; i < n * k / 16; ++i)
      scales.push_back(uint8_t(1 + random() % 0x7E));
    std::vector<int64_t> scalar =
        modelOpt ? std::vector<int64_t>{} : std::vector<int64_t>{1};
    tensors.push_back({modelOpt ? "l.weight" : "l.weight_packed",
                       DType::U8,
                       {n, k / 2},
                       bytesOf(codes)});
    tensors.push_back(
        {"l.weight_scale", DType::F8_E4M3, {n, k / 16}, bytesOf(scales)});
    tensors.push_back({modelOpt ? "l.weight_scale_2" : "l.weight_global_scale",
                       DType::F32, scalar, bytesOf(std::vector{global})});
    tensors.push_back({modelOpt ? "l.input_scale" : "l.input_global_scale",
                       DType::F32, scalar, bytesOf(std::vector{input})});
  }

  /// The dequantized values by the layout's own formula.
  void checkValues(const QuantizedTensor &tensor, bool decode) const {
    std::string error;
    std::optional<std::vector<float>> values = dequantize(tensor, &error);
    REQUIRE(values);
    int64_t mismatches = 0;
    for (int64_t row = 0; row < n; ++row)
      for (int64_t column = 0; column < k; ++column) {
        uint8_t byte = codes[size_t(row * k / 2 + column / 2)];
        float q = e2m1Value(column % 2 ? byte >> 4 : byte & 0xF);
        float s = decodeScale(ScaleType::UE4M3,
                              scales[size_t(row * k / 16 + column / 16)]);
        float expected = decode ? q * (s * global) : q * s / global;
        mismatches += (*values)[size_t(row * k + column)] != expected;
      }
    CHECK(mismatches == 0);
  }
};

} // namespace

TEST_CASE("ModelOpt NVFP4 imports with the decode convention and exports "
          "the same bytes",
          "[nvfp4]") {
  Nvfp4Files files(true, 3);
  Checkpoint checkpoint = writeAndOpen("nvfp4-modelopt", files.tensors);
  Expected<Nvfp4Layer> layer = importNvfp4ModelOpt(checkpoint, "l");
  REQUIRE(layer.ok());
  CHECK(layer->weight.tensor.scheme.name == "nvfp4");
  CHECK(layer->weight.tensor.globalScale == files.global);
  CHECK(layer->inputGlobalScale == files.input);
  files.checkValues(layer->weight.tensor, true);
  Expected<std::vector<OwnedTensor>> exported =
      exportNvfp4ModelOpt(*layer, "l");
  REQUIRE(exported.ok());
  checkSameTensors(*exported, files.tensors);
}

TEST_CASE("compressed-tensors NVFP4 imports with the encode convention and "
          "exports the same bytes",
          "[nvfp4]") {
  Nvfp4Files files(false, 4);
  files.global = 2688.0f / 37.5f;
  files.tensors[2].bytes = bytesOf(std::vector{files.global});
  Checkpoint checkpoint = writeAndOpen("nvfp4-ct", files.tensors);
  Expected<Nvfp4Layer> layer = importNvfp4CompressedTensors(checkpoint, "l");
  REQUIRE(layer.ok());
  CHECK(layer->weight.tensor.scheme.scale.globalScale ==
        GlobalScale::EncodeReciprocal);
  files.checkValues(layer->weight.tensor, false);
  Expected<std::vector<OwnedTensor>> exported =
      exportNvfp4CompressedTensors(*layer, "l");
  REQUIRE(exported.ok());
  checkSameTensors(*exported, files.tensors);
}

TEST_CASE("ModelOpt NVFP4 converts to compressed-tensors", "[nvfp4]") {
  Nvfp4Files files(true, 5);
  Checkpoint checkpoint = writeAndOpen("nvfp4-convert", files.tensors);
  Expected<Nvfp4Layer> layer = importNvfp4ModelOpt(checkpoint, "l");
  REQUIRE(layer.ok());
  Expected<std::vector<OwnedTensor>> converted =
      exportNvfp4CompressedTensors(*layer, "l");
  REQUIRE(converted.ok());
  REQUIRE(converted->size() == 4);
  CHECK((*converted)[0].name == "l.weight_packed");
  CHECK((*converted)[0].bytes == files.tensors[0].bytes);
  CHECK((*converted)[1].bytes == files.tensors[1].bytes);
  CHECK((*converted)[2].name == "l.weight_global_scale");
  CHECK((*converted)[2].shape == std::vector<int64_t>{1});
  CHECK((*converted)[2].bytes == bytesOf(std::vector{1.0f / files.global}));
  CHECK((*converted)[3].bytes == bytesOf(std::vector{1.0f / files.input}));
}

TEST_CASE("malformed NVFP4 tensors are refused", "[nvfp4]") {
  Nvfp4Files files(true, 6);
  files.tensors[1].shape = {16, 8};
  files.tensors[1].bytes.resize(16 * 8);
  Expected<Nvfp4Layer> wrongScales =
      importNvfp4ModelOpt(writeAndOpen("nvfp4-shape", files.tensors), "l");
  REQUIRE_FALSE(wrongScales.ok());
  CHECK_THAT(wrongScales.error().message, Contains("should be [16, 4]"));

  Nvfp4Files negative(true, 7);
  negative.tensors[1].bytes[3] = std::byte{0xB8}; // -1.0 in e4m3
  Expected<Nvfp4Layer> negativeScale = importNvfp4ModelOpt(
      writeAndOpen("nvfp4-negative", negative.tensors), "l");
  REQUIRE_FALSE(negativeScale.ok());
  CHECK_THAT(negativeScale.error().message, Contains("scale [0, 3]"));
  Nvfp4Files badInput(true, 8);
  badInput.tensors.back().shape = {2};
  badInput.tensors.back().bytes = bytesOf(std::vector{1.0f, 2.0f});
  Expected<Nvfp4Layer> twoInputs = importNvfp4ModelOpt(
      writeAndOpen("nvfp4-bad-input", badInput.tensors), "l");
  REQUIRE_FALSE(twoInputs.ok());
  CHECK_THAT(twoInputs.error().message, Contains("input_scale"));
}

TEST_CASE("a weights-only NVFP4 layer has no activations' scale", "[nvfp4]") {
  // compressed-tensors' NVFP4A16 (what quantize-model writes): no
  // input_global_scale; it imports, converts and exports without one.
  Nvfp4Files files(false, 9);
  files.tensors.pop_back();
  Expected<Nvfp4Layer> layer = importNvfp4CompressedTensors(
      writeAndOpen("nvfp4-a16", files.tensors), "l");
  REQUIRE(layer.ok());
  CHECK(!layer->inputGlobalScale);
  files.checkValues(layer->weight.tensor, false);
  Expected<std::vector<OwnedTensor>> back =
      exportNvfp4CompressedTensors(*layer, "l");
  REQUIRE(back.ok());
  REQUIRE(back->size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK((*back)[i].name == files.tensors[i].name);
    CHECK((*back)[i].bytes == files.tensors[i].bytes);
  }
  Expected<std::vector<OwnedTensor>> modelOpt =
      exportNvfp4ModelOpt(*layer, "l");
  REQUIRE(modelOpt.ok());
  CHECK(modelOpt->size() == 3);
}
