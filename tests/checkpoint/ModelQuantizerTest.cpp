//===- ModelQuantizerTest.cpp - quantize-model on a synthetic checkpoint --===//
//
// A tiny Hugging Face directory made here (two linear weights, an
// embedding and lm_head that the default --ignore leaves alone, a 1-D norm
// and a 3-D tensor that are no linear weights, config.json and a
// tokenizer file) quantized into compressed-tensors: lowbit's own importer
// reads every weight back to exactly the reference quantizer's values, the
// other tensors and files are copied, a --shard split merged equals one
// run byte for byte, an interrupted run resumes, and bad options are
// refused with nothing written.
//
//===----------------------------------------------------------------------===//

#include "CheckpointTesting.h"

#include "checkpoint/ModelQuantizer.h"
#include "checkpoint/QuantConfig.h"
#include "format/SchemeText.h"
#include "runtime/core/AtomicFile.h"
#include "runtime/files/QuantizedFiles.h"

#include <atomic>

#include <fstream>
#include <map>
#include <random>

namespace lowbit::checkpoint {
namespace {

namespace fs = std::filesystem;
using testing::bytesOf;
using testing::scratchDirectory;

OwnedTensor randomTensor(const std::string &name, DType dtype,
                         std::vector<int64_t> shape, unsigned seed) {
  std::mt19937 generator(seed);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  int64_t count = 1;
  for (int64_t extent : shape)
    count *= extent;
  std::vector<float> values(static_cast<size_t>(count));
  for (float &value : values)
    value = normal(generator);
  if (dtype == DType::F32)
    return {name, dtype, shape, bytesOf(values)};
  // bf16 and f16 by truncating or converting the f32: any bits will do.
  std::vector<uint16_t> halves(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &values[i], 4);
    halves[i] =
        dtype == DType::BF16
            ? uint16_t(bits >> 16)
            : uint16_t(0x2000 + (bits >> 16 & 0x1fff) + (bits >> 31 << 15));
  }
  return {name, dtype, shape, bytesOf(halves)};
}

std::vector<OwnedTensor> syntheticModel() {
  return {
      randomTensor("model.embed_tokens.weight", DType::BF16, {16, 64}, 1),
      randomTensor("model.layers.0.self_attn.q_proj.weight", DType::BF16,
                   {32, 64}, 2),
      randomTensor("model.layers.0.mlp.down_proj.weight", DType::F32, {24, 96},
                   3),
      randomTensor("model.layers.0.input_layernorm.weight", DType::BF16, {64},
                   4),
      randomTensor("model.layers.0.conv.weight", DType::F32, {4, 4, 4}, 5),
      randomTensor("lm_head.weight", DType::F16, {16, 64}, 6),
  };
}

void writeText(const fs::path &path, const std::string &text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string readText(const fs::path &path) {
  std::string bytes, error;
  REQUIRE(runtime::readFile(path.string(), bytes, &error));
  return bytes;
}

fs::path makeModelDirectory(const std::string &test) {
  fs::path root = scratchDirectory(test);
  fs::path model = root / "hf";
  fs::create_directories(model);
  std::vector<OwnedTensor> tensors = syntheticModel();
  std::vector<TensorData> views;
  for (const OwnedTensor &tensor : tensors)
    views.push_back(tensor.view());
  REQUIRE(writeCheckpoint(model.string(), views, 1 << 30).ok());
  writeText(model / "config.json",
            "{\"model_type\": \"llama\", \"hidden_size\": 64}\n");
  writeText(model / "tokenizer.json", "{\"version\": \"1.0\"}\n");
  return model;
}

QuantizeModelOptions optionsFor(const fs::path &model, const fs::path &out,
                                std::string_view schemeText) {
  std::optional<Scheme> scheme = parseSchemeText(schemeText);
  REQUIRE(scheme);
  QuantizeModelOptions options(*scheme);
  options.inputDirectory = model.string();
  options.outputDirectory = out.string();
  // Small shards: three of them for the synthetic model.
  options.maxShardBytes = 4000;
  return options;
}

/// Every file under `directory` (the run's state included), by path.
std::map<std::string, std::string> filesUnder(const fs::path &directory) {
  std::map<std::string, std::string> files;
  for (const fs::directory_entry &entry :
       fs::recursive_directory_iterator(directory))
    if (entry.is_regular_file())
      files[fs::relative(entry.path(), directory).string()] =
          readText(entry.path());
  return files;
}

constexpr std::string_view kInt4Asym =
    "scheme(format=uint4,scale=group(32;axis=1),tail=true,type=bf16,"
    "rule=minmax,zero_point=true,packing=nibble)";

TEST_CASE("quantize-model output reads back through the importer bit for "
          "bit",
          "[quantize-model]") {
  auto [schemeText, kind] = GENERATE(
      std::pair{kInt4Asym, QuantLayout::Kind::PackQuantized},
      std::pair{std::string_view(
                    "scheme(format=int8,scale=per_channel(axis=0),type=f16)"),
                QuantLayout::Kind::PackQuantized},
      std::pair{std::string_view("fp8_e4m3"),
                QuantLayout::Kind::FloatQuantized},
      std::pair{std::string_view("scheme(format=e4m3,scale=block(16x32),"
                                 "tail=true,type=bf16)"),
                QuantLayout::Kind::FloatQuantized},
      // torchao's decode convention is written in compressed-tensors'
      // encode one (the layout's); the importer reads it back as such.
      std::pair{std::string_view("nvfp4"),
                QuantLayout::Kind::Nvfp4CompressedTensors},
      std::pair{std::string_view("mxfp4"),
                QuantLayout::Kind::Mxfp4CompressedTensors});
  CAPTURE(schemeText);
  fs::path model = makeModelDirectory("qm-readback");
  fs::path out = model.parent_path() / "out";
  QuantizeModelOptions options = optionsFor(model, out, schemeText);
  Expected<QuantizeModelResult> result = quantizeModel(options);
  REQUIRE(result.ok());
  CHECK(result->merged);
  CHECK(result->shardCount > 1);
  CHECK(result->ignoredModules ==
        std::vector<std::string>{"lm_head", "model.embed_tokens"});
  REQUIRE(result->layers.size() == 2);

  Expected<Checkpoint> input = Checkpoint::open(model.string());
  Expected<Checkpoint> output = Checkpoint::open(out.string());
  REQUIRE(input.ok());
  REQUIRE(output.ok());
  Expected<QuantLayout> layout = detectLayout(out.string());
  REQUIRE(layout.ok());
  CHECK(layout->kind == kind);

  for (const auto &[name, entry] : input->tensors()) {
    CAPTURE(name);
    bool quantized = name.find("_proj") != std::string::npos;
    if (!quantized) {
      // Copied as it is.
      Expected<Checkpoint::Entry> copy = output->get(name);
      REQUIRE(copy.ok());
      CHECK(copy->info->dtype == entry.info->dtype);
      CHECK(std::ranges::equal(copy->data(), entry.data()));
      continue;
    }
    // float-quantized keeps the weight's name; the others replace it.
    CHECK(!output->find(name) == (kind != QuantLayout::Kind::FloatQuantized));
    std::string module = name.substr(0, name.size() - 7);
    Expected<ImportedWeight> imported = importLayer(*output, *layout, module);
    REQUIRE(imported.ok());
    // The reference quantizer on the same values, directly.
    int64_t rows = entry.info->shape[0], cols = entry.info->shape[1];
    std::vector<float> values(size_t(rows * cols));
    if (entry.info->dtype == DType::F32) {
      std::memcpy(values.data(), entry.data().data(), values.size() * 4);
    } else {
      std::vector<uint16_t> halves(values.size());
      std::memcpy(halves.data(), entry.data().data(), halves.size() * 2);
      values = widenToFloat(HalfType::BF16, halves);
    }
    std::string error;
    std::optional<QuantizedTensor> expected =
        quantize(imported->tensor.scheme, values, rows, cols, &error);
    REQUIRE(expected);
    std::optional<std::vector<float>> want = dequantize(*expected, &error);
    std::optional<std::vector<float>> got =
        dequantize(imported->tensor, &error);
    REQUIRE(want);
    REQUIRE(got);
    CHECK(std::memcmp(want->data(), got->data(), want->size() * 4) == 0);
    CHECK(imported->tensor.codes == expected->codes);
    CHECK(imported->tensor.scaleCodes == expected->scaleCodes);
  }

  // config.json keeps the input's keys; the tokenizer is copied.
  std::string config = readText(out / "config.json");
  CHECK(config.find("\"model_type\": \"llama\"") != std::string::npos);
  CHECK(config.find("\"quant_method\": \"compressed-tensors\"") !=
        std::string::npos);
  CHECK(readText(out / "tokenizer.json") == readText(model / "tokenizer.json"));
  std::string report = readText(out / "quant_report.json");
  CHECK(report.find("model.layers.0.mlp.down_proj.weight") !=
        std::string::npos);
  fs::remove_all(model.parent_path());
}

TEST_CASE("quantize-model --shard runs merged equal one run byte for byte",
          "[quantize-model]") {
  fs::path model = makeModelDirectory("qm-shards");
  fs::path single = model.parent_path() / "single";
  fs::path split = model.parent_path() / "split";
  REQUIRE(quantizeModel(optionsFor(model, single, kInt4Asym)).ok());

  QuantizeModelOptions options = optionsFor(model, split, kInt4Asym);
  options.shardCount = 2;
  options.shardIndex = 1;
  Expected<QuantizeModelResult> second = quantizeModel(options);
  REQUIRE(second.ok());
  CHECK(!second->merged);
  // A merge before every shard is done names the missing ones.
  Expected<QuantizeModelResult> early = mergeQuantizedModel(options);
  REQUIRE(!early.ok());
  CHECK(early.error().message.find("shards not done yet: "
                                   "model-00001-of-00003.safetensors") !=
        std::string::npos);
  options.shardIndex = 0;
  options.jobs = 3;
  REQUIRE(quantizeModel(options).ok());
  Expected<QuantizeModelResult> merged = mergeQuantizedModel(options);
  REQUIRE(merged.ok());
  CHECK(filesUnder(split) == filesUnder(single));
  CHECK(fs::exists(split / "model.safetensors.index.json"));
  fs::remove_all(model.parent_path());
}

TEST_CASE("an interrupted quantize-model run resumes", "[quantize-model]") {
  fs::path model = makeModelDirectory("qm-resume");
  fs::path reference = model.parent_path() / "reference";
  fs::path out = model.parent_path() / "out";
  REQUIRE(quantizeModel(optionsFor(model, reference, kInt4Asym)).ok());

  // An interrupted run: one shard finished, one damaged (as if another
  // writer truncated it), a dead writer's temporary of a third.
  QuantizeModelOptions options = optionsFor(model, out, kInt4Asym);
  options.shardCount = 3;
  options.shardIndex = 0;
  REQUIRE(quantizeModel(options).ok());
  options.shardIndex = 1;
  REQUIRE(quantizeModel(options).ok());
  fs::resize_file(out / "model-00002-of-00003.safetensors", 100);
  writeText(out / "model-00003-of-00003.safetensors.tmp.999999999.0", "half");

  options.shardCount = 1;
  options.shardIndex = 0;
  Expected<QuantizeModelResult> resumed = quantizeModel(options);
  REQUIRE(resumed.ok());
  CHECK(resumed->shardsResumed == 1);
  CHECK(resumed->shardsWritten == 2);
  CHECK(filesUnder(out) == filesUnder(reference));

  // Run again: everything is done, nothing is rewritten, same result.
  Expected<QuantizeModelResult> again = quantizeModel(options);
  REQUIRE(again.ok());
  CHECK(again->shardsResumed == 3);
  CHECK(again->shardsWritten == 0);
  CHECK(filesUnder(out) == filesUnder(reference));
  fs::remove_all(model.parent_path());
}

TEST_CASE("quantize-model refuses bad options and writes nothing",
          "[quantize-model]") {
  fs::path model = makeModelDirectory("qm-refuse");
  fs::path out = model.parent_path() / "out";
  auto refused = [&](QuantizeModelOptions options, std::string_view message) {
    Expected<QuantizeModelResult> result = quantizeModel(options);
    REQUIRE(!result.ok());
    CAPTURE(result.error().message);
    CHECK(result.error().message.find(message) != std::string::npos);
  };
  QuantizeModelOptions options = optionsFor(model, out, kInt4Asym);

  QuantizeModelOptions missing = options;
  missing.inputDirectory = (model.parent_path() / "absent").string();
  refused(missing, "is not a directory");
  QuantizeModelOptions shard = options;
  shard.shardIndex = 3;
  shard.shardCount = 2;
  refused(shard, "I/N needs N >= 1 and 0 <= I < N");
  QuantizeModelOptions inside = options;
  inside.outputDirectory = (model / "quantized").string();
  refused(inside, "is inside --in");
  QuantizeModelOptions same = options;
  same.outputDirectory = model.string();
  refused(same, "is inside --in");
  QuantizeModelOptions mx = options;
  mx.scheme = *parseSchemeText("mxfp8");
  refused(mx, "MXFP8 and MXFP6 have no compressed-tensors form");
  QuantizeModelOptions staticScales = options;
  staticScales.format = OutputFormat::Lowbit;
  staticScales.scheme = *parseSchemeText("int8");
  staticScales.scheme.scale.mode = ScaleMode::Static;
  refused(staticScales, "quantize-model computes them");
  QuantizeModelOptions regex = options;
  regex.ignore = {"re:("};
  refused(regex, "not a regular expression");
  QuantizeModelOptions quantized = options;
  quantized.inputDirectory =
      std::string(LOWBIT_CHECKPOINT_FIXTURES) + "/ct-int4-sym-g32";
  refused(quantized, "is quantized already");
  QuantizeModelOptions oddShape = options;
  oddShape.scheme = *parseSchemeText(
      "scheme(format=uint4,scale=group(64;axis=1),type=bf16,rule=minmax,"
      "zero_point=true,packing=nibble)");
  refused(oddShape, "model.layers.0.mlp.down_proj.weight");
  CHECK(!fs::exists(out));

  // A directory of something else, and a run of other settings.
  fs::create_directories(out);
  writeText(out / "notes.txt", "mine");
  refused(options, "holds no quantize-model run");
  fs::remove(out / "notes.txt");
  REQUIRE(quantizeModel(options).ok());
  QuantizeModelOptions other = options;
  other.scheme = *parseSchemeText("fp8_e4m3");
  refused(other, "holds a quantize-model run of other settings");
  fs::remove_all(model.parent_path());
}

TEST_CASE("quantize-model: each scheme is written or refused with the "
          "reason",
          "[quantize-model]") {
  fs::path model = makeModelDirectory("qm-schemes");
  enum class Variant { AsNamed, Swizzled, RCeil, Encode };
  auto [schemeName, variant, message] =
      GENERATE(std::tuple{"fp8_e5m2", Variant::AsNamed,
                          "stores FP8 as e4m3 (torch.float8_e4m3fn) only"},
               std::tuple{"mxfp8", Variant::AsNamed,
                          "MXFP8 and MXFP6 have no compressed-tensors form"},
               std::tuple{"mxfp6_e2m3", Variant::AsNamed,
                          "no layout for MX scales on e2m3 codes"},
               std::tuple{"mxfp6_e3m2", Variant::AsNamed,
                          "no layout for MX scales on e3m2 codes"},
               std::tuple{"mxfp4", Variant::Swizzled, "swizzle_128x4 scales"},
               std::tuple{"nvfp4", Variant::Swizzled, "this variant is not it"},
               std::tuple{"nvfp4", Variant::AsNamed, ""},
               std::tuple{"nvfp4", Variant::Encode, ""},
               std::tuple{"mxfp4", Variant::AsNamed, ""},
               std::tuple{"mxfp4", Variant::RCeil, ""});
  CAPTURE(schemeName, int(variant));
  Scheme scheme = *lookupScheme(schemeName);
  if (variant != Variant::AsNamed)
    scheme.name.clear();
  if (variant == Variant::Swizzled)
    scheme.scale.layout = ScaleLayout::Swizzle128x4;
  if (variant == Variant::RCeil)
    scheme.scale.rule = ScaleRule::E8M0RCeil;
  if (variant == Variant::Encode)
    scheme.scale.globalScale = GlobalScale::EncodeReciprocal;
  fs::path out = model.parent_path() / "out";
  fs::remove_all(out);
  QuantizeModelOptions options(scheme);
  options.inputDirectory = model.string();
  options.outputDirectory = out.string();
  Expected<QuantizeModelResult> result = quantizeModel(options);
  if (std::string_view(message).empty()) {
    REQUIRE(result.ok());
  } else {
    REQUIRE(!result.ok());
    CAPTURE(result.error().message);
    CHECK(result.error().message.find(message) != std::string::npos);
    CHECK(result.error().message.find("--format lowbit holds") !=
          std::string::npos);
    CHECK(!fs::exists(out));
    // lowbit's own sets hold it.
    options.format = OutputFormat::Lowbit;
    REQUIRE(quantizeModel(options).ok());
  }
  fs::remove_all(model.parent_path());
}

TEST_CASE("quantize-model: both NVFP4 conventions write the same "
          "compressed-tensors weights",
          "[quantize-model]") {
  fs::path model = makeModelDirectory("qm-nvfp4");
  fs::path decode = model.parent_path() / "decode";
  fs::path encode = model.parent_path() / "encode";
  QuantizeModelOptions options = optionsFor(model, decode, "nvfp4");
  options.maxShardBytes = 1 << 30;
  REQUIRE(quantizeModel(options).ok());
  options.outputDirectory = encode.string();
  options.scheme.scale.globalScale = GlobalScale::EncodeReciprocal;
  options.scheme.name.clear();
  REQUIRE(quantizeModel(options).ok());
  CHECK(readText(decode / "model.safetensors") ==
        readText(encode / "model.safetensors"));
  // Weights only: no activations' global scale.
  Expected<Checkpoint> output = Checkpoint::open(decode.string());
  REQUIRE(output.ok());
  CHECK(output->find("model.layers.0.self_attn.q_proj.weight_global_scale"));
  CHECK(!output->find("model.layers.0.self_attn.q_proj.input_global_scale"));
  std::string config = readText(decode / "config.json");
  CHECK(config.find("\"nvfp4-pack-quantized\"") != std::string::npos);
  CHECK(config.find("\"tensor_group\"") != std::string::npos);
  fs::remove_all(model.parent_path());
}

TEST_CASE("quantize-model's output does not depend on the codec",
          "[quantize-model]") {
  fs::path model = makeModelDirectory("qm-codec");
  fs::path reference = model.parent_path() / "reference";
  fs::path counted = model.parent_path() / "counted";
  REQUIRE(quantizeModel(optionsFor(model, reference, kInt4Asym)).ok());
  // A codec of its own (the reference's, counting its calls): the same
  // bytes, and every weight went through it.
  std::atomic<int> quantized = 0, dequantized = 0;
  WeightCodec base = referenceCodec();
  QuantizeModelOptions options = optionsFor(model, counted, kInt4Asym);
  options.jobs = 2;
  options.codec.quantize = [&](const Scheme &scheme, DType dtype,
                               std::span<const std::byte> values, int64_t rows,
                               int64_t cols) {
    ++quantized;
    return base.quantize(scheme, dtype, values, rows, cols);
  };
  options.codec.dequantize = [&](const QuantizedTensor &tensor) {
    ++dequantized;
    return base.dequantize(tensor);
  };
  REQUIRE(quantizeModel(options).ok());
  CHECK(quantized == 2);
  CHECK(dequantized == 2);
  CHECK(filesUnder(counted) == filesUnder(reference));

  // A codec's error names the weight, and the run stops.
  fs::path failed = model.parent_path() / "failed";
  QuantizeModelOptions failing = optionsFor(model, failed, kInt4Asym);
  failing.codec.quantize = [](const Scheme &, DType, std::span<const std::byte>,
                              int64_t, int64_t) -> Expected<QuantizedTensor> {
    return makeError(ErrorCode::InvalidArgument, "no kernel");
  };
  Expected<QuantizeModelResult> result = quantizeModel(failing);
  REQUIRE(!result.ok());
  CHECK(result.error().message.find("no kernel") != std::string::npos);
  CHECK(result.error().message.find("_proj.weight") != std::string::npos);
  fs::remove_all(model.parent_path());
}

TEST_CASE("quantize-model --format lowbit writes one set per weight",
          "[quantize-model]") {
  fs::path model = makeModelDirectory("qm-lowbit");
  fs::path out = model.parent_path() / "out";
  QuantizeModelOptions options = optionsFor(model, out, "mxfp8");
  options.format = OutputFormat::Lowbit;
  Expected<QuantizeModelResult> result = quantizeModel(options);
  REQUIRE(result.ok());
  REQUIRE(result->layers.size() == 2);
  Expected<QuantLayout> layout = detectLayout(out.string());
  REQUIRE(layout.ok());
  CHECK(layout->kind == QuantLayout::Kind::LowbitSets);
  Expected<Checkpoint> input = Checkpoint::open(model.string());
  Expected<Checkpoint> output = Checkpoint::open(out.string());
  REQUIRE(input.ok());
  REQUIRE(output.ok());
  for (const auto &[name, entry] : input->tensors()) {
    CAPTURE(name);
    if (name.find("_proj") == std::string::npos) {
      Expected<Checkpoint::Entry> copy = output->get(name);
      REQUIRE(copy.ok());
      CHECK(std::ranges::equal(copy->data(), entry.data()));
      continue;
    }
    CHECK(!output->find(name));
    std::string error;
    std::optional<QuantizedTensor> set = files::readQuantizedDirectory(
        (out / name.substr(0, name.size() - 7)).string(), &error);
    REQUIRE(set);
    int64_t rows = entry.info->shape[0], cols = entry.info->shape[1];
    Expected<QuantizedTensor> expected = referenceCodec().quantize(
        *lookupScheme("mxfp8"), entry.info->dtype, entry.data(), rows, cols);
    REQUIRE(expected.ok());
    CHECK(set->scheme == expected->scheme);
    CHECK(set->codes == expected->codes);
    CHECK(set->scaleCodes == expected->scaleCodes);
  }
  std::string config = readText(out / "config.json");
  CHECK(config.find("\"quant_method\": \"lowbit\"") != std::string::npos);

  // A set lost after the run: its shard is not done, and a rerun writes it
  // again, the same bytes.
  std::map<std::string, std::string> before = filesUnder(out);
  fs::remove_all(out / "model.layers.0.mlp.down_proj");
  Expected<QuantizeModelResult> again = quantizeModel(options);
  REQUIRE(again.ok());
  CHECK(again->shardsWritten == 1);
  CHECK(filesUnder(out) == before);
  fs::remove_all(model.parent_path());
}

TEST_CASE("quantize-model: --ignore patterns", "[quantize-model]") {
  std::vector<std::string> patterns = {"lm_head", "re:.*embed"};
  CHECK(*matchesIgnore("lm_head", patterns));
  CHECK(*matchesIgnore("model.lm_head", patterns));
  CHECK(!*matchesIgnore("model.xlm_head", patterns));
  CHECK(*matchesIgnore("model.embed_tokens", patterns));
  CHECK(!*matchesIgnore("model.layers.0.mlp.up_proj", patterns));
  std::vector<std::string> anchored = {"re:layers\\.0\\."};
  CHECK(!*matchesIgnore("model.layers.0.mlp", anchored));
  CHECK(*matchesIgnore("layers.0.mlp", anchored));
}

} // namespace
} // namespace lowbit::checkpoint
