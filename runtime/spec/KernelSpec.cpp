//===- KernelSpec.cpp - Kernel spec text form -----------------------------===//

#include "runtime/spec/KernelSpec.h"

#include "format/PrologueLimits.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <vector>

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

/// Splits on spaces and tabs; parentheses keep `scheme(...)` one token.
std::vector<std::string_view> tokenize(std::string_view text) {
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

std::optional<int64_t> parseInt(std::string_view text) {
  int64_t value = 0;
  auto [end, code] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (code != std::errc() || end != text.data() + text.size())
    return std::nullopt;
  return value;
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
      std::optional<int64_t> value = parseInt(arg.substr(5));
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
        blockRows = parseInt(arg.substr(0, x));
        blockCols = parseInt(arg.substr(x + 1));
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
    } else if (std::optional<int64_t> value = parseInt(arg);
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

/// Splits `text` at top-level '|': every part but the last is one prologue
/// token; `text` becomes the last part (the kernel op).
bool takePrologues(std::string_view &text, std::vector<Prologue> &prologues,
                   std::string *error) {
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '(')
      ++depth;
    if (text[i] == ')' && depth > 0)
      --depth;
    if (text[i] != '|' || depth != 0)
      continue;
    std::vector<std::string_view> tokens =
        tokenize(text.substr(start, i - start));
    if (tokens.size() != 1)
      return fail(error, tokens.empty()
                             ? "an empty prologue before '|' at column " +
                                   std::to_string(i + 1)
                             : "a prologue is one token, got '" +
                                   std::string(tokens[1]) + "' after '" +
                                   std::string(tokens[0]) + "'");
    // Refused before parsing the rest: a hostile spec may hold thousands.
    if (prologues.size() == kMaxPrologues)
      return fail(error, "more than " + std::to_string(kMaxPrologues) +
                             " prologues in the chain (the limit)");
    std::optional<Prologue> prologue = parsePrologue(tokens[0], error);
    if (!prologue)
      return false;
    prologues.push_back(std::move(*prologue));
    start = i + 1;
  }
  text = text.substr(start);
  return true;
}

} // namespace

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

bool validateKernelSpec(const KernelSpec &spec, std::string *error) {
  if (!spec.prologues.empty() && spec.op != KernelOp::Quantize)
    return fail(error, "prologues ('" + printPrologue(spec.prologues[0]) +
                           "') go only in front of quantize");
  if (!validatePrologueChain(spec.prologues, spec.cols, error))
    return false;
  if (spec.globalSource == GlobalSource::Given &&
      (!spec.hasGlobal() || spec.isStatic() || spec.op != KernelOp::Quantize))
    return fail(error, "global=given is for quantizing with a dynamic scheme "
                       "that has a global scale");
  if ((spec.rows == kDynamic) != (spec.cols == kDynamic))
    return fail(error, "rows and cols are both static or both dynamic");
  if (spec.rows != kDynamic && (spec.rows <= 0 || spec.cols <= 0))
    return fail(error, "rows and cols must be positive");
  return validateSchemeForShape(spec.scheme, spec.rows, spec.cols, error);
}

