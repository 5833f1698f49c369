//===- Json.cpp - The small JSON subset lowbit's files use ----------------===//

#include "runtime/core/Json.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>

namespace lowbit::json {

JsonValue JsonValue::boolean(bool value) {
  JsonValue v;
  v.valueKind = Kind::Bool;
  v.scalar = value ? "true" : "false";
  return v;
}
JsonValue JsonValue::number(int64_t value) {
  JsonValue v;
  v.valueKind = Kind::Number;
  v.scalar = std::to_string(value);
  return v;
}
JsonValue JsonValue::number(double value) {
  JsonValue v;
  v.valueKind = Kind::Number;
  char buffer[64];
  // %.17g round-trips every double; JSON has no inf/NaN, so those are null.
  if (value != value || value > 1.7e308 || value < -1.7e308)
    return JsonValue();
  std::snprintf(buffer, sizeof(buffer), "%.17g", value);
  v.scalar = buffer;
  return v;
}
JsonValue JsonValue::numberText(std::string text) {
  JsonValue v;
  v.valueKind = Kind::Number;
  v.scalar = std::move(text);
  return v;
}
JsonValue JsonValue::string(std::string value) {
  JsonValue v;
  v.valueKind = Kind::String;
  v.scalar = std::move(value);
  return v;
}
JsonValue JsonValue::array() {
  JsonValue v;
  v.valueKind = Kind::Array;
  return v;
}
JsonValue JsonValue::object() {
  JsonValue v;
  v.valueKind = Kind::Object;
  return v;
}

JsonValue &JsonValue::push(JsonValue value) {
  elements.push_back(std::move(value));
  return elements.back();
}

JsonValue &JsonValue::set(std::string key, JsonValue value) {
  for (auto &[name, member] : fields)
    if (name == key)
      return member = std::move(value);
  fields.emplace_back(std::move(key), std::move(value));
  return fields.back().second;
}

const JsonValue *JsonValue::get(std::string_view key) const {
  for (const auto &[name, member] : fields)
    if (name == key)
      return &member;
  return nullptr;
}

std::optional<int64_t> JsonValue::asInt() const {
  if (valueKind != Kind::Number)
    return std::nullopt;
  int64_t value = 0;
  auto [end, ec] =
      std::from_chars(scalar.data(), scalar.data() + scalar.size(), value);
  if (ec != std::errc() || end != scalar.data() + scalar.size())
    return std::nullopt;
  return value;
}

std::optional<double> JsonValue::asDouble() const {
  if (valueKind != Kind::Number)
    return std::nullopt;
  return std::strtod(scalar.c_str(), nullptr);
}

namespace {

void writeString(std::string &out, const std::string &text) {
  out += '"';
  for (unsigned char c : text) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\r':
      out += "\\r";
      break;
    default:
      if (c < 0x20) {
        char buffer[8];
        std::snprintf(buffer, sizeof(buffer), "\\u%04x", c);
        out += buffer;
      } else {
        out += char(c);
      }
    }
  }
  out += '"';
}

bool isScalar(const JsonValue &value) {
  return !value.isArray() && !value.isObject();
}

} // namespace

void JsonValue::write(std::string &out, int indent) const {
  std::string pad(size_t(indent + 2), ' ');
  switch (valueKind) {
  case Kind::Null:
    out += "null";
    return;
  case Kind::Bool:
  case Kind::Number:
    out += scalar;
    return;
  case Kind::String:
    writeString(out, scalar);
    return;
  case Kind::Array: {
    bool flat = true;
    for (const JsonValue &element : elements)
      flat = flat && isScalar(element);
    if (elements.empty() || (flat && elements.size() <= 16)) {
      out += '[';
      for (size_t i = 0; i < elements.size(); ++i) {
        if (i)
          out += ", ";
        elements[i].write(out, indent);
      }
      out += ']';
      return;
    }
    out += "[\n";
    for (size_t i = 0; i < elements.size(); ++i) {
      out += pad;
      elements[i].write(out, indent + 2);
      out += i + 1 < elements.size() ? ",\n" : "\n";
    }
    out += std::string(size_t(indent), ' ') + ']';
    return;
  }
  case Kind::Object:
    if (fields.empty()) {
      out += "{}";
      return;
    }
    out += "{\n";
    for (size_t i = 0; i < fields.size(); ++i) {
      out += pad;
      writeString(out, fields[i].first);
      out += ": ";
      fields[i].second.write(out, indent + 2);
      out += i + 1 < fields.size() ? ",\n" : "\n";
    }
    out += std::string(size_t(indent), ' ') + '}';
    return;
  }
}

std::string JsonValue::serialize() const {
  std::string out;
  write(out, 0);
  out += '\n';
  return out;
}

namespace {

class Parser {
public:
  explicit Parser(std::string_view text) : text(text) {}

