//===- PackerFixturesTest.cpp - Fixtures made by the ecosystems' packers --===//
//
// tests/data/checkpoints holds small checkpoints packed by each tool's own
// code (tools/make-checkpoint-fixtures.py: compressed-tensors' compressors,
// AutoGPTQ's and AutoAWQ's pack functions, ModelOpt's NVFP4QTensor) with
// the packer's own dequantization beside them (dequantized.safetensors).
// Each layer is read with lowbit's importer, dequantized in the packer's
// dtype and compared bit for bit, then exported back to the file's bytes.
// The packages are not needed here.
//
//===----------------------------------------------------------------------===//

#include "checkpoint/CompressedTensors.h"
#include "checkpoint/GptqAwq.h"
#include "checkpoint/Nvfp4.h"
#include "tests/checkpoint/CheckpointTesting.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <functional>

using namespace lowbit;
using namespace lowbit::checkpoint;

namespace {

const char *const kLayers[] = {"model.layers.0.mlp.down_proj",
                               "model.layers.1.self_attn.o_proj"};

std::string fixturePath(const std::string &fixture) {
  return std::string(LOWBIT_CHECKPOINT_FIXTURES) + "/" + fixture;
}

Checkpoint openOrFail(const std::string &path) {
  Expected<Checkpoint> checkpoint = Checkpoint::open(path);
  INFO(path << ": " << (checkpoint.ok() ? "" : checkpoint.error().message));
  REQUIRE(checkpoint.ok());
  return std::move(checkpoint).value();
}

/// lowbit's dequantization of `weight` in `dtype` (F32, or F16 / BF16 as
/// the f32 result rounded to nearest even), as bit patterns of that width,
/// in channel order (column c of the tensor is channel inputOrder[c]).
std::vector<uint32_t> lowbitBits(const ImportedWeight &weight, DType dtype) {
  const QuantizedTensor &tensor = weight.tensor;
  std::string error;
  std::vector<uint32_t> columnOrder(size_t(tensor.rows * tensor.cols));
  auto store = [&](auto values) {
    REQUIRE(values);
    for (int64_t row = 0; row < tensor.rows; ++row)
      for (int64_t col = 0; col < tensor.cols; ++col) {
        int64_t channel =
            weight.inputOrder.empty() ? col : weight.inputOrder[size_t(col)];
        uint32_t bits = 0;
        auto value = (*values)[size_t(row * tensor.cols + col)];
        std::memcpy(&bits, &value, sizeof(value));
        columnOrder[size_t(row * tensor.cols + channel)] = bits;
      }
  };
  INFO(error);
  if (dtype == DType::F32)
    store(dequantize(tensor, &error));
  else
    store(dequantizeHalf(
        tensor, dtype == DType::F16 ? HalfType::F16 : HalfType::BF16, &error));
  return columnOrder;
}

/// The packer's dequantization of `layer`, as bit patterns.
std::vector<uint32_t> packerBits(const Checkpoint &dequantized,
                                 const std::string &layer, DType *dtype) {
  Expected<Checkpoint::Entry> entry = dequantized.get(layer + ".weight");
  REQUIRE(entry.ok());
  *dtype = entry->info->dtype;
  REQUIRE(
      (*dtype == DType::F32 || *dtype == DType::F16 || *dtype == DType::BF16));
  size_t width = size_t(dtypeBits(*dtype) / 8);
  std::span<const std::byte> bytes = entry->data();
  std::vector<uint32_t> bits(bytes.size() / width, 0);
  for (size_t index = 0; index < bits.size(); ++index)
    std::memcpy(&bits[index], bytes.data() + index * width, width);
  return bits;
}

using Importer =
    std::function<Expected<ImportedWeight>(const Checkpoint &, std::string)>;
using Exporter = std::function<Expected<std::vector<OwnedTensor>>(
    const ImportedWeight &, std::string)>;

/// Every layer of `fixture` imports to the packer's dequantization bit for
/// bit and exports back to the file's tensors. With `positiveZeroTable`,
/// the packer decodes the e2m1 code 0x8 (-0) as +0 (ModelOpt's value
/// table): lowbit's -0.0 against its +0.0 is then the one difference
/// allowed, and it must occur (the fixture holds such codes).
void checkFixture(const std::string &fixture, const Importer &import,
                  const Exporter &exportWeight,
                  bool positiveZeroTable = false) {
  Checkpoint packed = openOrFail(fixturePath(fixture));
  Checkpoint dequantized =
      openOrFail(fixturePath(fixture) + "/dequantized.safetensors");
  for (const char *layer : kLayers) {
    INFO(fixture << " " << layer);
    Expected<ImportedWeight> weight = import(packed, layer);
    INFO((weight.ok() ? "" : weight.error().message));
    REQUIRE(weight.ok());
    DType dtype = DType::F32;
    std::vector<uint32_t> expected = packerBits(dequantized, layer, &dtype);
    std::vector<uint32_t> actual = lowbitBits(*weight, dtype);
    REQUIRE(actual.size() == expected.size());
    size_t mismatches = 0, first = 0, negativeZeros = 0;
    for (size_t index = 0; index < actual.size(); ++index) {
      if (positiveZeroTable && dtype == DType::F32 &&
          actual[index] == 0x80000000u && expected[index] == 0) {
        ++negativeZeros;
        continue;
      }
      if (actual[index] != expected[index] && mismatches++ == 0)
        first = index;
    }
    CHECK((negativeZeros > 0) == positiveZeroTable);
    INFO("first mismatch at " << first << ": lowbit 0x" << std::hex
                              << actual[first] << ", packer 0x"
                              << expected[first]);
    CHECK(mismatches == 0);

    Expected<std::vector<OwnedTensor>> exported = exportWeight(*weight, layer);
    REQUIRE(exported.ok());
    for (const OwnedTensor &tensor : *exported) {
      INFO(tensor.name);
      Expected<Checkpoint::Entry> original = packed.get(tensor.name);
      REQUIRE(original.ok());
      CHECK(tensor.dtype == original->info->dtype);
      CHECK(tensor.shape == original->info->shape);
      std::span<const std::byte> bytes = original->data();
      CHECK(std::equal(tensor.bytes.begin(), tensor.bytes.end(), bytes.begin(),
                       bytes.end()));
    }
  }
}

} // namespace

