//===- CompressedTensorsTest.cpp - pack-quantized in and out --------------===//
//
// Packs signed codes and zero points as compressed-tensors' pack_to_int32
// does (offset by 2^(bits-1), along K for the weight and along N for the
// zero point, the padding fields zero), imports, checks every value against
// (q - zp) * s, and exports the same bytes.
//
//===----------------------------------------------------------------------===//

#include "checkpoint/CompressedTensors.h"
#include "format/Codec.h"
#include "tests/checkpoint/CheckpointTesting.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

using namespace lowbit;
using namespace lowbit::checkpoint;
using Catch::Matchers::Contains;
using namespace lowbit::checkpoint::testing;

namespace {

/// pack_to_int32(value, bits, packed_dim): value [rows, cols] signed.
std::vector<uint32_t> packToInt32(const std::vector<std::vector<int>> &value,
                                  int bits, int packedDim) {
  int pf = 32 / bits;
  size_t rows = value.size(), cols = value[0].size();
  size_t outRows = packedDim == 0 ? (rows + pf - 1) / pf : rows;
  size_t outCols = packedDim == 1 ? (cols + pf - 1) / pf : cols;
  std::vector<uint32_t> out(outRows * outCols, 0);
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) {
      uint32_t field = uint32_t(value[r][c] + (1 << (bits - 1)));
      size_t along = packedDim == 1 ? c : r;
      size_t word =
          packedDim == 1 ? r * outCols + c / pf : (r / pf) * outCols + c;
      out[word] |= field << (bits * (along % pf));
    }
  return out;
}

struct Case {
  int64_t n, k, groupSize, groups;
  int bits;
  bool asymmetric;
  std::vector<std::vector<int>> q, zp; // [N, K], [N, G]
  std::vector<uint16_t> scales;        // BF16 [N, G]
  std::vector<OwnedTensor> tensors;

  Case(int64_t n, int64_t k, int64_t groupSize, int bits, bool asymmetric)
      : n(n), k(k), groupSize(groupSize),
        groups((k + groupSize - 1) / groupSize), bits(bits),
        asymmetric(asymmetric) {
    std::mt19937 random(unsigned(n * 31 + k + bits + asymmetric));
    int low = -(1 << (bits - 1)), levels = 1 << bits;
    q.assign(size_t(n), std::vector<int>(size_t(k)));
    zp.assign(size_t(n), std::vector<int>(size_t(groups), 0));
    for (auto &row : q)
      for (int &code : row)
        code = low + int(random() % unsigned(levels));
    if (asymmetric)
      for (auto &row : zp)
        for (int &zero : row)
          zero = low + int(random() % unsigned(levels));
    for (int64_t i = 0; i < n * groups; ++i)
      scales.push_back(uint16_t(0x3a00 + random() % 0x0a00)); // bf16 0.0005..1
    std::vector<int64_t> shape = {n, k};
    tensors.push_back({"l.weight_packed",
                       DType::I32,
                       {n, (k * bits + 31) / 32},
                       bytesOf(packToInt32(q, bits, 1))});
    tensors.push_back(
        {"l.weight_scale", DType::BF16, {n, groups}, bytesOf(scales)});
    if (asymmetric)
      tensors.push_back({"l.weight_zero_point",
                         DType::I32,
                         {(n + 32 / bits - 1) / (32 / bits), groups},
                         bytesOf(packToInt32(zp, bits, 0))});
    tensors.push_back({"l.weight_shape", DType::I64, {2}, bytesOf(shape)});
  }

  Checkpoint write(const std::string &test) const {
    return writeAndOpen(test, tensors);
  }

  /// Activation ordering: channel permutation[p] is in group p / g.
  void addActOrder(unsigned seed) {
    std::vector<int32_t> permutation(static_cast<size_t>(k));
    std::iota(permutation.begin(), permutation.end(), 0);
    std::shuffle(permutation.begin(), permutation.end(), std::mt19937(seed));
    std::vector<int32_t> gIdx(static_cast<size_t>(k));
    for (int64_t p = 0; p < k; ++p)
      gIdx[size_t(permutation[size_t(p)])] = int32_t(p / groupSize);
    tensors.push_back({"l.weight_g_idx", DType::I32, {k}, bytesOf(gIdx)});
  }
};

