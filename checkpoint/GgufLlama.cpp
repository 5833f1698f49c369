//===- GgufLlama.cpp - A Hugging Face Llama as llama.cpp's GGUF model -----===//

#include "checkpoint/GgufLlama.h"

#include "checkpoint/ModelJson.h"

#include "runtime/core/Json.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>

namespace lowbit::checkpoint {

namespace {

using json::JsonValue;

Error invalid(std::string message) {
  return makeError(ErrorCode::InvalidArgument, std::move(message));
}

/// HF module names under a decoder layer and llama.cpp's, with the rope
/// permutation their rows take (convert_hf_to_gguf.py's LlamaModel and
/// gguf's tensor_mapping.py).
struct LayerTensor {
  std::string_view hf;
  std::string_view gguf;
  RopePermutation rope;
};
constexpr std::array<LayerTensor, 9> kLayerTensors = {{
    {"input_layernorm", "attn_norm", RopePermutation::None},
    {"self_attn.q_proj", "attn_q", RopePermutation::Query},
    {"self_attn.k_proj", "attn_k", RopePermutation::Key},
    {"self_attn.v_proj", "attn_v", RopePermutation::None},
    {"self_attn.o_proj", "attn_output", RopePermutation::None},
    {"post_attention_layernorm", "ffn_norm", RopePermutation::None},
    {"mlp.gate_proj", "ffn_gate", RopePermutation::None},
    {"mlp.up_proj", "ffn_up", RopePermutation::None},
    {"mlp.down_proj", "ffn_down", RopePermutation::None},
}};

/// gguf's TokenType.
constexpr uint32_t kTokenNormal = 1, kTokenControl = 3, kTokenUserDefined = 4,
                   kTokenUnused = 5;

/// A decimal block index without sign or leading zeros.
std::optional<int64_t> blockIndex(std::string_view text) {
  int64_t index = 0;
  // from_chars would take a sign.
  if (text.empty() || text[0] < '0' || text[0] > '9' ||
      (text.size() > 1 && text[0] == '0'))
    return std::nullopt;
  auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), index);
  if (ec != std::errc() || end != text.data() + text.size())
    return std::nullopt;
  return index;
}

/// config.json's bos/eos id: an integer, or the first of a list (Llama
/// 3.1 lists several eos ids; llama.cpp holds one).
Expected<std::optional<uint32_t>>
specialId(const ModelJson &config, std::string_view key, uint32_t vocabSize) {
  const JsonValue *value = config.root.get(key);
  if (value && value->isArray() && !value->items().empty())
    value = &value->items().front();
  if (!value || value->isNull() || (value->isArray() && value->items().empty()))
    return std::optional<uint32_t>();
  std::optional<int64_t> id = value->asInt();
  if (!id || *id < 0 || *id >= vocabSize)
    return config.bad("\"" + std::string(key) + "\" is not a token id below " +
                      std::to_string(vocabSize));
  return std::optional<uint32_t>(uint32_t(*id));
}

