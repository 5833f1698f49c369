//===- KernelSpec.cpp - Kernel spec text form -----------------------------===//

#include "runtime/spec/KernelSpec.h"

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

} // namespace

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
  if (!takePrologueChain(text, prologues, error))
    return std::nullopt;
  std::vector<std::string_view> tokens = splitSpecTokens(text);
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
      std::optional<int64_t> size = parseWholeInt64(value);
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
