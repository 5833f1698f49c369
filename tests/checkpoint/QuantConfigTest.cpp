//===- QuantConfigTest.cpp - The importer a checkpoint's config names -----===//
//
// Each packer fixture's own config file (config.json, quantize_config.json,
// hf_quant_config.json as the tools wrote them) picks its importer and
// parameters, and the layer imported through it equals the one the
// explicit importer gives; configs lowbit cannot import are refused with
// the file and field named.
//
//===----------------------------------------------------------------------===//

#include "checkpoint/QuantConfig.h"
#include "tests/checkpoint/CheckpointTesting.h"

#include <catch2/catch.hpp>

#include <fstream>

using namespace lowbit;
using namespace lowbit::checkpoint;
using namespace lowbit::checkpoint::testing;
using Catch::Matchers::Contains;

namespace {

std::string fixturePath(const std::string &fixture) {
  return std::string(LOWBIT_CHECKPOINT_FIXTURES) + "/" + fixture;
}

/// A directory holding one config file `name` with `text`.
std::string configDirectory(const std::string &test, const std::string &name,
                            const std::string &text) {
  std::filesystem::path directory = scratchDirectory(test);
  std::ofstream(directory / name) << text;
  return directory.string();
}

std::string detectError(const std::string &test, const std::string &name,
                        const std::string &text) {
  std::string directory = configDirectory(test, name, text);
  Expected<QuantLayout> layout = detectLayout(directory);
  std::filesystem::remove_all(directory);
  REQUIRE_FALSE(layout.ok());
  return layout.error().message;
}

} // namespace

TEST_CASE("each packer fixture's config names its importer") {
  struct Case {
    const char *fixture;
    const char *description;
  };
  const Case cases[] = {
      {"ct-int4-sym-g32", "compressed-tensors pack-quantized, 4-bit, group "
                          "32 (config.json)"},
      {"ct-int4-asym-g32", "compressed-tensors pack-quantized, 4-bit, group "
                           "32 (config.json)"},
      {"ct-int8-sym-channel", "compressed-tensors pack-quantized, 8-bit, one "
                              "group per row (config.json)"},
      {"ct-nvfp4", "compressed-tensors nvfp4-pack-quantized (config.json)"},
      {"ct-fp8-tensor",
       "compressed-tensors float-quantized FP8, per tensor (config.json)"},
      {"ct-fp8-channel",
       "compressed-tensors float-quantized FP8, per channel (config.json)"},
      {"ct-fp8-block", "compressed-tensors float-quantized FP8, blocks "
                       "128x128 (config.json)"},
      {"gptq-int4-g32", "GPTQ v1, 4-bit, group 32 (quantize_config.json)"},
      {"gptq-int4-g32-actorder",
       "GPTQ v1, 4-bit, group 32 (quantize_config.json)"},
      {"gptq-int8-g32", "GPTQ v1, 8-bit, group 32 (quantize_config.json)"},
      {"awq-int4-g32", "AWQ GEMM, 4-bit, group 32 (config.json)"},
      {"modelopt-nvfp4", "ModelOpt NVFP4 (hf_quant_config.json)"},
  };
  for (const Case &test : cases) {
    INFO(test.fixture);
    Expected<QuantLayout> layout = detectLayout(fixturePath(test.fixture));
    INFO((layout.ok() ? "" : layout.error().message));
    REQUIRE(layout.ok());
    CHECK(layout->describe() == test.description);
    // The layer imports through it (PackerFixturesTest compares the values).
    Expected<Checkpoint> checkpoint =
        Checkpoint::open(fixturePath(test.fixture));
    REQUIRE(checkpoint.ok());
    Expected<ImportedWeight> weight =
        importLayer(*checkpoint, *layout, "model.layers.0.mlp.down_proj");
    INFO((weight.ok() ? "" : weight.error().message));
    CHECK(weight.ok());
  }
}

TEST_CASE("a directory without a quantization config is plain") {
  std::string directory =
      configDirectory("plain-config", "config.json", R"({"model_type": "x"})");
  Expected<QuantLayout> layout = detectLayout(directory);
  std::filesystem::remove_all(directory);
  REQUIRE(layout.ok());
  CHECK(layout->kind == QuantLayout::Kind::None);
  CHECK(layout->describe() == "not quantized (no quantization config)");
}

TEST_CASE("configs that name gptq_v2, AutoAWQ's keys and a block size") {
  std::string directory = configDirectory(
      "gptq-v2", "quantize_config.json",
      R"({"bits": 8, "group_size": -1, "checkpoint_format": "gptq_v2"})");
  Expected<QuantLayout> layout = detectLayout(directory);
  std::filesystem::remove_all(directory);
  REQUIRE(layout.ok());
  CHECK(layout->describe() ==
        "GPTQ v2, 8-bit, one group per row (quantize_config.json)");
  directory = configDirectory(
      "autoawq", "quantize_config.json",
      R"({"zero_point": true, "q_group_size": 64, "w_bit": 4, "version": "GEMM"})");
  layout = detectLayout(directory);
  std::filesystem::remove_all(directory);
  REQUIRE(layout.ok());
  CHECK(layout->describe() ==
        "AWQ GEMM, 4-bit, group 64 (quantize_config.json)");
}

TEST_CASE("configs lowbit cannot import are refused, naming the field") {
  CHECK_THAT(detectError("bad-gptq-bits", "quantize_config.json",
                         R"({"bits": 3, "group_size": 128})"),
             Contains("quantize_config.json: GPTQ \"bits\" 3"));
  CHECK_THAT(detectError("bad-gptq-format", "config.json",
                         R"({"quantization_config": {"quant_method": "gptq",
                             "checkpoint_format": "marlin"}})"),
             Contains("checkpoint_format\" 'marlin'"));
  CHECK_THAT(detectError("bad-awq", "config.json",
                         R"({"quantization_config": {"quant_method": "awq",
                             "version": "gemv"}})"),
             Contains("AWQ \"version\" 'gemv'"));
  CHECK_THAT(detectError("bad-method", "config.json",
                         R"({"quantization_config": {"quant_method": "bnb"}})"),
             Contains("quant_method 'bnb'"));
  CHECK_THAT(detectError("bad-ct-groups", "config.json",
                         R"({"quantization_config": {"quant_method":
                      "compressed-tensors", "format": "pack-quantized",
                      "config_groups": {}}})"),
             Contains("must hold one group"));
  CHECK_THAT(detectError("bad-ct-format", "config.json",
                         R"({"quantization_config": {"quant_method":
                      "compressed-tensors", "format": "marlin-24",
                      "config_groups": {"g": {"weights": {}}}}})"),
             Contains("format 'marlin-24'"));
  CHECK_THAT(detectError("bad-modelopt", "hf_quant_config.json",
                         R"({"quantization": {"quant_algo": "FP8"}})"),
             Contains("hf_quant_config.json: ModelOpt \"quant_algo\" 'FP8'"));
  CHECK_THAT(detectError("bad-json", "config.json", "{"),
             Contains("config.json: "));
  CHECK_THAT(detectError("bad-group", "quantize_config.json",
                         R"({"bits": 4, "group_size": 0})"),
             Contains("\"group_size\" 0 is neither -1 nor a group size"));
}