/// tokenizer.json's byte-level BPE as llama.cpp's `gpt2` vocabulary, as
/// convert_hf_to_gguf.py's get_vocab_base lays it out: `vocabSize` tokens
/// by id, an id no token has becomes "[PAD<id>]" (unused), added tokens
/// are control (special) or user-defined, the merges "a b".
Status addBpeVocabulary(const ModelJson &tokenizer, uint32_t vocabSize,
                        std::vector<std::pair<std::string, GgufValue>> &out) {
  const JsonValue *model = tokenizer.root.get("model");
  const JsonValue *type =
      model && model->isObject() ? model->get("type") : nullptr;
  std::string typeName = type && type->isString() ? type->text() : "?";
  if (typeName != "BPE")
    return tokenizer.bad("a " + typeName +
                         " tokenizer; lowbit converts byte-level BPE "
                         "(GPT-2, Llama 3) only: pass --no-tokenizer to write "
                         "the model without its vocabulary");
  const JsonValue *byteFallback = model->get("byte_fallback");
  if (byteFallback && byteFallback->asBool())
    return tokenizer.bad("a BPE tokenizer with byte_fallback (SentencePiece's, "
                         "llama.cpp's `llama` vocabulary); lowbit converts "
                         "byte-level BPE only: pass --no-tokenizer to write "
                         "the model without its vocabulary");
  const JsonValue *vocab = model->get("vocab");
  const JsonValue *merges = model->get("merges");
  if (!vocab || !vocab->isObject() || !merges || !merges->isArray())
    return tokenizer.bad("model.vocab (an object) or model.merges (an array) "
                         "is missing");
  std::vector<std::optional<std::string>> tokens(vocabSize);
  std::vector<uint32_t> types(vocabSize, kTokenNormal);
  auto place = [&](const std::string &text, const JsonValue &idValue,
                   uint32_t tokenType) -> Status {
    std::optional<int64_t> id = idValue.asInt();
    if (!id || *id < 0 || *id >= vocabSize)
      return tokenizer.bad("token '" + text + "' has an id outside 0.." +
                           std::to_string(vocabSize - 1) +
                           " (config.json's vocab_size)");
    tokens[size_t(*id)] = text;
    types[size_t(*id)] = tokenType;
    return Status::success();
  };
  for (const auto &[text, id] : vocab->members())
    if (Status status = place(text, id, kTokenNormal); !status)
      return status;
  if (const JsonValue *added = tokenizer.root.get("added_tokens")) {
    if (!added->isArray())
      return tokenizer.bad("added_tokens is not an array");
    for (const JsonValue &token : added->items()) {
      const JsonValue *content =
          token.isObject() ? token.get("content") : nullptr;
      const JsonValue *id = token.isObject() ? token.get("id") : nullptr;
      if (!content || !content->isString() || !id)
        return tokenizer.bad("an added token without content or id");
      const JsonValue *special = token.get("special");
      if (Status status = place(
              content->text(), *id,
              special && special->asBool() ? kTokenControl : kTokenUserDefined);
          !status)
        return status;
    }
  }
  std::vector<GgufValue> tokenValues, typeValues, mergeValues;
  for (uint32_t id = 0; id < vocabSize; ++id) {
    bool present = tokens[id].has_value();
    tokenValues.push_back(GgufValue::text(
        present ? *tokens[id] : "[PAD" + std::to_string(id) + "]"));
    GgufValue tokenType;
    tokenType.type = GgufValueType::I32;
    tokenType.bits = present ? types[id] : kTokenUnused;
    typeValues.push_back(tokenType);
  }
  for (const JsonValue &merge : merges->items()) {
    // "a b", or ["a", "b"] (tokenizers 0.20 and later).
    if (merge.isString()) {
      mergeValues.push_back(GgufValue::text(merge.text()));
      continue;
    }
    if (!merge.isArray() || merge.items().size() != 2 ||
        !merge.items()[0].isString() || !merge.items()[1].isString())
      return tokenizer.bad("a merge is neither \"a b\" nor [\"a\", \"b\"]");
    mergeValues.push_back(GgufValue::text(merge.items()[0].text() + " " +
                                          merge.items()[1].text()));
  }
  out.emplace_back("tokenizer.ggml.model", GgufValue::text("gpt2"));
  out.emplace_back(
      "tokenizer.ggml.tokens",
      GgufValue::array(GgufValueType::String, std::move(tokenValues)));
  out.emplace_back("tokenizer.ggml.token_type",
                   GgufValue::array(GgufValueType::I32, std::move(typeValues)));
  out.emplace_back(
      "tokenizer.ggml.merges",
      GgufValue::array(GgufValueType::String, std::move(mergeValues)));
  return Status::success();
}

} // namespace

