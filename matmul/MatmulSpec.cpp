//===- MatmulSpec.cpp - A quantized-weight matmul kernel, as text ---------===//

#include "matmul/MatmulSpec.h"

#include "format/SchemeText.h"

#include <map>
#include <vector>

namespace lowbit::matmul {

namespace {

bool fail(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
  return false;
}

/// The extent along K of one scale unit, when the scheme has one (groups
/// along K, blocks); 0 when a scale covers the whole of K.
int64_t scaleExtentAlongK(const ScaleSpec &scale) {
  if (scale.granularity == Granularity::Group)
    return scale.groupSize;
  if (scale.granularity == Granularity::Block)
    return scale.blockCols;
  return 0;
}

} // namespace

std::string weightSchemeRefusal(const Scheme &scheme) {
  std::string invalid;
  if (!validateScheme(scheme, &invalid))
    return invalid;
  const ScaleSpec &scale = scheme.scale;
  if (scale.granularity == Granularity::PerChannel && scale.axis == 1)
    return "per_channel(axis=1) gives one scale per input column k; weight "
           "scales run along K (per_tensor, per_channel(axis=0) or "
           "per_token for one per output channel, group(G;axis=1), block)";
  if (scale.granularity == Granularity::Group && scale.axis == 0)
    return "group(" + std::to_string(scale.groupSize) +
           ";axis=0) groups output channels (rows of W); weight groups run "
           "along K: group(G;axis=1)";
  return "";
}

bool validateWeightShape(const Scheme &scheme, int64_t n, int64_t k,
                         std::string *error) {
  if (std::string refusal = weightSchemeRefusal(scheme); !refusal.empty())
    return fail(error, refusal);
  int64_t extent = scaleExtentAlongK(scheme.scale);
  if (extent > 0 && k != kDynamic && k % extent != 0 &&
      !scheme.scale.allowTail)
    return fail(error, "k=" + std::to_string(k) + ": the last " +
                           (scheme.scale.granularity == Granularity::Group
                                ? "group"
                                : "block") +
                           " of " + std::to_string(extent) +
                           " along K straddles its end and the scheme "
                           "allows no tail (tail=false)");
  std::string shapeError;
  if (!validateSchemeForShape(scheme, n, k, &shapeError))
    return fail(error, "weights [n=" + std::to_string(n) +
                           ", k=" + std::to_string(k) + "]: " + shapeError);
  return true;
}

std::optional<MatmulSpec> parseMatmulSpec(std::string_view text,
                                          std::string *error) {
  std::vector<std::string_view> tokens = splitSpecTokens(text);
  if (tokens.empty() || tokens[0] != "matmul") {
    fail(error, "a matmul spec starts with 'matmul', got '" +
                    std::string(tokens.empty() ? "" : tokens[0]) + "'");
    return std::nullopt;
  }
  if (tokens.size() < 2) {
    fail(error, "a matmul spec is 'matmul SCHEME [from=] [to=] [bias] "
                "[n=N k=K | dynamic]'");
    return std::nullopt;
  }
  MatmulSpec spec;
  std::string schemeError;
  std::optional<Scheme> scheme = parseSchemeText(tokens[1], &schemeError);
  if (!scheme) {
    fail(error, "'" + std::string(tokens[1]) + "': " + schemeError);
    return std::nullopt;
  }
  if (std::string refusal = weightSchemeRefusal(*scheme); !refusal.empty()) {
    fail(error, "'" + std::string(tokens[1]) +
                    "' is not a weight scheme: " + refusal);
    return std::nullopt;
  }
  spec.scheme = *scheme;
  spec.scheme.scale.mode = ScaleMode::Dynamic;
  if (const Scheme *named = findNamedScheme(spec.scheme))
    spec.scheme.name = named->name;
  else
    spec.scheme.name.clear();

  // Each setting once: a repeat (even with the same value) contradicts, and
  // n=, k= and dynamic are one setting, the shape.
  std::map<std::string, std::string, std::less<>> seen;
  auto firstTime = [&](std::string_view key, std::string_view token) {
    auto [it, inserted] = seen.emplace(std::string(key), std::string(token));
    if (!inserted)
      fail(error, "'" + std::string(token) + "' contradicts '" + it->second +
                      "': each key is given once");
    return inserted;
  };
  bool haveTo = false;
  for (size_t index = 2; index < tokens.size(); ++index) {
    std::string token(tokens[index]);
    if (token == "bias") {
      if (!firstTime("bias", token))
        return std::nullopt;
      spec.bias = true;
      continue;
    }
    if (token == "dynamic") {
      if (!firstTime("dynamic", token))
        return std::nullopt;
      if (auto shape = seen.find("shape"); shape != seen.end()) {
        fail(error, "'dynamic' contradicts '" + shape->second + "'");
        return std::nullopt;
      }
      seen.emplace("shape", token);
      continue;
    }
    size_t equals = token.find('=');
    if (equals == std::string::npos) {
      fail(error, "'" + token + "' is not key=value, 'bias' or 'dynamic'");
      return std::nullopt;
    }
    std::string key = token.substr(0, equals);
    std::string value = token.substr(equals + 1);
    if (key == "from" || key == "to") {
      std::optional<ValueType> dtype = parseValueType(value);
      if (!dtype) {
        fail(error, "'" + token + "': bad dtype (want f32, f16 or bf16)");
        return std::nullopt;
      }
      if (!firstTime(key, token))
        return std::nullopt;
      (key == "from" ? spec.input : spec.output) = *dtype;
      haveTo |= key == "to";
    } else if (key == "n" || key == "k") {
      std::optional<int64_t> size = parseWholeInt64(value);
      if (!size || *size <= 0 || *size > kMaxDimension) {
        fail(error, "'" + token + "': " + key +
                        "= is a positive integer of at most 2^40");
        return std::nullopt;
      }
      if (auto dynamic = seen.find("dynamic"); dynamic != seen.end()) {
        fail(error, "'" + token + "' contradicts 'dynamic'");
        return std::nullopt;
      }
      if (!firstTime(key, token))
        return std::nullopt;
      seen.emplace("shape", token);
      (key == "n" ? spec.n : spec.k) = *size;
    } else {
      fail(error, "'" + token + "': unknown key '" + key +
                      "' (from, to, n, k; or the words bias, dynamic)");
      return std::nullopt;
    }
  }
  if ((spec.n == kDynamic) != (spec.k == kDynamic)) {
    fail(error, spec.n == kDynamic ? "'" + seen["k"] + "' needs n="
                                   : "'" + seen["n"] + "' needs k=");
    return std::nullopt;
  }
  if (!haveTo)
    spec.output = spec.input;
  if (!spec.isDynamic() &&
      !validateWeightShape(spec.scheme, spec.n, spec.k, error))
    return std::nullopt;
  return spec;
}

std::string printMatmulSpec(const MatmulSpec &spec) {
  std::string text = "matmul " + printSchemeText(spec.scheme) +
                     " from=" + std::string(valueTypeName(spec.input)) +
                     " to=" + std::string(valueTypeName(spec.output));
  if (spec.bias)
    text += " bias";
  if (spec.isDynamic())
    text += " dynamic";
  else
    text += " n=" + std::to_string(spec.n) + " k=" + std::to_string(spec.k);
  return text;
}

} // namespace lowbit::matmul
