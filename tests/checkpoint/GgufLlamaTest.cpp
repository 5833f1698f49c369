//===- GgufLlamaTest.cpp - A Hugging Face Llama as llama.cpp's model ------===//
//
// The pieces of `lowbit checkpoint gguf --llama-cpp`: llama.cpp's tensor
// names, the rope permutation of the q and k rows (against the converter's
// reshape/swapaxes, worked out by hand), the metadata and vocabulary read
// from config.json and tokenizer.json, and a whole file read back. The lit
// test checkpoint-gguf-llama.test checks the permutation against numpy's.
//
//===----------------------------------------------------------------------===//

#include "checkpoint/GgufLlama.h"
#include "checkpoint/GgufExport.h"
#include "checkpoint/GgufWeights.h"
#include "format/Codec.h"

#include "CheckpointTesting.h"

#include <catch2/catch.hpp>

#include <bit>
#include <fstream>
#include <set>

using namespace lowbit;
using namespace lowbit::checkpoint;
using namespace lowbit::checkpoint::testing;
using Catch::Matchers::Contains;

namespace {

void writeText(const std::filesystem::path &path, const std::string &text) {
  std::ofstream(path) << text;
}

constexpr const char *kConfig = R"({
  "architectures": ["LlamaForCausalLM"], "hidden_size": 64,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
  "intermediate_size": 96, "vocab_size": 6, "max_position_embeddings": 256,
  "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "rope_scaling": null,
  "bos_token_id": 3, "eos_token_id": [4, 3]})";

constexpr const char *kTokenizer = R"({
  "added_tokens": [{"id": 3, "content": "<s>", "special": true},
                   {"id": 4, "content": "<tool>", "special": false}],
  "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2},
            "merges": ["a b", ["ab", "b"]]}})";

/// A model directory of `config` and, when not empty, `tokenizer`.
std::string modelDirectory(const std::string &name, const std::string &config,
                           const std::string &tokenizer) {
  std::filesystem::path directory = scratchDirectory(name);
  writeText(directory / "config.json", config);
  if (!tokenizer.empty())
    writeText(directory / "tokenizer.json", tokenizer);
  return directory.string();
}

const GgufValue *valueOf(const GgufLlamaModel &model, std::string_view key) {
  for (const auto &[name, value] : model.metadata)
    if (name == key)
      return &value;
  return nullptr;
}

std::string configWith(const std::string &from, const std::string &to) {
  std::string config = kConfig;
  size_t at = config.find(from);
  REQUIRE(at != std::string::npos);
  return config.replace(at, from.size(), to);
}

} // namespace

TEST_CASE("llama.cpp's rope permutation of q and k rows", "[gguf-llama]") {
  // 2 heads of 4 rows: reshape(2, 2, 2).swapaxes(1, 2) takes out row
  // h*4 + 2j + i from in row h*4 + 2i + j.
  std::vector<uint16_t> rows = {0, 1, 2, 3, 4, 5, 6, 7};
  Expected<std::vector<std::byte>> permuted =
      permuteRopeRows(bytesOf(rows), 8, 2, "q");
  REQUIRE(permuted.ok());
  CHECK(*permuted == bytesOf(std::vector<uint16_t>{0, 2, 1, 3, 4, 6, 5, 7}));
  // One head of 8 rows: halves interleaved, and whole rows move.
  std::vector<uint16_t> wide;
  for (uint16_t row = 0; row < 8; ++row)
    wide.insert(wide.end(), {row, uint16_t(100 + row)});
  permuted = permuteRopeRows(bytesOf(wide), 8, 1, "k");
  REQUIRE(permuted.ok());
  CHECK(*permuted ==
        bytesOf(std::vector<uint16_t>{0, 100, 4, 104, 1, 101, 5, 105, 2, 102, 6,
                                      106, 3, 103, 7, 107}));
  Expected<std::vector<std::byte>> odd =
      permuteRopeRows(bytesOf(std::vector<uint16_t>(6)), 6, 2, "k_proj");
  REQUIRE(!odd.ok());
  CHECK_THAT(odd.error().message,
             Contains("'k_proj' has 6 rows, not a multiple of 2 x 2 heads"));
}