Expected<GgufLlamaModel> readGgufLlamaModel(const std::string &directory,
                                            GgufTokenizer tokenizer) {
  Expected<std::optional<ModelJson>> read =
      readModelJson(directory, "config.json");
  if (!read)
    return std::move(read).takeError();
  if (!*read)
    return invalid("'" + directory +
                   "' has no config.json, which names the architecture");
  const ModelJson &config = **read;
  const JsonValue *architectures = config.root.get("architectures");
  std::string architecture = architectures && architectures->isArray() &&
                                     architectures->items().size() == 1 &&
                                     architectures->items()[0].isString()
                                 ? architectures->items()[0].text()
                                 : "";
  if (architecture != "LlamaForCausalLM" &&
      architecture != "MistralForCausalLM")
    return config.bad("\"architectures\" is not [\"LlamaForCausalLM\"] or "
                      "[\"MistralForCausalLM\"]: lowbit maps Llama's tensors "
                      "to llama.cpp's (write a container of the tensors "
                      "without --llama-cpp)");
  if (const JsonValue *scaling = config.root.get("rope_scaling");
      scaling && !scaling->isNull())
    return config.bad("\"rope_scaling\" is set; llama.cpp's converter writes "
                      "its frequencies as a tensor (rope_freqs), which lowbit "
                      "does not make");

  GgufLlamaModel model;
  Expected<uint32_t> blocks = config.count("num_hidden_layers");
  Expected<uint32_t> embedding = config.count("hidden_size");
  Expected<uint32_t> feedForward = config.count("intermediate_size");
  Expected<uint32_t> heads = config.count("num_attention_heads");
  Expected<uint32_t> vocabSize = config.count("vocab_size");
  Expected<std::optional<float>> epsilon = config.positive("rms_norm_eps");
  Expected<std::optional<float>> ropeTheta = config.positive("rope_theta");
  for (const Expected<uint32_t> *count :
       {&blocks, &embedding, &feedForward, &heads, &vocabSize})
    if (!*count)
      return count->error();
  if (!epsilon)
    return epsilon.error();
  if (!ropeTheta)
    return ropeTheta.error();
  Expected<uint32_t> kvHeads = config.count("num_key_value_heads", *heads);
  Expected<uint32_t> context = config.count("max_position_embeddings");
  if (!kvHeads)
    return std::move(kvHeads).takeError();
  if (!context)
    return std::move(context).takeError();
  if (!*epsilon)
    return config.bad("\"rms_norm_eps\" is missing");
  const JsonValue *headDimValue = config.root.get("head_dim");
  bool explicitHeadDim = headDimValue && !headDimValue->isNull();
  Expected<uint32_t> headDim = config.count("head_dim", *embedding / *heads);
  if (!headDim)
    return std::move(headDim).takeError();
  if (*heads % *kvHeads != 0 || (!explicitHeadDim && *embedding % *heads != 0))
    return config.bad("num_attention_heads " + std::to_string(*heads) +
                      " does not divide hidden_size " +
                      std::to_string(*embedding) +
                      " or is not a multiple of num_key_value_heads " +
                      std::to_string(*kvHeads));
  model.blockCount = *blocks;
  model.headCount = *heads;
  model.headCountKv = *kvHeads;

  // The keys convert_hf_to_gguf.py writes for a Llama, in its order.
  auto &out = model.metadata;
  out.emplace_back("general.architecture", GgufValue::text("llama"));
  out.emplace_back("general.quantized_by", GgufValue::text("lowbit"));
  out.emplace_back("llama.block_count", GgufValue::u32(*blocks));
  out.emplace_back("llama.context_length", GgufValue::u32(*context));
  out.emplace_back("llama.embedding_length", GgufValue::u32(*embedding));
  out.emplace_back("llama.feed_forward_length", GgufValue::u32(*feedForward));
  out.emplace_back("llama.attention.head_count", GgufValue::u32(*heads));
  out.emplace_back("llama.attention.head_count_kv", GgufValue::u32(*kvHeads));
  if (*ropeTheta)
    out.emplace_back("llama.rope.freq_base", GgufValue::f32(**ropeTheta));
  out.emplace_back("llama.attention.layer_norm_rms_epsilon",
                   GgufValue::f32(**epsilon));
  if (explicitHeadDim) {
    out.emplace_back("llama.attention.key_length", GgufValue::u32(*headDim));
    out.emplace_back("llama.attention.value_length", GgufValue::u32(*headDim));
  }
  out.emplace_back("llama.vocab_size", GgufValue::u32(*vocabSize));
  out.emplace_back("llama.rope.dimension_count", GgufValue::u32(*headDim));

  std::optional<ModelJson> tokenizerFile;
  if (tokenizer == GgufTokenizer::FromDirectory) {
    Expected<std::optional<ModelJson>> tokenizerRead =
        readModelJson(directory, "tokenizer.json");
    if (!tokenizerRead)
      return std::move(tokenizerRead).takeError();
    tokenizerFile = std::move(*tokenizerRead);
  }
  if (!tokenizerFile) {
    // llama.cpp's vocabulary-less model: vocab_size dummy tokens.
    out.emplace_back("tokenizer.ggml.model", GgufValue::text("no_vocab"));
    return model;
  }
  if (Status status = addBpeVocabulary(*tokenizerFile, *vocabSize, out);
      !status)
    return status.error();
  for (auto [key, ggufKey] :
       {std::pair{"bos_token_id", "tokenizer.ggml.bos_token_id"},
        std::pair{"eos_token_id", "tokenizer.ggml.eos_token_id"}}) {
    Expected<std::optional<uint32_t>> id = specialId(config, key, *vocabSize);
    if (!id)
      return std::move(id).takeError();
    if (*id)
      out.emplace_back(ggufKey, GgufValue::u32(**id));
  }
  return model;
}