std::optional<KernelSpec> parseKernelSpec(std::string_view text,
                                          std::string *error) {
  std::vector<Prologue> prologues;
  if (!takePrologues(text, prologues, error))
    return std::nullopt;
  std::vector<std::string_view> tokens = tokenize(text);
  if (tokens.size() < 2) {
    fail(error, "a kernel spec is 'quantize|dequantize SCHEME [key=value...]'");
    return std::nullopt;
  }
  KernelSpec spec{};
  if (tokens[0] == "quantize")
    spec.op = KernelOp::Quantize;
  else if (tokens[0] == "dequantize")
    spec.op = KernelOp::Dequantize;
  else {
    fail(error, "unknown op '" + std::string(tokens[0]) +
                    "' (want quantize or dequantize)");
    return std::nullopt;
  }
  std::optional<Scheme> scheme = parseSchemeText(tokens[1], error);
  if (!scheme)
    return std::nullopt;
  spec.scheme = *scheme;
  // A compact scheme may spell its mode out; scale= must then agree.
  bool schemeNamesMode = tokens[1].starts_with("scheme(") &&
                         (tokens[1].find(",mode=") != std::string_view::npos ||
                          tokens[1].find("(mode=") != std::string_view::npos);
  // Each key once: a repeat (even with the same value) and `dynamic` beside
  // rows=/cols= contradict, and the spec text is a cache key that must have
  // one spelling.
  std::map<std::string, std::string, std::less<>> seen;
  auto firstTime = [&](std::string_view key, std::string_view token) {
    auto [it, inserted] = seen.emplace(std::string(key), std::string(token));
    if (!inserted)
      fail(error, "'" + std::string(token) + "' contradicts '" + it->second +
                      "': each key is given once");
    return inserted;
  };
  bool haveRows = false, haveCols = false;
  std::optional<std::string> globalToken, scaleToken;
  for (size_t i = 2; i < tokens.size(); ++i) {
    std::string_view token = tokens[i];
    if (token == "dynamic") {
      // rows, cols and dynamic are one setting: the shape.
      if (!firstTime("shape", token))
        return std::nullopt;
      spec.rows = spec.cols = kDynamic;
      continue;
    }
    size_t equals = token.find('=');
    if (equals == std::string_view::npos) {
      fail(error, "expected key=value, got '" + std::string(token) + "'");
      return std::nullopt;
    }
    std::string_view key = token.substr(0, equals);
    std::string_view value = token.substr(equals + 1);
    std::string valueText(value);
    if (!firstTime(key, token))
      return std::nullopt;
    const char *dtypeKey = spec.op == KernelOp::Quantize ? "from" : "to";
    if (key == dtypeKey) {
      std::optional<ValueType> type = parseValueType(value);
      if (!type) {
        fail(error, "bad dtype '" + valueText + "' (want f32, f16 or bf16)");
        return std::nullopt;
      }
      spec.valueType = *type;
    } else if (key == "scale") {
      std::optional<ScaleMode> mode = parseScaleMode(value);
      if (!mode) {
        fail(error,
             "bad scale mode '" + valueText + "' (want static or dynamic)");
        return std::nullopt;
      }
      if (schemeNamesMode && *mode != scheme->scale.mode) {
        fail(error, "'" + std::string(token) +
                        "' contradicts the scheme's "
                        "mode=" +
                        std::string(scaleModeName(scheme->scale.mode)));
        return std::nullopt;
      }
      spec.scheme.scale.mode = *mode;
      scaleToken = std::string(token);
    } else if (key == "global") {
      if (value != "computed" && value != "given") {
        fail(error, "bad global '" + valueText + "' (want computed or given)");
        return std::nullopt;
      }
      spec.globalSource =
          value == "given" ? GlobalSource::Given : GlobalSource::Computed;
      globalToken = std::string(token);
    } else if (key == "rows" || key == "cols") {
      std::optional<int64_t> size = parseInt(value);
      if (!size || *size <= 0) {
        fail(error, "bad " + std::string(key) + " '" + valueText +
                        "' (want a positive integer)");
        return std::nullopt;
      }
      if (*size > kMaxDimension) {
        fail(error, "'" + std::string(token) +
                        "' is larger than the maximum dimension 2^40 (" +
                        std::to_string(kMaxDimension) + ")");
        return std::nullopt;
      }
      if (seen.count("shape")) {
        fail(error, "'" + std::string(token) + "' contradicts '" +
                        seen["shape"] + "'");
        return std::nullopt;
      }
      (key == "rows" ? spec.rows : spec.cols) = *size;
      (key == "rows" ? haveRows : haveCols) = true;
    } else if (key == "from" || key == "to") {
      // The other op's dtype key: a quantize reads its values, a
      // dequantize writes them.
      fail(error,
           "unknown key '" + std::string(key) + "': " +
               (spec.op == KernelOp::Quantize ? "quantize" : "dequantize") +
               std::string(" names its value type with ") + dtypeKey + "= (" +
               dtypeKey + "=" + valueText + ")");
      return std::nullopt;
    } else {
      fail(error, "unknown key '" + std::string(key) + "'");
      return std::nullopt;
    }
  }
  if ((haveRows || haveCols) && seen.count("shape")) {
    fail(error,
         "'" + seen[haveRows ? "rows" : "cols"] + "' contradicts 'dynamic'");
    return std::nullopt;
  }
  if (haveRows != haveCols) {
    fail(error, haveRows ? "rows= needs cols=" : "cols= needs rows=");
    return std::nullopt;
  }
  // global= says where a dynamic scheme's second-level scale comes from; a
  // static scheme takes it as an argument and a scheme without one has none.
  if (globalToken &&
      (spec.op != KernelOp::Quantize || !spec.hasGlobal() || spec.isStatic())) {
    fail(error, "'" + *globalToken + "' applies only to quantizing with a " +
                    "dynamic scheme that has a global scale" +
                    (scaleToken && spec.isStatic()
                         ? " (the spec says '" + *scaleToken + "')"
                         : std::string()));
    return std::nullopt;
  }
  // A mode override can make a named scheme unnamed (e.g. static mxfp4).
  if (const Scheme *named = findNamedScheme(spec.scheme))
    spec.scheme.name = named->name;
  else
    spec.scheme.name.clear();
  spec.prologues = std::move(prologues);
  if (!validateKernelSpec(spec, error))
    return std::nullopt;
  return spec;
}

std::string printKernelSpec(const KernelSpec &spec) {
  // The mode is printed separately so that static variants of named
  // schemes keep their short name.
  Scheme dynamicScheme = spec.scheme;
  dynamicScheme.scale.mode = ScaleMode::Dynamic;
  Scheme printed = findNamedScheme(dynamicScheme) ? dynamicScheme : spec.scheme;
  std::string text;
  for (const Prologue &prologue : spec.prologues)
    text += printPrologue(prologue) + " | ";
  text += spec.op == KernelOp::Quantize ? "quantize " : "dequantize ";
  text += printSchemeText(printed);
  text += spec.op == KernelOp::Quantize ? " from=" : " to=";
  text += valueTypeName(spec.valueType);
  text += " scale=" + std::string(scaleModeName(spec.scheme.scale.mode));
  if (spec.op == KernelOp::Quantize && spec.hasGlobal() && !spec.isStatic())
    text += spec.globalSource == GlobalSource::Given ? " global=given"
                                                     : " global=computed";
  if (spec.rows == kDynamic)
    text += " dynamic";
  else
    text += " rows=" + std::to_string(spec.rows) +
            " cols=" + std::to_string(spec.cols);
  return text;
}

} // namespace lowbit
