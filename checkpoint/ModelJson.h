//===- ModelJson.h - A JSON file of a model directory -----------*- C++ -*-===//
//
// config.json, tokenizer.json, quantize_config.json, hf_quant_config.json:
// read from the model directory, with typed field access whose errors name
// the file and the key. One reader for the config-driven importers
// (QuantConfig.cpp) and the GGUF exporter (GgufLlama.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_CHECKPOINT_MODELJSON_H
#define LOWBIT_CHECKPOINT_MODELJSON_H

#include "lowbit/Expected.h"
#include "runtime/core/Json.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lowbit::checkpoint {

/// A parsed JSON object file; every accessor's error names `name`.
struct ModelJson {
  std::string name;
  json::JsonValue root;

  /// An InvalidArgument error "NAME: what".
  Error bad(const std::string &what) const;

  /// `object`'s member `key`, or null when absent or `object` is no object.
  const json::JsonValue *member(const json::JsonValue &object,
                                std::string_view key) const;
  /// A string member, `fallback` when absent (or null).
  Expected<std::string> text(const json::JsonValue &object,
                             std::string_view key,
                             std::string_view fallback) const;
  /// An integer member, `fallback` when absent (or null).
  Expected<int64_t> integer(const json::JsonValue &object, std::string_view key,
                            int64_t fallback) const;
  /// A boolean member, `fallback` when absent (or null).
  Expected<bool> flag(const json::JsonValue &object, std::string_view key,
                      bool fallback) const;
  /// A top-level positive integer below 2^32 (the u32 llama.cpp reads),
  /// or `fallback` when the key is absent and a fallback is given.
  Expected<uint32_t> count(std::string_view key,
                           std::optional<uint32_t> fallback = {}) const;
  /// A top-level finite positive number as f32, or nullopt when absent.
  Expected<std::optional<float>> positive(std::string_view key) const;
};

/// The file `name` of `directory`, parsed, or nullopt when it is absent.
/// A file that is not a JSON object is an error naming it.
Expected<std::optional<ModelJson>> readModelJson(const std::string &directory,
                                                 const std::string &name);

} // namespace lowbit::checkpoint

#endif // LOWBIT_CHECKPOINT_MODELJSON_H