TEST_CASE("compressed-tensors pack-quantized fixtures read as the "
          "compressor dequantizes") {
  auto exportPacked = [](const ImportedWeight &weight, std::string prefix) {
    return exportPackQuantized(weight, prefix);
  };
  auto importWith = [](int bits, int groupSize) -> Importer {
    return [=](const Checkpoint &checkpoint, std::string prefix) {
      return importPackQuantized(checkpoint, prefix, {bits, groupSize});
    };
  };
  checkFixture("ct-int4-sym-g32", importWith(4, 32), exportPacked);
  checkFixture("ct-int4-asym-g32", importWith(4, 32), exportPacked);
  checkFixture("ct-int8-sym-channel", importWith(8, -1), exportPacked);
}

TEST_CASE("compressed-tensors float-quantized FP8 fixtures read as the "
          "compressor dequantizes") {
  using Strategy = FloatQuantizedConfig::Strategy;
  auto importWith = [](Strategy strategy) -> Importer {
    return [=](const Checkpoint &checkpoint, std::string prefix) {
      FloatQuantizedConfig config;
      config.strategy = strategy;
      return importFloatQuantized(checkpoint, prefix, config);
    };
  };
  // lowbit writes a per-tensor scale as [1], the compressor's shape; the
  // exporter has no per-channel or block form to compare here.
  auto exportTensor = [](const ImportedWeight &weight, std::string prefix) {
    return exportFloatQuantized(weight, prefix);
  };
  checkFixture("ct-fp8-tensor", importWith(Strategy::Tensor), exportTensor);
  auto noExport = [](const ImportedWeight &, std::string) {
    return Expected<std::vector<OwnedTensor>>(std::vector<OwnedTensor>{});
  };
  checkFixture("ct-fp8-channel", importWith(Strategy::Channel), noExport);
  checkFixture("ct-fp8-block", importWith(Strategy::Block), noExport);
}

TEST_CASE("NVFP4 fixtures of compressed-tensors and ModelOpt read as each "
          "packer dequantizes") {
  checkFixture(
      "ct-nvfp4",
      [](const Checkpoint &checkpoint, std::string prefix) {
        Expected<Nvfp4Layer> layer =
            importNvfp4CompressedTensors(checkpoint, prefix);
        if (!layer.ok())
          return Expected<ImportedWeight>(layer.error());
        return Expected<ImportedWeight>(layer->weight);
      },
      [](const ImportedWeight &weight, std::string prefix) {
        // The fixture's activations' scale, as the importer read it.
        Checkpoint packed = openOrFail(fixturePath("ct-nvfp4"));
        Expected<Nvfp4Layer> layer =
            importNvfp4CompressedTensors(packed, prefix);
        REQUIRE(layer.ok());
        return exportNvfp4CompressedTensors({weight, layer->inputGlobalScale},
                                            prefix);
      });
  checkFixture(
      "modelopt-nvfp4",
      [](const Checkpoint &checkpoint, std::string prefix) {
        Expected<Nvfp4Layer> layer = importNvfp4ModelOpt(checkpoint, prefix);
        if (!layer.ok())
          return Expected<ImportedWeight>(layer.error());
        return Expected<ImportedWeight>(layer->weight);
      },
      [](const ImportedWeight &weight, std::string prefix) {
        Checkpoint packed = openOrFail(fixturePath("modelopt-nvfp4"));
        Expected<Nvfp4Layer> layer = importNvfp4ModelOpt(packed, prefix);
        REQUIRE(layer.ok());
        return exportNvfp4ModelOpt({weight, layer->inputGlobalScale}, prefix);
      },
      /*positiveZeroTable=*/true);
}

TEST_CASE("GPTQ fixtures of AutoGPTQ's packer read as its module "
          "dequantizes") {
  auto gptq = [](int bits) -> std::pair<Importer, Exporter> {
    GptqConfig config{bits, 32, GptqZeroFormat::V1};
    return {[=](const Checkpoint &checkpoint, std::string prefix) {
              return importGptq(checkpoint, prefix, config);
            },
            [=](const ImportedWeight &weight, std::string prefix) {
              return exportGptq(weight, prefix, config);
            }};
  };
  auto [import4, export4] = gptq(4);
  checkFixture("gptq-int4-g32", import4, export4);
  checkFixture("gptq-int4-g32-actorder", import4, export4);
  auto [import8, export8] = gptq(8);
  checkFixture("gptq-int8-g32", import8, export8);
}

TEST_CASE("AWQ fixture of AutoAWQ's packer reads as its dequantize_gemm") {
  checkFixture(
      "awq-int4-g32",
      [](const Checkpoint &checkpoint, std::string prefix) {
        return importAwq(checkpoint, prefix, 32);
      },
      [](const ImportedWeight &weight, std::string prefix) {
        return exportAwq(weight, prefix);
      });
}

TEST_CASE("the act-order fixture really reorders its channels") {
  Checkpoint packed = openOrFail(fixturePath("gptq-int4-g32-actorder"));
  Expected<ImportedWeight> weight =
      importGptq(packed, kLayers[0], {4, 32, GptqZeroFormat::V1});
  REQUIRE(weight.ok());
  CHECK(weight->inputOrder.size() == 128);
}
