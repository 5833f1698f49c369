//===- GgufWriterTest.cpp - Whole GGUF files written and read back --------===//
//
// The gguf package's fixture file, read by lowbit and written back, is the
// same bytes (so the writer lays a file out as GGUFWriter does); a file of
// lowbit's Q8_0 and Q4_0 tensors, f32 and f16 tensors and metadata of every
// kind reads back bit for bit; bad input is refused.
//
//===----------------------------------------------------------------------===//

#include "CheckpointTesting.h"

#include "checkpoint/GgufExport.h"
#include "checkpoint/GgufWeights.h"
#include "checkpoint/GgufWriter.h"
#include "runtime/core/AtomicFile.h"

#include <random>

namespace lowbit::checkpoint {
namespace {

std::vector<GgufTensorData> tensorsOf(const GgufFile &file) {
  std::vector<GgufTensorData> tensors;
  for (const GgufTensorInfo &info : file.header().tensors)
    tensors.push_back(
        {info.name, info.extents, info.type->id, file.data(info)});
  return tensors;
}

GgufValue scalar(GgufValueType type, uint64_t bits) {
  GgufValue value;
  value.type = type;
  value.bits = bits;
  return value;
}

GgufValue text(std::string string) {
  GgufValue value;
  value.type = GgufValueType::String;
  value.string = std::move(string);
  return value;
}

TEST_CASE("the gguf package's file written back is the same bytes",
          "[gguf-writer]") {
  std::string path =
      std::string(LOWBIT_CHECKPOINT_FIXTURES) + "/gguf-q8_0-q4_0/model.gguf";
  Expected<GgufFile> file = GgufFile::open(path);
  REQUIRE(file.ok());
  std::vector<GgufTensorData> tensors = tensorsOf(*file);
  Expected<std::string> written =
      serializeGguf(file->header().metadata, tensors);
  REQUIRE(written.ok());
  std::string original, error;
  REQUIRE(runtime::readFile(path, original, &error));
  CHECK(*written == original);
}

TEST_CASE("lowbit's Q8_0, Q4_0, f32 and f16 tensors and metadata read back",
          "[gguf-writer]") {
  std::mt19937 generator(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(4 * 64);
  for (float &value : values)
    value = normal(generator);
  std::vector<QuantizedTensor> quantized;
  std::vector<std::vector<std::byte>> blocks;
  for (uint32_t type : {kGgmlQ8_0, kGgmlQ4_0}) {
    Expected<Scheme> scheme = ggufBlockScheme(type);
    REQUIRE(scheme.ok());
    std::string error;
    std::optional<QuantizedTensor> tensor =
        quantize(*scheme, values, 4, 64, &error);
    REQUIRE(tensor);
    Expected<std::vector<std::byte>> exported = exportGgufBlocks(*tensor, type);
    REQUIRE(exported.ok());
    quantized.push_back(std::move(*tensor));
    blocks.push_back(std::move(*exported));
  }
  std::vector<std::byte> f32 = testing::bytesOf(values);
  std::vector<uint16_t> halves = {0x3c00, 0xc000, 0x7bff, 0x0001, 0x8000};
  std::vector<std::byte> f16 = testing::bytesOf(halves);
  std::vector<GgufTensorData> tensors = {
      {"blk.0.ffn_down.weight", {64, 4}, kGgmlQ8_0, blocks[0]},
      {"blk.0.ffn_up.weight", {64, 4}, kGgmlQ4_0, blocks[1]},
      {"output_norm.weight", {64, 4}, kGgmlF32, f32},
      {"token_embd.weight", {5}, kGgmlF16, f16}};
  GgufValue layers = scalar(GgufValueType::I32, 0);
  GgufValue list;
  list.type = GgufValueType::Array;
  list.elementType = GgufValueType::String;
  list.elements = {text("a"), text(""), text("c")};
  GgufValue numbers;
  numbers.type = GgufValueType::Array;
  numbers.elementType = GgufValueType::I64;
  numbers.elements = {scalar(GgufValueType::I64, uint64_t(-5)),
                      scalar(GgufValueType::I64, 7)};
  std::vector<std::pair<std::string, GgufValue>> metadata = {
      {"general.architecture", text("llama")},
      {"general.alignment", scalar(GgufValueType::U32, 64)},
      {"llama.block_count", scalar(GgufValueType::U32, 1)},
      {"llama.rope.freq_base", scalar(GgufValueType::F32, 0x461c4000)},
      {"general.flag", scalar(GgufValueType::Bool, 1)},
      {"general.layers", layers},
      {"tokenizer.ggml.tokens", list},
      {"general.numbers", numbers},
      {"general.wide", scalar(GgufValueType::F64, 0x3ff0000000000000)}};

  std::filesystem::path directory = testing::scratchDirectory("gguf-writer");
  std::string path = (directory / "lowbit.gguf").string();
  REQUIRE(writeGguf(path, metadata, tensors).ok());
  Expected<GgufFile> file = GgufFile::open(path);
  REQUIRE(file.ok());
  const GgufHeader &header = file->header();
  CHECK(header.version == 3);
  CHECK(header.alignment == 64);
  REQUIRE(header.metadata.size() == metadata.size());
  for (size_t i = 0; i < metadata.size(); ++i) {
    const auto &[key, value] = header.metadata[i];
    CAPTURE(key);
    CHECK(key == metadata[i].first);
    CHECK(value.type == metadata[i].second.type);
    CHECK(value.bits == metadata[i].second.bits);
    CHECK(value.string == metadata[i].second.string);
    REQUIRE(value.elements.size() == metadata[i].second.elements.size());
    for (size_t j = 0; j < value.elements.size(); ++j) {
      CHECK(value.elements[j].bits == metadata[i].second.elements[j].bits);
      CHECK(value.elements[j].string == metadata[i].second.elements[j].string);
    }
  }
  REQUIRE(header.tensors.size() == tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const GgufTensorInfo &info = header.tensors[i];
    CAPTURE(info.name);
    CHECK(info.name == tensors[i].name);
    CHECK(info.extents == tensors[i].extents);
    CHECK(info.type->id == tensors[i].type);
    CHECK(info.offset % 64 == 0);
    CHECK(std::ranges::equal(file->data(info), tensors[i].bytes));
  }
  for (size_t i = 0; i < 2; ++i) {
    Expected<QuantizedTensor> imported =
        importGgufTensor(*file, header.tensors[i]);
    REQUIRE(imported.ok());
    CHECK(imported->codes == quantized[i].codes);
    CHECK(imported->scaleCodes == quantized[i].scaleCodes);
  }
  // Written back, the same bytes.
  std::string original, error;
  REQUIRE(runtime::readFile(path, original, &error));
  Expected<std::string> again =
      serializeGguf(header.metadata, tensorsOf(*file));
  REQUIRE(again.ok());
  CHECK(*again == original);
  std::filesystem::remove_all(directory);
}

TEST_CASE("the GGUF writer refuses what no reader would take",
          "[gguf-writer]") {
  std::vector<std::byte> bytes(34);
  auto refused = [](std::vector<std::pair<std::string, GgufValue>> metadata,
                    std::vector<GgufTensorData> tensors,
                    std::string_view message) {
    Expected<std::string> file = serializeGguf(metadata, tensors);
    REQUIRE(!file.ok());
    CAPTURE(file.error().message);
    CHECK(file.error().message.find(message) != std::string::npos);
  };
  GgufTensorData block{"w", {32}, kGgmlQ8_0, bytes};
  refused({{"a", text("x")}, {"a", text("y")}}, {}, "given twice");
  refused({}, {block, block}, "given twice");
  refused({{"general.alignment", scalar(GgufValueType::U32, 24)}}, {block},
          "power of two");
  refused({}, {{"w", {16}, kGgmlQ8_0, bytes}}, "not a multiple of Q8_0");
  refused({}, {{"w", {64}, kGgmlQ8_0, bytes}}, "needs 68");
  refused({}, {{"w", {32}, 9999, bytes}}, "unknown ggml type");
  refused({}, {{"w", {}, kGgmlQ8_0, bytes}}, "1 to 4 extents");
  GgufValue nested;
  nested.type = GgufValueType::Array;
  nested.elementType = GgufValueType::Array;
  refused({{"n", nested}}, {}, "array of arrays");
}

TEST_CASE("a checkpoint exported to GGUF holds the gguf package's blocks",
          "[gguf-writer]") {
  // The fixture's f32 sources, quantized by lowbit and written as GGUF,
  // against the blocks the gguf package's quantizer wrote from them.
  std::string fixtures =
      std::string(LOWBIT_CHECKPOINT_FIXTURES) + "/gguf-q8_0-q4_0/";
  Expected<Checkpoint> source =
      Checkpoint::open(fixtures + "source.safetensors");
  Expected<GgufFile> reference = GgufFile::open(fixtures + "model.gguf");
  REQUIRE(source.ok());
  REQUIRE(reference.ok());
  std::filesystem::path directory = testing::scratchDirectory("gguf-export");
  size_t compared = 0;
  for (uint32_t type : {kGgmlQ8_0, kGgmlQ4_0}) {
    std::string path = (directory / "out.gguf").string();
    REQUIRE(writeCheckpointAsGguf(*source, path, type).ok());
    Expected<GgufFile> written = GgufFile::open(path);
    REQUIRE(written.ok());
    CHECK(written->header().tensors.size() == source->tensors().size());
    for (const GgufTensorInfo &info : reference->header().tensors) {
      if (info.type->id != type)
        continue;
      CAPTURE(info.name);
      const GgufTensorInfo *mine = written->header().findTensor(info.name);
      REQUIRE(mine);
      CHECK(mine->extents == info.extents);
      CHECK(std::ranges::equal(written->data(*mine), reference->data(info)));
      ++compared;
    }
  }
  CHECK(compared == 4);
  std::filesystem::remove_all(directory);
}

} // namespace
} // namespace lowbit::checkpoint
