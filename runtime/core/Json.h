//===- Json.h - The small JSON subset lowbit's files use --------*- C++ -*-===//
//
// The AOT bundle manifest and a quantized directory's meta.json are JSON so
// that people, Python (the GPU check's report, the lit tests) and lowbit's
// tools read the same files. The GPU runner must build with a
// plain compiler on the GPU machine, with no third-party library, so this
// is a minimal value type, writer and strict reader: objects keep their
// key order (the manifest reads top to bottom), numbers are kept as their
// text so 64-bit sizes round-trip exactly, a key given twice is refused
// (which value a reader takes would be a guess), and a malformed file is an
// error naming the byte offset, never a guess.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_CORE_JSON_H
#define LOWBIT_RUNTIME_CORE_JSON_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lowbit::json {

class JsonValue {
public:
  enum class Kind : uint8_t { Null, Bool, Number, String, Array, Object };

  JsonValue() = default;
  static JsonValue boolean(bool value);
  static JsonValue number(int64_t value);
  static JsonValue number(double value);
  /// A number from its (already valid) JSON text.
  static JsonValue numberText(std::string text);
  static JsonValue string(std::string value);
  static JsonValue array();
  static JsonValue object();

  Kind kind() const { return valueKind; }
  bool isNull() const { return valueKind == Kind::Null; }
  bool isObject() const { return valueKind == Kind::Object; }
  bool isArray() const { return valueKind == Kind::Array; }
  bool isString() const { return valueKind == Kind::String; }
  bool isNumber() const { return valueKind == Kind::Number; }

  /// Array: appends. Object: sets (replacing an existing key).
  JsonValue &push(JsonValue value);
  JsonValue &set(std::string key, JsonValue value);

  /// Object member or nullptr.
  const JsonValue *get(std::string_view key) const;
  const std::vector<JsonValue> &items() const { return elements; }
  const std::vector<std::pair<std::string, JsonValue>> &members() const {
    return fields;
  }
  const std::string &text() const { return scalar; } ///< string or number
  bool asBool() const { return scalar == "true"; }
  std::optional<int64_t> asInt() const;
  std::optional<double> asDouble() const;

  /// Two-space indented text; short arrays of scalars stay on one line.
  std::string serialize() const;

private:
  void write(std::string &out, int indent) const;
  Kind valueKind = Kind::Null;
  std::string scalar;
  std::vector<JsonValue> elements;
  std::vector<std::pair<std::string, JsonValue>> fields;
};

/// Parses a whole document; trailing garbage is an error.
std::optional<JsonValue> parseJson(std::string_view text, std::string *error);

} // namespace lowbit::json

#endif // LOWBIT_RUNTIME_CORE_JSON_H