Expected<std::optional<GgufTensorName>>
GgufLlamaModel::tensorName(std::string_view hfName) const {
  auto unknown = [&] {
    return invalid("tensor '" + std::string(hfName) +
                   "' has no llama.cpp name (a Llama has embed_tokens, "
                   "norm, lm_head and the layers' attention, MLP and norms): "
                   "llama.cpp refuses a file with tensors it does not use");
  };
  if (hfName == "model.embed_tokens.weight")
    return std::optional<GgufTensorName>(GgufTensorName{"token_embd.weight"});
  if (hfName == "model.norm.weight")
    return std::optional<GgufTensorName>(GgufTensorName{"output_norm.weight"});
  if (hfName == "lm_head.weight")
    return std::optional<GgufTensorName>(GgufTensorName{"output.weight"});
  if (hfName == "model.rotary_emb.inv_freq")
    return std::optional<GgufTensorName>();
  constexpr std::string_view kLayers = "model.layers.";
  if (!hfName.starts_with(kLayers))
    return unknown();
  std::string_view rest = hfName.substr(kLayers.size());
  size_t dot = rest.find('.');
  if (dot == std::string_view::npos)
    return unknown();
  std::optional<int64_t> block = blockIndex(rest.substr(0, dot));
  if (!block)
    return unknown();
  if (*block >= blockCount)
    return invalid("tensor '" + std::string(hfName) + "' is of block " +
                   std::to_string(*block) + ", past num_hidden_layers " +
                   std::to_string(blockCount));
  std::string_view module = rest.substr(dot + 1);
  if (module == "self_attn.rotary_emb.inv_freq")
    return std::optional<GgufTensorName>();
  for (const LayerTensor &entry : kLayerTensors) {
    for (std::string_view suffix : {".weight", ".bias"}) {
      if (module.size() != entry.hf.size() + suffix.size() ||
          !module.starts_with(entry.hf) || !module.ends_with(suffix))
        continue;
      return std::optional<GgufTensorName>(
          GgufTensorName{"blk." + std::to_string(*block) + "." +
                             std::string(entry.gguf) + std::string(suffix),
                         entry.rope});
    }
  }
  return unknown();
}

Expected<std::vector<std::byte>>
permuteRopeRows(std::span<const std::byte> data, int64_t rows, int64_t heads,
                const std::string &name) {
  if (heads < 1 || rows < 1 || rows % (2 * heads) != 0)
    return invalid("tensor '" + name + "' has " + std::to_string(rows) +
                   " rows, not a multiple of 2 x " + std::to_string(heads) +
                   " heads, which the rope permutation needs");
  size_t rowBytes = data.size() / size_t(rows);
  int64_t headRows = rows / heads, half = headRows / 2;
  std::vector<std::byte> out(data.size());
  for (int64_t head = 0; head < heads; ++head)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < half; ++j)
        std::memcpy(out.data() + size_t(head * headRows + 2 * j + i) * rowBytes,
                    data.data() +
                        size_t(head * headRows + i * half + j) * rowBytes,
                    rowBytes);
  return out;
}

} // namespace lowbit::checkpoint
