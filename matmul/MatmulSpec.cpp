//===- MatmulSpec.cpp - A quantized-weight matmul kernel, as text ---------===//

#include "matmul/MatmulSpec.h"

#include "format/SchemeText.h"
#include "matmul/QuantizedOrder.h"

#include <map>
#include <vector>

namespace lowbit::matmul {

namespace {

bool fail(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
  return false;
}

std::string sideRefusal(const Scheme &scheme, const char *side) {
  std::string prefix = std::string(side) + " ";
  if (containerBits(scheme) > 8)
    return prefix + "codes of " + std::string(scheme.element.name()) +
           " need more than 8 bits; quantized operands are 8 bits or less";
  if (scheme.scale.zeroPoint)
    return prefix + "scheme has zero points: with quantized activations "
                    "both sides are symmetric, so that a product of codes "
                    "is a product of values";
  if (scheme.packing == Packing::NibbleHalves)
    return prefix + "codes are packed in nibble halves (Q4_0's layout); "
                    "quantized operands are packed in bytes or nibbles";
  if (scheme.scale.layout != ScaleLayout::RowMajor)
    return prefix + "scales are swizzled; quantized operands take "
                    "row-major scales";
  return "";
}

} // namespace

std::string activationPairRefusal(const Scheme &weights,
                                  const Scheme &activations) {
  if (std::string refusal = weightSchemeRefusal(weights); !refusal.empty())
    return "the weights' scheme is not a weight scheme: " + refusal;
  std::string invalid;
  if (!validateScheme(activations, &invalid))
    return "the activations' scheme is invalid: " + invalid;
  for (auto [scheme, side] : {std::pair{&weights, "the weights'"},
                              std::pair{&activations, "the activations'"}})
    if (std::string refusal = sideRefusal(*scheme, side); !refusal.empty())
      return refusal;
  const ScaleSpec &scale = activations.scale;
  bool perRow =
      scale.granularity == Granularity::PerToken ||
      (scale.granularity == Granularity::PerChannel && scale.axis == 0);
  bool groupsAlongK =
      scale.granularity == Granularity::Group && scale.axis == 1;
  if (scale.granularity != Granularity::PerTensor && !perRow && !groupsAlongK)
    return "the activations' scales are " +
           std::string(granularityName(scale.granularity)) +
           (scale.granularity == Granularity::Group ? "(axis=0)" : "") +
           "; X takes one scale per tensor, one per token (row of X) or "
           "groups along K (group(G;axis=1))";
  if (weights.element.isInt() != activations.element.isInt())
    return "the weights are " + std::string(weights.element.name()) +
           " and the activations " + std::string(activations.element.name()) +
           ": both integer or both float (no tensor-core instruction "
           "multiplies an integer by a float)";
  int64_t weightExtent = scaleExtentAlongK(weights.scale);
  int64_t activationExtent = scaleExtentAlongK(activations.scale);
  if (weightExtent > 0 && activationExtent > 0 &&
      weightExtent != activationExtent)
    return "the activations' scales cover " + std::to_string(activationExtent) +
           " along K and the weights' " + std::to_string(weightExtent) +
           ": the order scales each K block once per side, so both "
           "extents are equal (or one side's scale covers all of K)";
  return "";
}

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

bool validateMatmulShape(const MatmulSpec &spec, int64_t n, int64_t k,
                         std::string *error) {
  if (!validateWeightShape(spec.scheme, n, k, error))
    return false;
  if (!spec.activation)
    return true;
  const Scheme &activations = *spec.activation;
  int64_t extent = scaleExtentAlongK(activations.scale);
  if (extent > 0 && k != kDynamic && k % extent != 0 &&
      !activations.scale.allowTail)
    return fail(error, "k=" + std::to_string(k) +
                           ": the activations' last group of " +
                           std::to_string(extent) +
                           " straddles K's end and their scheme allows no "
                           "tail (tail=false)");
  if (k != kDynamic && activations.element.isInt() &&
      orderBlockK(spec.scheme, activations, k) > kMaxIntegerBlock)
    return fail(error, "k=" + std::to_string(k) +
                           ": an integer block of the order sums its code "
                           "products in int32, exact for at most " +
                           std::to_string(kMaxIntegerBlock) + " of them");
  std::string chainError;
  if (!validatePrologueChain(spec.prologues, k, &chainError))
    return fail(error, "the prologues at K = " +
                           (k == kDynamic ? std::string("dynamic")
                                          : std::to_string(k)) +
                           ": " + chainError);
  return true;
}

std::optional<MatmulSpec> parseMatmulSpec(std::string_view text,
                                          std::string *error) {
  MatmulSpec spec;
  if (!takePrologueChain(text, spec.prologues, error))
    return std::nullopt;
  std::vector<std::string_view> tokens = splitSpecTokens(text);
  if (tokens.empty() || tokens[0] != "matmul") {
    fail(error, "a matmul spec starts with 'matmul', got '" +
                    std::string(tokens.empty() ? "" : tokens[0]) + "'");
    return std::nullopt;
  }
  if (tokens.size() < 2) {
    fail(error, "a matmul spec is 'matmul SCHEME [from=] [to=] [bias] "
                "[n=N k=K | dynamic]' or 'matmul w=SCHEME a=SCHEME ...'");
    return std::nullopt;
  }
  // A scheme as the matmul reads it: its mode is the weights' stored scales
  // or X's computed ones either way, so it is Dynamic; named when it is a
  // named scheme.
  auto readScheme = [&](std::string_view token,
                        std::string_view schemeText) -> std::optional<Scheme> {
    std::string schemeError;
    std::optional<Scheme> scheme = parseSchemeText(schemeText, &schemeError);
    if (!scheme) {
      fail(error, "'" + std::string(token) + "': " + schemeError);
      return std::nullopt;
    }
    scheme->scale.mode = ScaleMode::Dynamic;
    if (const Scheme *named = findNamedScheme(*scheme))
      scheme->name = named->name;
    else
      scheme->name.clear();
    return scheme;
  };
  // The weight-only form names its scheme bare; the quantized-activation
  // form says w= and a=.
  size_t first = 2;
  std::optional<Scheme> weights;
  if (!tokens[1].starts_with("w=")) {
    if (tokens[1].starts_with("a=")) {
      fail(error, "'" + std::string(tokens[1]) +
                      "': a= follows w=SCHEME (matmul w=SCHEME a=SCHEME)");
      return std::nullopt;
    }
    weights = readScheme(tokens[1], tokens[1]);
  } else {
    weights = readScheme(tokens[1], tokens[1].substr(2));
    if (weights && (tokens.size() < 3 || !tokens[2].starts_with("a="))) {
      fail(error, "'" + std::string(tokens[1]) +
                      "' needs a=SCHEME next (the weight-only form is "
                      "'matmul SCHEME')");
      return std::nullopt;
    }
    if (weights) {
      spec.activation = readScheme(tokens[2], tokens[2].substr(2));
      if (!spec.activation)
        return std::nullopt;
      first = 3;
    }
  }
  if (!weights)
    return std::nullopt;
  if (std::string refusal = weightSchemeRefusal(*weights); !refusal.empty()) {
    fail(error, "'" + std::string(tokens[1]) +
                    "' is not a weight scheme: " + refusal);
    return std::nullopt;
  }
  spec.scheme = *weights;
  if (spec.activation) {
    if (std::string refusal =
            activationPairRefusal(spec.scheme, *spec.activation);
        !refusal.empty()) {
      fail(error, "'" + std::string(tokens[1]) + " " + std::string(tokens[2]) +
                      "': " + refusal);
      return std::nullopt;
    }
  } else if (!spec.prologues.empty()) {
    fail(error, "the prologue '" + printPrologue(spec.prologues[0]) +
                    "' goes in front of the activations' quantize: it "
                    "needs 'matmul w=SCHEME a=SCHEME'");
    return std::nullopt;
  }

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
  for (size_t index = first; index < tokens.size(); ++index) {
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
                      "' (from, to, n, k; w= and a= come first; or the "
                      "words bias, dynamic)");
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
  if (!validateMatmulShape(spec, spec.n, spec.k, error))
    return std::nullopt;
  return spec;
}

std::string printMatmulSpec(const MatmulSpec &spec) {
  std::string text;
  for (const Prologue &prologue : spec.prologues)
    text += printPrologue(prologue) + " | ";
  text += spec.activation ? "matmul w=" + printSchemeText(spec.scheme) +
                                " a=" + printSchemeText(*spec.activation)
                          : "matmul " + printSchemeText(spec.scheme);
  text += " from=" + std::string(valueTypeName(spec.input)) +
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