void roundTrip(const Case &layer, const std::string &test) {
  Checkpoint checkpoint = layer.write(test);
  Expected<ImportedWeight> weight =
      importPackQuantized(checkpoint, "l", {layer.bits, int(layer.groupSize)});
  REQUIRE(weight.ok());
  CHECK(weight->tensor.scheme.element.isSigned() == !layer.asymmetric);
  std::string error;
  std::optional<std::vector<float>> values = dequantize(weight->tensor, &error);
  REQUIRE(values);
  int64_t mismatches = 0;
  for (int64_t row = 0; row < layer.n; ++row)
    for (int64_t column = 0; column < layer.k; ++column) {
      int64_t group = column / layer.groupSize;
      float scale =
          bfloat16ToFloat(layer.scales[size_t(row * layer.groups + group)]);
      int64_t channel = weight->inputOrder.empty()
                            ? column
                            : weight->inputOrder[size_t(column)];
      float expected = float(layer.q[size_t(row)][size_t(channel)] -
                             layer.zp[size_t(row)][size_t(group)]) *
                       scale;
      mismatches += (*values)[size_t(row * layer.k + column)] != expected;
    }
  CHECK(mismatches == 0);

  Expected<std::vector<OwnedTensor>> exported =
      exportPackQuantized(*weight, "l");
  REQUIRE(exported.ok());
  checkSameTensors(*exported, layer.tensors);
}

} // namespace

TEST_CASE("pack-quantized symmetric int4 and int8 in and out",
          "[compressed-tensors]") {
  roundTrip(Case(16, 256, 128, 4, false), "ct-int4");
  // K not a multiple of 8: the last word's padding fields are zero.
  roundTrip(Case(8, 100, 32, 4, false), "ct-int4-ragged");
  roundTrip(Case(8, 64, 64, 8, false), "ct-int8");
}

TEST_CASE("pack-quantized asymmetric with packed zero points in and out",
          "[compressed-tensors]") {
  roundTrip(Case(24, 128, 32, 4, true), "ct-uint4");
  // N not a multiple of 8: the zero point's words are padded along N.
  roundTrip(Case(12, 64, 16, 4, true), "ct-uint4-ragged");
  roundTrip(Case(8, 32, 32, 8, true), "ct-uint8");
}

TEST_CASE("pack-quantized activation ordering (weight_g_idx) in and out",
          "[compressed-tensors]") {
  Case symmetric(16, 128, 32, 4, false);
  symmetric.addActOrder(3);
  roundTrip(symmetric, "ct-actorder");
  Case asymmetric(8, 64, 16, 4, true);
  asymmetric.addActOrder(4);
  roundTrip(asymmetric, "ct-actorder-asym");
}

TEST_CASE("pack-quantized files that disagree are refused",
          "[compressed-tensors]") {
  Case layer(16, 256, 128, 4, false);
  Checkpoint checkpoint = layer.write("ct-bad");
  Expected<ImportedWeight> wrongGroup =
      importPackQuantized(checkpoint, "l", {4, 64});
  REQUIRE_FALSE(wrongGroup.ok());
  CHECK_THAT(wrongGroup.error().message, Contains("should be [16, 32]"));
  Expected<ImportedWeight> wrongBits =
      importPackQuantized(checkpoint, "l", {8, 128});
  REQUIRE_FALSE(wrongBits.ok());
  CHECK_FALSE(importPackQuantized(checkpoint, "absent", {4, 128}).ok());

  layer.tensors.push_back(
      {"l.weight_g_idx", DType::I32, {256}, std::vector<std::byte>(1024)});
  // Groups of unequal size (every channel in group 0) are refused.
  Expected<ImportedWeight> uneven =
      importPackQuantized(layer.write("ct-gidx"), "l", {4, 128});
  REQUIRE_FALSE(uneven.ok());
  CHECK_THAT(uneven.error().message,
             Contains("'l.weight_g_idx' does not put 128 channels"));
}

