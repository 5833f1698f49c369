//===- ModelJson.cpp - A JSON file of a model directory -------------------===//

#include "checkpoint/ModelJson.h"

#include "runtime/core/AtomicFile.h"

#include <cmath>
#include <filesystem>
#include <limits>

namespace lowbit::checkpoint {

using json::JsonValue;

Error ModelJson::bad(const std::string &what) const {
  return makeError(ErrorCode::InvalidArgument, name + ": " + what);
}

const JsonValue *ModelJson::member(const JsonValue &object,
                                   std::string_view key) const {
  return object.isObject() ? object.get(key) : nullptr;
}

Expected<std::string> ModelJson::text(const JsonValue &object,
                                      std::string_view key,
                                      std::string_view fallback) const {
  const JsonValue *value = member(object, key);
  if (!value || value->isNull())
    return std::string(fallback);
  if (!value->isString())
    return bad("\"" + std::string(key) + "\" is not a string");
  return value->text();
}

Expected<int64_t> ModelJson::integer(const JsonValue &object,
                                     std::string_view key,
                                     int64_t fallback) const {
  const JsonValue *value = member(object, key);
  if (!value || value->isNull())
    return fallback;
  std::optional<int64_t> number = value->asInt();
  if (!number)
    return bad("\"" + std::string(key) + "\" is not an integer");
  return *number;
}

Expected<bool> ModelJson::flag(const JsonValue &object, std::string_view key,
                               bool fallback) const {
  const JsonValue *value = member(object, key);
  if (!value || value->isNull())
    return fallback;
  if (value->kind() != JsonValue::Kind::Bool)
    return bad("\"" + std::string(key) + "\" is not true or false");
  return value->asBool();
}

Expected<uint32_t> ModelJson::count(std::string_view key,
                                    std::optional<uint32_t> fallback) const {
  const JsonValue *value = root.get(key);
  if (!value || value->isNull()) {
    if (fallback)
      return *fallback;
    return bad("\"" + std::string(key) + "\" is missing");
  }
  std::optional<int64_t> number = value->asInt();
  if (!number || *number < 1 || *number > std::numeric_limits<uint32_t>::max())
    return bad("\"" + std::string(key) + "\" is not a positive 32-bit count");
  return uint32_t(*number);
}

Expected<std::optional<float>> ModelJson::positive(std::string_view key) const {
  const JsonValue *value = root.get(key);
  if (!value || value->isNull())
    return std::optional<float>();
  std::optional<double> number = value->asDouble();
  if (!number || !std::isfinite(float(*number)) || float(*number) <= 0)
    return bad("\"" + std::string(key) + "\" is not a positive number");
  return std::optional<float>(float(*number));
}

Expected<std::optional<ModelJson>> readModelJson(const std::string &directory,
                                                 const std::string &name) {
  std::filesystem::path path = std::filesystem::path(directory) / name;
  std::error_code ignored;
  if (!std::filesystem::exists(path, ignored))
    return std::optional<ModelJson>();
  std::string text, error;
  if (!runtime::readFile(path.string(), text, &error))
    return makeError(ErrorCode::Io, error);
  std::optional<JsonValue> root = json::parseJson(text, &error);
  if (!root || !root->isObject())
    return makeError(ErrorCode::InvalidArgument,
                     name + ": " + (root ? "not a JSON object" : error));
  return std::optional<ModelJson>(ModelJson{name, std::move(*root)});
}

} // namespace lowbit::checkpoint
