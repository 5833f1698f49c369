//===- GptqAwqTest.cpp - GPTQ and AWQ layouts in and out ------------------===//
//
// The test packs codes, zero points and scales by the layouts' published
// formulas (written out here, apart from the importer's code), imports
// them, checks every code, zero point and dequantized value against
// W[n, k] = (q - z) * s, and exports them back to the same bytes.
//
//===----------------------------------------------------------------------===//

#include "checkpoint/GptqAwq.h"
#include "tests/checkpoint/CheckpointTesting.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <random>

using namespace lowbit;
using namespace lowbit::checkpoint;
using Catch::Matchers::Contains;
using namespace lowbit::checkpoint::testing;

namespace {

/// A layer's unpacked parts: q[k][n], z[g][n], f16 scale codes s[g][n].
struct Layer {
  int64_t n, k, groupSize, groups;
  std::vector<std::vector<uint32_t>> q, z;
  std::vector<uint16_t> scales; // [G, N]
  Layer(int64_t n, int64_t k, int64_t groupSize, int bits, uint32_t minZero,
        unsigned seed)
      : n(n), k(k), groupSize(groupSize),
        groups((k + groupSize - 1) / groupSize) {
    std::mt19937 random(seed);
    uint32_t mask = (1u << bits) - 1;
    q.assign(size_t(k), std::vector<uint32_t>(size_t(n)));
    z.assign(size_t(groups), std::vector<uint32_t>(size_t(n)));
    for (auto &row : q)
      for (auto &code : row)
        code = random() & mask;
    for (auto &row : z)
      for (auto &zero : row)
        zero = minZero + random() % (mask + 1 - minZero);
    // Positive normal f16 scales between 2^-10 and 2.
    for (int64_t i = 0; i < groups * n; ++i)
      scales.push_back(uint16_t(0x1800 + random() % 0x2400));
  }
};

struct Files {
  std::vector<OwnedTensor> tensors;
  void add(std::string name, DType dtype, std::vector<int64_t> shape,
           std::vector<std::byte> bytes) {
    tensors.push_back(
        {std::move(name), dtype, std::move(shape), std::move(bytes)});
  }
  const OwnedTensor &get(const std::string &name) const {
    for (const OwnedTensor &tensor : tensors)
      if (tensor.name == name)
        return tensor;
    FAIL("no tensor " << name);
    return tensors.front();
  }
  Checkpoint write(const std::string &test) const {
    return writeAndOpen(test, tensors);
  }
};

/// GPTQ as AutoGPTQ packs it: qweight[i][n] holds q[pf*i + j][n] in field
/// j; qzeros[g][m] holds stored zero [g][pf*m + j] in field j.
Files packGptq(const Layer &layer, int bits, uint32_t zeroOffset,
               const std::vector<int32_t> &gIdx) {
  int pf = 32 / bits;
  std::vector<uint32_t> qweight(size_t(layer.k / pf * layer.n), 0);
  for (int64_t k = 0; k < layer.k; ++k)
    for (int64_t n = 0; n < layer.n; ++n)
      qweight[size_t((k / pf) * layer.n + n)] |= layer.q[size_t(k)][size_t(n)]
                                                 << (bits * (k % pf));
  std::vector<uint32_t> qzeros(size_t(layer.groups * layer.n / pf), 0);
  for (int64_t g = 0; g < layer.groups; ++g)
    for (int64_t n = 0; n < layer.n; ++n)
      qzeros[size_t(g * (layer.n / pf) + n / pf)] |=
          ((layer.z[size_t(g)][size_t(n)] - zeroOffset) & ((1u << bits) - 1))
          << (bits * (n % pf));
  Files files;
  files.add("l.qweight", DType::I32, {layer.k / pf, layer.n}, bytesOf(qweight));
  files.add("l.qzeros", DType::I32, {layer.groups, layer.n / pf},
            bytesOf(qzeros));
  files.add("l.scales", DType::F16, {layer.groups, layer.n},
            bytesOf(layer.scales));
  files.add("l.g_idx", DType::I32, {layer.k}, bytesOf(gIdx));
  return files;
}

/// Every code, zero and value of `weight` against the layer; `groupOf`
/// is the group of input channel k.
void checkAgainst(const ImportedWeight &weight, const Layer &layer,
                  const std::vector<int32_t> &groupOf) {
  const QuantizedTensor &tensor = weight.tensor;
  REQUIRE(tensor.rows == layer.n);
  REQUIRE(tensor.cols == layer.k);
  std::string error;
  std::optional<std::vector<float>> values = dequantize(tensor, &error);
  REQUIRE(values);
  int64_t mismatches = 0;
  for (int64_t column = 0; column < layer.k; ++column) {
    int64_t channel =
        weight.inputOrder.empty() ? column : weight.inputOrder[size_t(column)];
    int64_t group = groupOf[size_t(channel)];
    for (int64_t n = 0; n < layer.n; ++n) {
      uint32_t q = layer.q[size_t(channel)][size_t(n)];
      uint32_t z = layer.z[size_t(group)][size_t(n)];
      uint16_t s = layer.scales[size_t(group * layer.n + n)];
      float expected = float(int(q) - int(z)) * decodeScale(ScaleType::F16, s);
      int64_t index =
          scaleIndexOf(tensor.scheme, tensor.rows, tensor.cols, n, column);
      mismatches += codeAt(tensor, n, column) != q ||
                    tensor.zeros[size_t(index)] != z ||
                    tensor.scaleCodes[size_t(index)] != s ||
                    (*values)[size_t(n * layer.k + column)] != expected;
    }
  }
  CHECK(mismatches == 0);
}

std::vector<int32_t> plainGroups(const Layer &layer) {
  std::vector<int32_t> groups;
  for (int64_t k = 0; k < layer.k; ++k)
    groups.push_back(int32_t(k / layer.groupSize));
  return groups;
}

} // namespace