namespace {

/// An FP8 float-quantized layer: e4m3 codes (no NaN) and positive scales on
/// `grid` ([1] per tensor), F32 or BF16.
struct Fp8Layer {
  int64_t n, k;
  std::vector<uint8_t> codes;
  std::vector<float> scales;
  std::vector<OwnedTensor> tensors;

  Fp8Layer(int64_t n, int64_t k, std::vector<int64_t> grid, DType scaleType)
      : n(n), k(k) {
    std::mt19937 random(unsigned(n + k));
    for (int64_t i = 0; i < n * k; ++i) {
      uint8_t code = uint8_t(random());
      codes.push_back((code & 0x7F) == 0x7F ? 0 : code);
    }
    int64_t count = 1;
    for (int64_t extent : grid)
      count *= extent;
    std::vector<uint16_t> halves;
    for (int64_t i = 0; i < count; ++i) {
      // Exactly representable in bf16: a few mantissa bits.
      float scale = float(1 + random() % 64) / 1024.0f;
      scales.push_back(scale);
      uint32_t bits = 0;
      std::memcpy(&bits, &scale, 4);
      halves.push_back(uint16_t(bits >> 16));
    }
    tensors.push_back({"l.weight", DType::F8_E4M3, {n, k}, bytesOf(codes)});
    tensors.push_back(
        {"l.weight_scale", scaleType, grid,
         scaleType == DType::F32 ? bytesOf(scales) : bytesOf(halves)});
  }

  void roundTrip(const std::string &test, const FloatQuantizedConfig &config,
                 int64_t blockRows, int64_t blockCols, int64_t gridCols) const {
    Expected<ImportedWeight> weight =
        importFloatQuantized(writeAndOpen(test, tensors), "l", config);
    REQUIRE(weight.ok());
    std::string error;
    std::optional<std::vector<float>> values =
        dequantize(weight->tensor, &error);
    REQUIRE(values);
    Format e4m3 = *lookupFormat("e4m3");
    int64_t mismatches = 0;
    for (int64_t row = 0; row < n; ++row)
      for (int64_t column = 0; column < k; ++column) {
        float scale =
            scales[size_t((row / blockRows) * gridCols + column / blockCols)];
        float expected =
            e4m3.decodeToFloat(codes[size_t(row * k + column)]) * scale;
        mismatches += (*values)[size_t(row * k + column)] != expected;
      }
    CHECK(mismatches == 0);
    Expected<std::vector<OwnedTensor>> exported =
        exportFloatQuantized(*weight, "l");
    REQUIRE(exported.ok());
    checkSameTensors(*exported, tensors);
  }
};

} // namespace

TEST_CASE("float-quantized FP8 per tensor, per channel and per 128x128 "
          "block in and out",
          "[compressed-tensors]") {
  using Strategy = FloatQuantizedConfig::Strategy;
  Fp8Layer perTensor(16, 48, {1}, DType::F32);
  perTensor.roundTrip("ct-fp8-tensor", {Strategy::Tensor}, 16, 48, 1);
  Fp8Layer perChannel(16, 48, {16, 1}, DType::BF16);
  perChannel.roundTrip("ct-fp8-channel", {Strategy::Channel}, 1, 48, 1);
  // Ragged: 200 x 300 in 128 x 128 blocks is a 2 x 3 grid.
  Fp8Layer blocks(200, 300, {2, 3}, DType::F32);
  blocks.roundTrip("ct-fp8-block", {Strategy::Block}, 128, 128, 3);

  // A 0-d per-tensor scale reads too; a wrong grid is refused.
  Fp8Layer scalar(8, 8, {}, DType::F32);
  CHECK(importFloatQuantized(writeAndOpen("ct-fp8-scalar", scalar.tensors), "l",
                             {Strategy::Tensor})
            .ok());
  Expected<ImportedWeight> wrongGrid = importFloatQuantized(
      writeAndOpen("ct-fp8-grid", blocks.tensors), "l", {Strategy::Channel});
  REQUIRE_FALSE(wrongGrid.ok());
  CHECK_THAT(wrongGrid.error().message, Contains("should be [200, 1]"));
}