  std::optional<JsonValue> document(std::string *error) {
    std::optional<JsonValue> value = parseValue(0);
    skipSpace();
    if (value && position != text.size())
      fail("trailing characters");
    if (!message.empty()) {
      if (error)
        *error = "JSON: " + message + " at byte " + std::to_string(position);
      return std::nullopt;
    }
    return value;
  }

private:
  void fail(std::string what) {
    if (message.empty())
      message = std::move(what);
  }
  void skipSpace() {
    while (position < text.size() &&
           (text[position] == ' ' || text[position] == '\n' ||
            text[position] == '\t' || text[position] == '\r'))
      ++position;
  }
  bool consume(char c) {
    skipSpace();
    if (position < text.size() && text[position] == c) {
      ++position;
      return true;
    }
    return false;
  }
  bool literal(std::string_view word) {
    if (text.substr(position, word.size()) != word)
      return false;
    position += word.size();
    return true;
  }

  std::optional<std::string> parseString() {
    if (!consume('"')) {
      fail("expected a string");
      return std::nullopt;
    }
    std::string out;
    while (position < text.size() && text[position] != '"') {
      char c = text[position++];
      // RFC 8259: control characters appear in a string only escaped (a raw
      // one, e.g. ESC, would otherwise reach a message on a terminal).
      if (static_cast<unsigned char>(c) < 0x20) {
        --position;
        fail("control character in a string");
        return std::nullopt;
      }
      if (c != '\\') {
        out += c;
        continue;
      }
      if (position >= text.size())
        break;
      char escape = text[position++];
      switch (escape) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'u': {
        // Manifests are ASCII; only \u00XX (what the writer emits) is read.
        unsigned code = 0;
        auto digits = text.substr(position, 4);
        auto [end, ec] = std::from_chars(
            digits.data(), digits.data() + digits.size(), code, 16);
        if (ec != std::errc() || end != digits.data() + 4 || code > 0x7f) {
          fail("unsupported \\u escape");
          return std::nullopt;
        }
        out += char(code);
        position += 4;
        break;
      }
      default:
        out += escape; // \" \\ \/
      }
    }
    if (position >= text.size()) {
      fail("unterminated string");
      return std::nullopt;
    }
    ++position;
    return out;
  }

  std::optional<JsonValue> parseValue(int depth) {
    if (depth > 64) {
      fail("nesting too deep");
      return std::nullopt;
    }
    skipSpace();
    if (position >= text.size()) {
      fail("unexpected end");
      return std::nullopt;
    }
    char c = text[position];
    if (c == '{') {
      ++position;
      JsonValue object = JsonValue::object();
      if (consume('}'))
        return object;
      do {
        size_t keyPosition = position;
        std::optional<std::string> key = parseString();
        if (!key)
          return std::nullopt;
        // Two values for one key: which one a reader takes is a guess.
        if (object.get(*key)) {
          position = keyPosition;
          fail("duplicate key \"" + *key + "\"");
          return std::nullopt;
        }
        if (!consume(':')) {
          fail("expected ':'");
          return std::nullopt;
        }
        std::optional<JsonValue> member = parseValue(depth + 1);
        if (!member)
          return std::nullopt;
        object.set(std::move(*key), std::move(*member));
      } while (consume(','));
      if (!consume('}')) {
        fail("expected ',' or '}'");
        return std::nullopt;
      }
      return object;
    }
    if (c == '[') {
      ++position;
      JsonValue array = JsonValue::array();
      if (consume(']'))
        return array;
      do {
        std::optional<JsonValue> element = parseValue(depth + 1);
        if (!element)
          return std::nullopt;
        array.push(std::move(*element));
      } while (consume(','));
      if (!consume(']')) {
        fail("expected ',' or ']'");
        return std::nullopt;
      }
      return array;
    }
    if (c == '"') {
      std::optional<std::string> s = parseString();
      if (!s)
        return std::nullopt;
      return JsonValue::string(std::move(*s));
    }
    if (literal("true"))
      return JsonValue::boolean(true);
    if (literal("false"))
      return JsonValue::boolean(false);
    if (literal("null"))
      return JsonValue();
    size_t start = position;
    while (position < text.size() &&
           std::string_view("+-0123456789.eE").find(text[position]) !=
               std::string_view::npos)
      ++position;
    if (start == position) {
      fail("unexpected character");
      return std::nullopt;
    }
    std::string number(text.substr(start, position - start));
    char *end = nullptr;
    std::strtod(number.c_str(), &end);
    if (end != number.c_str() + number.size()) {
      fail("bad number '" + number + "'");
      return std::nullopt;
    }
    // Keep the number's own text (exact 64-bit integers).
    return JsonValue::numberText(std::move(number));
  }

  std::string_view text;
  size_t position = 0;
  std::string message;
};

} // namespace

std::optional<JsonValue> parseJson(std::string_view text, std::string *error) {
  return Parser(text).document(error);
}

} // namespace lowbit::json