TEST_CASE("GPTQ v1 and v2 import exactly and export the same bytes", "[gptq]") {
  for (GptqZeroFormat format : {GptqZeroFormat::V1, GptqZeroFormat::V2}) {
    uint32_t offset = format == GptqZeroFormat::V1 ? 1 : 0;
    Layer layer(/*n=*/24, /*k=*/256, /*groupSize=*/128, 4, offset, 7);
    Files files = packGptq(layer, 4, offset, plainGroups(layer));
    Checkpoint checkpoint = files.write("gptq");
    GptqConfig config{4, 128, format};
    Expected<ImportedWeight> weight = importGptq(checkpoint, "l", config);
    REQUIRE(weight.ok());
    CHECK(weight->inputOrder.empty());
    CHECK(weight->tensor.scheme.name == "int4_g128");
    checkAgainst(*weight, layer, plainGroups(layer));
    Expected<std::vector<OwnedTensor>> exported =
        exportGptq(*weight, "l", config);
    REQUIRE(exported.ok());
    checkSameTensors(*exported, files.tensors);
  }
}

TEST_CASE("GPTQ's v1 zero-point off-by-one is kept, not guessed", "[gptq]") {
  // Symmetric 4-bit GPTQ v1 stores 7 (0x77777777): the zero is 8.
  Layer layer(8, 16, 8, 4, 1, 3);
  for (auto &row : layer.z)
    std::fill(row.begin(), row.end(), 8u);
  Files files = packGptq(layer, 4, 1, plainGroups(layer));
  uint32_t word = 0;
  std::memcpy(&word, files.get("l.qzeros").bytes.data(), 4);
  CHECK(word == 0x77777777u);
  Checkpoint checkpoint = files.write("gptq-sym");
  Expected<ImportedWeight> weight =
      importGptq(checkpoint, "l", {4, 8, GptqZeroFormat::V1});
  REQUIRE(weight.ok());
  checkAgainst(*weight, layer, plainGroups(layer));
  // Read as v2, the same file has zero 7.
  Expected<ImportedWeight> asV2 =
      importGptq(checkpoint, "l", {4, 8, GptqZeroFormat::V2});
  REQUIRE(asV2.ok());
  CHECK(asV2->tensor.zeros.front() == 7);

  // v1 stores 15 for a zero of 16, which uint4 cannot hold: refused.
  layer.z[0][3] = 16;
  Checkpoint sixteen =
      packGptq(layer, 4, 1, plainGroups(layer)).write("gptq-sixteen");
  Expected<ImportedWeight> refused =
      importGptq(sixteen, "l", {4, 8, GptqZeroFormat::V1});
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().message, Contains("zero point 16 (stored 15)"));

  // A zero of 0 has no v1 encoding (it would read back as 16).
  weight->tensor.zeros[5] = 0;
  Expected<std::vector<OwnedTensor>> noV1 =
      exportGptq(*weight, "l", {4, 8, GptqZeroFormat::V1});
  REQUIRE_FALSE(noV1.ok());
  CHECK_THAT(noV1.error().message, Contains("use gptq_v2"));
  CHECK(exportGptq(*weight, "l", {4, 8, GptqZeroFormat::V2}).ok());
}

