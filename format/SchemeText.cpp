//===- SchemeText.cpp - A scheme and spec tokens, as text -----------------===//

#include "format/SchemeText.h"

#include <algorithm>
#include <charconv>

namespace lowbit {
namespace {

bool fail(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
  return false;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(separator, start);
    if (end == std::string_view::npos)
      end = text.size();
    if (end > start)
      parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

std::optional<bool> parseBool(std::string_view text) {
  if (text == "true")
    return true;
  if (text == "false")
    return false;
  return std::nullopt;
}

/// `group(32;axis=1)`, `block(2x64)`, `per_channel(axis=0)`, `per_token`,
/// `per_tensor` (';' separates arguments inside the compact scheme form,
/// whose fields are separated by ','). Every number is read as int64 and
/// bounded before it is narrowed to ScaleSpec's int; an argument the
/// granularity does not take, or one given twice, is refused.
bool parseGranularityText(std::string_view text, ScaleSpec &scale,
                          std::string *error) {
  std::string_view name = text, args;
  size_t open = text.find('(');
  if (open != std::string_view::npos) {
    if (text.back() != ')')
      return fail(error, "bad granularity '" + std::string(text) + "'");
    name = text.substr(0, open);
    args = text.substr(open + 1, text.size() - open - 2);
  }
  std::optional<Granularity> granularity = parseGranularity(name);
  if (!granularity)
    return fail(error, "unknown granularity '" + std::string(name) + "'");
  scale.granularity = *granularity;
  bool takesAxis = *granularity == Granularity::PerChannel ||
                   *granularity == Granularity::Group;
  bool haveAxis = false, haveSize = false;
  for (std::string_view arg : split(args, ';')) {
    std::string argText(arg);
    auto once = [&](bool &seen) {
      if (!seen)
        return seen = true;
      return fail(error, "'" + argText + "' repeats an argument of '" +
                             std::string(text) + "'");
    };
    if (arg.substr(0, 5) == "axis=") {
      if (!takesAxis)
        return fail(error, "'" + argText + "': " + std::string(name) +
                               " takes no axis");
      std::optional<int64_t> value = parseWholeInt64(arg.substr(5));
      if (!value)
        return fail(error, "bad axis '" + argText + "'");
      std::optional<int> axis = axisFromInt64(*value, error);
      if (!axis || !once(haveAxis))
        return false;
      scale.axis = *axis;
    } else if (*granularity == Granularity::Block) {
      size_t x = arg.find('x');
      std::optional<int64_t> blockRows, blockCols;
      if (x != std::string_view::npos) {
        blockRows = parseWholeInt64(arg.substr(0, x));
        blockCols = parseWholeInt64(arg.substr(x + 1));
      }
      if (!blockRows || !blockCols)
        return fail(error, "bad block size '" + argText + "' (want RxC)");
      std::optional<int> height =
          scaleExtentFromInt64("block height", *blockRows, error);
      std::optional<int> width =
          height ? scaleExtentFromInt64("block width", *blockCols, error)
                 : std::nullopt;
      if (!width || !once(haveSize))
        return false;
      scale.blockRows = *height;
      scale.blockCols = *width;
    } else if (std::optional<int64_t> value = parseWholeInt64(arg);
               value && *granularity == Granularity::Group) {
      std::optional<int> size =
          scaleExtentFromInt64("group size", *value, error);
      if (!size || !once(haveSize))
        return false;
      scale.groupSize = *size;
    } else {
      return fail(error,
                  "bad " + std::string(name) + " argument '" + argText + "'");
    }
  }
  return true;
}

std::string granularityText(const ScaleSpec &scale) {
  std::string name(granularityName(scale.granularity));
  switch (scale.granularity) {
  case Granularity::PerTensor:
  case Granularity::PerToken:
    return name;
  case Granularity::PerChannel:
    return name + "(axis=" + std::to_string(scale.axis) + ")";
  case Granularity::Group:
    return name + "(" + std::to_string(scale.groupSize) +
           ";axis=" + std::to_string(scale.axis) + ")";
  case Granularity::Block:
    return name + "(" + std::to_string(scale.blockRows) + "x" +
           std::to_string(scale.blockCols) + ")";
  }
  return name;
}

} // namespace

std::vector<std::string_view> splitSpecTokens(std::string_view text) {
  std::vector<std::string_view> tokens;
  size_t start = std::string_view::npos;
  int depth = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    char c = i < text.size() ? text[i] : ' ';
    bool space = (c == ' ' || c == '\t' || c == '\n') && depth == 0;
    if (c == '(')
      ++depth;
    if (c == ')' && depth > 0)
      --depth;
    if (space) {
      if (start != std::string_view::npos)
        tokens.push_back(text.substr(start, i - start));
      start = std::string_view::npos;
    } else if (start == std::string_view::npos) {
      start = i;
    }
  }
  return tokens;
}

std::optional<int64_t> parseWholeInt64(std::string_view text) {
  int64_t value = 0;
  auto [end, code] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (code != std::errc() || end != text.data() + text.size())
    return std::nullopt;
  return value;
}

std::string printSchemeText(const Scheme &scheme) {
  if (const Scheme *named = findNamedScheme(scheme))
    return named->name;
  const ScaleSpec &scale = scheme.scale;
  return "scheme(format=" + scheme.element.name() +
         ",scale=" + granularityText(scale) +
         ",tail=" + (scale.allowTail ? "true" : "false") +
         ",type=" + std::string(scaleTypeName(scale.type)) +
         ",rule=" + std::string(scaleRuleName(scale.rule)) +
         ",mode=" + std::string(scaleModeName(scale.mode)) +
         ",zero_point=" + (scale.zeroPoint ? "true" : "false") +
         ",global=" + std::string(globalScaleName(scale.globalScale)) +
         ",layout=" + std::string(scaleLayoutName(scale.layout)) +
         ",packing=" + std::string(packingName(scheme.packing)) + ")";
}

std::optional<Scheme> parseSchemeText(std::string_view text,
                                      std::string *error) {
  if (text.substr(0, 7) != "scheme(")
    return lookupScheme(text, error);
  if (text.back() != ')') {
    fail(error, "missing ')' in '" + std::string(text) + "'");
    return std::nullopt;
  }
  std::string_view body = text.substr(7, text.size() - 8);
  Scheme scheme = namedSchemes().front();
  scheme.name.clear();
  scheme.scale = ScaleSpec{};
  scheme.packing = Packing::Byte;
  bool haveFormat = false;
  std::vector<std::string_view> seenKeys;
  for (std::string_view field : split(body, ',')) {
    size_t equals = field.find('=');
    if (equals == std::string_view::npos) {
      fail(error, "scheme field '" + std::string(field) + "' needs key=value");
      return std::nullopt;
    }
    std::string_view key = field.substr(0, equals);
    std::string_view value = field.substr(equals + 1);
    if (std::find(seenKeys.begin(), seenKeys.end(), key) != seenKeys.end()) {
      fail(error, "scheme field '" + std::string(field) + "' repeats key '" +
                      std::string(key) + "'");
      return std::nullopt;
    }
    seenKeys.push_back(key);
    auto bad = [&]() {
      fail(error, "bad value '" + std::string(value) + "' for scheme key '" +
                      std::string(key) + "'");
      return std::nullopt;
    };
    ScaleSpec &scale = scheme.scale;
    if (key == "format") {
      std::optional<Format> format = lookupFormat(value, error);
      if (!format)
        return std::nullopt;
      scheme.element = *format;
      haveFormat = true;
    } else if (key == "scale") {
      if (!parseGranularityText(value, scale, error))
        return std::nullopt;
    } else if (key == "tail" || key == "zero_point") {
      std::optional<bool> flag = parseBool(value);
      if (!flag)
        return bad();
      (key == "tail" ? scale.allowTail : scale.zeroPoint) = *flag;
    } else if (key == "type") {
      auto type = parseScaleType(value);
      if (!type)
        return bad();
      scale.type = *type;
    } else if (key == "rule") {
      auto rule = parseScaleRule(value);
      if (!rule)
        return bad();
      scale.rule = *rule;
    } else if (key == "mode") {
      auto mode = parseScaleMode(value);
      if (!mode)
        return bad();
      scale.mode = *mode;
    } else if (key == "global") {
      auto global = parseGlobalScale(value);
      if (!global)
        return bad();
      scale.globalScale = *global;
    } else if (key == "layout") {
      auto layout = parseScaleLayout(value);
      if (!layout)
        return bad();
      scale.layout = *layout;
    } else if (key == "packing") {
      auto packing = parsePacking(value);
      if (!packing)
        return bad();
      scheme.packing = *packing;
    } else {
      fail(error, "unknown scheme key '" + std::string(key) + "'");
      return std::nullopt;
    }
  }
  if (!haveFormat) {
    fail(error, "a scheme(...) needs format=");
    return std::nullopt;
  }
  if (!validateScheme(scheme, error))
    return std::nullopt;
  if (const Scheme *named = findNamedScheme(scheme))
    scheme.name = named->name;
  return scheme;
}

std::string_view valueTypeName(ValueType type) {
  switch (type) {
  case ValueType::F32:
    return "f32";
  case ValueType::F16:
    return "f16";
  case ValueType::BF16:
    return "bf16";
  }
  return "";
}

std::optional<ValueType> parseValueType(std::string_view name) {
  for (ValueType type : {ValueType::F32, ValueType::F16, ValueType::BF16})
    if (valueTypeName(type) == name)
      return type;
  return std::nullopt;
}

int64_t valueTypeBytes(ValueType type) {
  return type == ValueType::F32 ? 4 : 2;
}

} // namespace lowbit