TEST_CASE("Hugging Face Llama tensors take llama.cpp's names", "[gguf-llama]") {
  GgufLlamaModel model;
  model.blockCount = 12;
  auto name = [&](std::string_view hf) {
    Expected<std::optional<GgufTensorName>> mapped = model.tensorName(hf);
    REQUIRE(mapped.ok());
    REQUIRE(mapped->has_value());
    return **mapped;
  };
  CHECK(name("model.embed_tokens.weight").name == "token_embd.weight");
  CHECK(name("model.norm.weight").name == "output_norm.weight");
  CHECK(name("lm_head.weight").name == "output.weight");
  const std::pair<const char *, const char *> layer[] = {
      {"input_layernorm.weight", "attn_norm.weight"},
      {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.o_proj.weight", "attn_output.weight"},
      {"post_attention_layernorm.weight", "ffn_norm.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},
      {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"},
      {"self_attn.v_proj.bias", "attn_v.bias"}};
  for (auto [hf, gguf] : layer) {
    GgufTensorName mapped = name("model.layers.11." + std::string(hf));
    CHECK(mapped.name == "blk.11." + std::string(gguf));
    CHECK(mapped.rope == RopePermutation::None);
  }
  GgufTensorName q = name("model.layers.3.self_attn.q_proj.weight");
  CHECK(q.name == "blk.3.attn_q.weight");
  CHECK(q.rope == RopePermutation::Query);
  GgufTensorName kBias = name("model.layers.0.self_attn.k_proj.bias");
  CHECK(kBias.name == "blk.0.attn_k.bias");
  CHECK(kBias.rope == RopePermutation::Key);
  // The rotary buffers are left out, as llama.cpp's converter does.
  for (std::string_view skipped :
       {"model.rotary_emb.inv_freq",
        "model.layers.2.self_attn.rotary_emb.inv_freq"}) {
    Expected<std::optional<GgufTensorName>> mapped = model.tensorName(skipped);
    REQUIRE(mapped.ok());
    CHECK(!mapped->has_value());
  }
  for (std::string_view unknown :
       {"model.layers.01.mlp.up_proj.weight", "model.layers.1.mlp.up_proj",
        "model.layers.1.mlp.up_proj.weight2", "model.conv.weight",
        "model.layers..mlp.up_proj.weight",
        "model.layers.-1.mlp.up_proj.weight"}) {
    INFO(unknown);
    Expected<std::optional<GgufTensorName>> mapped = model.tensorName(unknown);
    REQUIRE(!mapped.ok());
    CHECK_THAT(mapped.error().message, Contains("has no llama.cpp name"));
  }
  Expected<std::optional<GgufTensorName>> past =
      model.tensorName("model.layers.12.mlp.up_proj.weight");
  REQUIRE(!past.ok());
  CHECK_THAT(past.error().message,
             Contains("of block 12, past num_hidden_layers 12"));
}

TEST_CASE("config.json and tokenizer.json as llama.cpp's metadata",
          "[gguf-llama]") {
  Expected<GgufLlamaModel> model =
      readGgufLlamaModel(modelDirectory("llama-meta", kConfig, kTokenizer),
                         GgufTokenizer::FromDirectory);
  REQUIRE(model.ok());
  CHECK(model->blockCount == 2);
  CHECK(model->ropeHeads(RopePermutation::Query) == 4);
  CHECK(model->ropeHeads(RopePermutation::Key) == 2);
  REQUIRE(!model->metadata.empty());
  CHECK(model->metadata.front().first == "general.architecture");
  CHECK(model->metadata.front().second.string == "llama");
  const std::pair<const char *, uint64_t> counts[] = {
      {"llama.block_count", 2},
      {"llama.context_length", 256},
      {"llama.embedding_length", 64},
      {"llama.feed_forward_length", 96},
      {"llama.attention.head_count", 4},
      {"llama.attention.head_count_kv", 2},
      {"llama.vocab_size", 6},
      {"llama.rope.dimension_count", 16},
      {"tokenizer.ggml.bos_token_id", 3},
      {"tokenizer.ggml.eos_token_id", 4}};
  for (auto [key, expected] : counts) {
    INFO(key);
    const GgufValue *value = valueOf(*model, key);
    REQUIRE(value);
    CHECK(value->type == GgufValueType::U32);
    CHECK(value->bits == expected);
  }
  CHECK(valueOf(*model, "llama.rope.freq_base")->bits ==
        std::bit_cast<uint32_t>(500000.0f));
  CHECK(valueOf(*model, "llama.attention.layer_norm_rms_epsilon")->bits ==
        std::bit_cast<uint32_t>(1e-5f));
  CHECK(!valueOf(*model, "llama.attention.key_length"));
  CHECK(valueOf(*model, "tokenizer.ggml.model")->string == "gpt2");
  std::vector<std::string> tokens, merges;
  std::vector<uint64_t> types;
  for (const GgufValue &token :
       valueOf(*model, "tokenizer.ggml.tokens")->elements)
    tokens.push_back(token.string);
  for (const GgufValue &type :
       valueOf(*model, "tokenizer.ggml.token_type")->elements)
    types.push_back(type.bits);
  for (const GgufValue &merge :
       valueOf(*model, "tokenizer.ggml.merges")->elements)
    merges.push_back(merge.string);
  CHECK(tokens ==
        std::vector<std::string>{"a", "b", "ab", "<s>", "<tool>", "[PAD5]"});
  // Normal, control (special), user-defined, unused.
  CHECK(types == std::vector<uint64_t>{1, 1, 1, 3, 4, 5});
  CHECK(merges == std::vector<std::string>{"a b", "ab b"});

  SECTION("without a tokenizer: no_vocab") {
    Expected<GgufLlamaModel> bare = readGgufLlamaModel(
        modelDirectory(
            "llama-bare",
            configWith("\"rope_theta\": 500000.0,", "\"head_dim\": 32,"), ""),
        GgufTokenizer::FromDirectory);
    REQUIRE(bare.ok());
    CHECK(valueOf(*bare, "tokenizer.ggml.model")->string == "no_vocab");
    CHECK(!valueOf(*bare, "tokenizer.ggml.tokens"));
    CHECK(!valueOf(*bare, "llama.rope.freq_base"));
    CHECK(valueOf(*bare, "llama.attention.key_length")->bits == 32);
    CHECK(valueOf(*bare, "llama.rope.dimension_count")->bits == 32);
    Expected<GgufLlamaModel> skipped = readGgufLlamaModel(
        modelDirectory("llama-skip", kConfig, "not json"), GgufTokenizer::None);
    REQUIRE(skipped.ok());
    CHECK(valueOf(*skipped, "tokenizer.ggml.model")->string == "no_vocab");
  }
}

TEST_CASE("configs and tokenizers llama.cpp's model cannot take are refused",
          "[gguf-llama]") {
  auto refused = [](const std::string &config, const std::string &tokenizer,
                    const std::string &message) {
    INFO(message);
    Expected<GgufLlamaModel> model =
        readGgufLlamaModel(modelDirectory("llama-bad", config, tokenizer),
                           GgufTokenizer::FromDirectory);
    REQUIRE(!model.ok());
    CHECK_THAT(model.error().message, Contains(message));
  };
  refused(configWith("LlamaForCausalLM", "Qwen2ForCausalLM"), "",
          "\"architectures\" is not [\"LlamaForCausalLM\"]");
  refused(configWith("\"rope_scaling\": null",
                     "\"rope_scaling\": {\"factor\": 2.0}"),
          "", "\"rope_scaling\" is set");
  refused(configWith("\"hidden_size\": 64,", ""), "",
          "\"hidden_size\" is missing");
  refused(configWith("\"num_hidden_layers\": 2", "\"num_hidden_layers\": -2"),
          "", "\"num_hidden_layers\" is not a positive 32-bit count");
  refused(
      configWith("\"num_key_value_heads\": 2", "\"num_key_value_heads\": 3"),
      "", "is not a multiple of num_key_value_heads 3");
  refused(configWith("\"rms_norm_eps\": 1e-05", "\"rms_norm_eps\": 0"), "",
          "\"rms_norm_eps\" is not a positive number");
  refused(configWith("\"rms_norm_eps\": 1e-05,", ""), "",
          "\"rms_norm_eps\" is missing");
  refused(configWith("\"bos_token_id\": 3", "\"bos_token_id\": 6"), kTokenizer,
          "\"bos_token_id\" is not a token id below 6");
  refused(kConfig, R"({"model": {"type": "WordPiece"}})",
          "tokenizer.json: a WordPiece tokenizer");
  refused(kConfig, R"({"model": {"type": "BPE", "byte_fallback": true}})",
          "a BPE tokenizer with byte_fallback");
  refused(kConfig,
          R"({"model": {"type": "BPE", "vocab": {"a": 6}, "merges": []}})",
          "token 'a' has an id outside 0..5");
  refused(kConfig, R"({"model": {"type": "BPE", "vocab": {}, "merges": [1]}})",
          "a merge is neither");
  refused(kConfig, "[1]", "tokenizer.json: not a JSON object");
  Expected<GgufLlamaModel> none = readGgufLlamaModel(
      scratchDirectory("llama-none").string(), GgufTokenizer::FromDirectory);
  REQUIRE(!none.ok());
  CHECK_THAT(none.error().message, Contains("has no config.json"));
}

TEST_CASE("a Llama checkpoint written as llama.cpp's model reads back",
          "[gguf-llama]") {
  Expected<GgufLlamaModel> model = readGgufLlamaModel(
      modelDirectory("llama-file", kConfig, kTokenizer), GgufTokenizer::None);
  REQUIRE(model.ok());
  auto tensor = [](std::string name, std::vector<int64_t> shape,
                   DType dtype = DType::F32) {
    int64_t count = 1;
    for (int64_t extent : shape)
      count *= extent;
    std::vector<float> values(static_cast<size_t>(count));
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = float(int(i * 37 % 101) - 50) / 16;
    OwnedTensor out{std::move(name), DType::F32, std::move(shape),
                    bytesOf(values)};
    if (dtype == DType::F16) {
      std::vector<uint16_t> halves;
      for (float value : values)
        halves.push_back(floatToHalf(value));
      out.dtype = DType::F16;
      out.bytes = bytesOf(halves);
    }
    return out;
  };
  std::vector<OwnedTensor> tensors = {
      tensor("model.embed_tokens.weight", {6, 64}),
      tensor("model.layers.0.self_attn.q_proj.weight", {64, 64}),
      tensor("model.layers.0.self_attn.k_proj.weight", {32, 64}),
      tensor("model.layers.0.input_layernorm.weight", {64}, DType::F16),
      tensor("model.layers.0.self_attn.rotary_emb.inv_freq", {8})};
  Checkpoint checkpoint = writeAndOpen("llama-file-ckpt", tensors);
  std::filesystem::path path = scratchDirectory("llama-file-out") / "m.gguf";
  REQUIRE(writeCheckpointAsGguf(checkpoint, path.string(), kGgmlQ4_0, &*model)
              .ok());
  Expected<GgufFile> file = GgufFile::open(path.string());
  REQUIRE(file.ok());
  const GgufHeader &header = file->header();
  CHECK(header.metadata.front().first == "general.architecture");
  CHECK(header.find("general.file_type")->bits == 2);
  CHECK(header.find("general.quantization_version")->bits == 2);
  CHECK(header.find("tokenizer.ggml.model")->string == "no_vocab");
  std::set<std::string> names;
  for (const GgufTensorInfo &info : header.tensors)
    names.insert(info.name);
  CHECK(names ==
        std::set<std::string>{"token_embd.weight", "blk.0.attn_q.weight",
                              "blk.0.attn_k.weight", "blk.0.attn_norm.weight"});
  // The norm widened to F32; k's rows permuted over 2 heads, then Q4_0.
  CHECK(header.findTensor("blk.0.attn_norm.weight")->type->id == kGgmlF32);
  const GgufTensorInfo &k = *header.findTensor("blk.0.attn_k.weight");
  CHECK(k.type->id == kGgmlQ4_0);
  CHECK(k.extents == std::vector<int64_t>{64, 32});
  Expected<std::vector<std::byte>> permuted =
      permuteRopeRows(tensors[2].bytes, 32, 2, "k");
  REQUIRE(permuted.ok());
  std::vector<float> values(permuted->size() / 4);
  std::memcpy(values.data(), permuted->data(), permuted->size());
  std::string error;
  std::optional<QuantizedTensor> expected =
      quantize(*ggufBlockScheme(kGgmlQ4_0), values, 32, 64, &error);
  REQUIRE(expected);
  Expected<std::vector<std::byte>> blocks =
      exportGgufBlocks(*expected, kGgmlQ4_0);
  REQUIRE(blocks.ok());
  std::span<const std::byte> written = file->data(k);
  CHECK(std::vector<std::byte>(written.begin(), written.end()) == *blocks);
  // A Q8_0 file says so.
  REQUIRE(writeCheckpointAsGguf(checkpoint, path.string(), kGgmlQ8_0, &*model)
              .ok());
  file = GgufFile::open(path.string());
  REQUIRE(file.ok());
  CHECK(file->header().find("general.file_type")->bits == 7);
}