TEST_CASE("GPTQ act-order (g_idx) becomes the input order and back", "[gptq]") {
  Layer layer(16, 64, 16, 4, 1, 11);
  std::vector<int32_t> permutation(64);
  for (int i = 0; i < 64; ++i)
    permutation[size_t(i)] = i;
  std::shuffle(permutation.begin(), permutation.end(), std::mt19937(5));
  // desc_act: channel permutation[p] is in group p / 16.
  std::vector<int32_t> gIdx(64);
  for (int p = 0; p < 64; ++p)
    gIdx[size_t(permutation[size_t(p)])] = p / 16;
  Files files = packGptq(layer, 4, 1, gIdx);
  Checkpoint checkpoint = files.write("gptq-actorder");
  GptqConfig config{4, 16, GptqZeroFormat::V1};
  Expected<ImportedWeight> weight = importGptq(checkpoint, "l", config);
  REQUIRE(weight.ok());
  REQUIRE(weight->inputOrder.size() == 64);
  checkAgainst(*weight, layer, gIdx);
  Expected<std::vector<OwnedTensor>> exported =
      exportGptq(*weight, "l", config);
  REQUIRE(exported.ok());
  checkSameTensors(*exported, files.tensors);

  // Groups of unequal size have no place in lowbit's layout.
  gIdx[size_t(permutation[0])] = 1;
  Expected<ImportedWeight> uneven =
      importGptq(packGptq(layer, 4, 1, gIdx).write("gptq-uneven"), "l", config);
  REQUIRE_FALSE(uneven.ok());
  CHECK_THAT(uneven.error().message, Contains("16 channels in each group"));
  gIdx[size_t(permutation[0])] = 9;
  Expected<ImportedWeight> outside = importGptq(
      packGptq(layer, 4, 1, gIdx).write("gptq-outside"), "l", config);
  REQUIRE_FALSE(outside.ok());
  CHECK_THAT(outside.error().message, Contains("is not a group"));
}

TEST_CASE("GPTQ 8-bit, one group over K, and bad shapes", "[gptq]") {
  Layer layer(8, 40, 40, 8, 1, 13);
  Files files = packGptq(layer, 8, 1, plainGroups(layer));
  Checkpoint checkpoint = files.write("gptq-8bit");
  GptqConfig config{8, -1, GptqZeroFormat::V1};
  Expected<ImportedWeight> weight = importGptq(checkpoint, "l", config);
  REQUIRE(weight.ok());
  CHECK(weight->tensor.scheme.packing == Packing::Byte);
  checkAgainst(*weight, layer, plainGroups(layer));
  Expected<std::vector<OwnedTensor>> exported =
      exportGptq(*weight, "l", config);
  REQUIRE(exported.ok());
  checkSameTensors(*exported, files.tensors);

  Expected<ImportedWeight> wrongGroups =
      importGptq(checkpoint, "l", {8, 8, GptqZeroFormat::V1});
  REQUIRE_FALSE(wrongGroups.ok());
  CHECK_THAT(wrongGroups.error().message, Contains("should be [5, 8]"));
  Expected<ImportedWeight> threeBit =
      importGptq(checkpoint, "l", {3, -1, GptqZeroFormat::V1});
  REQUIRE_FALSE(threeBit.ok());
  CHECK_FALSE(importGptq(checkpoint, "absent", config).ok());
  // 32 / bits is never taken of a width lowbit does not pack.
  CHECK_FALSE(importGptq(checkpoint, "l", {64, -1, GptqZeroFormat::V1}).ok());
  CHECK_FALSE(exportGptq(*weight, "l", {0, -1, GptqZeroFormat::V1}).ok());

  // An empty tensor may claim any extent; it is refused before an extent
  // is multiplied.
  Files empty;
  empty.add("l.qweight", DType::I32, {int64_t(1) << 62, 0}, {});
  Expected<ImportedWeight> huge =
      importGptq(empty.write("gptq-huge"), "l", {4, 128, GptqZeroFormat::V1});
  REQUIRE_FALSE(huge.ok());
  CHECK_THAT(huge.error().message, Contains("past lowbit's bounds"));
}

TEST_CASE("AWQ imports exactly and exports the same bytes", "[awq]") {
  Layer layer(32, 96, 32, 4, 0, 17);
  // AutoAWQ's GEMM pack: nibble i of word (k, j) holds column 8j +
  // order[i].
  const int order[8] = {0, 2, 4, 6, 1, 3, 5, 7};
  int64_t words = layer.n / 8;
  std::vector<uint32_t> qweight(size_t(layer.k * words), 0);
  for (int64_t k = 0; k < layer.k; ++k)
    for (int64_t j = 0; j < words; ++j)
      for (int i = 0; i < 8; ++i)
        qweight[size_t(k * words + j)] |=
            layer.q[size_t(k)][size_t(8 * j + order[i])] << (4 * i);
  std::vector<uint32_t> qzeros(size_t(layer.groups * words), 0);
  for (int64_t g = 0; g < layer.groups; ++g)
    for (int64_t j = 0; j < words; ++j)
      for (int i = 0; i < 8; ++i)
        qzeros[size_t(g * words + j)] |=
            layer.z[size_t(g)][size_t(8 * j + order[i])] << (4 * i);
  Files files;
  files.add("l.qweight", DType::I32, {layer.k, words}, bytesOf(qweight));
  files.add("l.qzeros", DType::I32, {layer.groups, words}, bytesOf(qzeros));
  files.add("l.scales", DType::F16, {layer.groups, layer.n},
            bytesOf(layer.scales));
  Checkpoint checkpoint = files.write("awq");
  Expected<ImportedWeight> weight = importAwq(checkpoint, "l", 32);
  REQUIRE(weight.ok());
  checkAgainst(*weight, layer, plainGroups(layer));
  Expected<std::vector<OwnedTensor>> exported = exportAwq(*weight, "l");
  REQUIRE(exported.ok());
  checkSameTensors(*exported, files.tensors);

  // A GPTQ act-order weight has no AWQ form.
  weight->inputOrder.resize(size_t(layer.k));
  for (int64_t k = 0; k < layer.k; ++k)
    weight->inputOrder[size_t(k)] = int32_t(layer.k - 1 - k);
  CHECK_FALSE(exportAwq(*weight, "l").ok());
  CHECK_FALSE(importAwq(checkpoint, "l", 0).ok());
}
