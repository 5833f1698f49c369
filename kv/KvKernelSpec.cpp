//===- KvKernelSpec.cpp - What one KV-cache kernel computes ---------------===//

#include "kv/KvKernelSpec.h"

#include "format/Scheme.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <set>
#include <vector>

namespace lowbit::kv {

namespace {

bool fail(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
  return false;
}

std::optional<int64_t> parseCount(std::string_view text, int64_t maximum) {
  int64_t value = 0;
  auto [end, status] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (status != std::errc() || end != text.data() + text.size() || value < 1 ||
      value > maximum)
    return std::nullopt;
  return value;
}

std::vector<std::string_view> splitTokens(std::string_view text) {
  std::vector<std::string_view> tokens;
  size_t position = 0;
  while (position < text.size()) {
    size_t begin = text.find_first_not_of(" \t", position);
    if (begin == std::string_view::npos)
      break;
    size_t end = text.find_first_of(" \t", begin);
    if (end == std::string_view::npos)
      end = text.size();
    tokens.push_back(text.substr(begin, end - begin));
    position = end;
  }
  return tokens;
}

} // namespace

std::string_view kvKernelOpName(KvKernelOp op) {
  return op == KvKernelOp::Append ? "kv_append" : "kv_dequantize";
}

std::string_view kvLayoutName(KvLayout layout) {
  return layout == KvLayout::Contiguous ? "contiguous" : "paged";
}

std::optional<KvLayout> parseKvLayout(std::string_view name) {
  if (name == "contiguous")
    return KvLayout::Contiguous;
  if (name == "paged")
    return KvLayout::Paged;
  return std::nullopt;
}

std::string_view kvValueTypeName(KvValueType type) {
  switch (type) {
  case KvValueType::F32:
    return "f32";
  case KvValueType::F16:
    return "f16";
  case KvValueType::BF16:
    return "bf16";
  }
  return "f32";
}

std::optional<KvValueType> parseKvValueType(std::string_view name) {
  for (KvValueType type :
       {KvValueType::F32, KvValueType::F16, KvValueType::BF16})
    if (kvValueTypeName(type) == name)
      return type;
  return std::nullopt;
}

Format KvSchemeParams::fp8Format() const {
  return *lookupFormat(scheme == KvScheme::Fp8E5M2 ? "e5m2" : "e4m3");
}

std::string KvSchemeParams::name() const {
  if (isInt8())
    return "kv_int8_g" + std::to_string(int8.groupSize);
  return std::string(kvSchemeName(scheme));
}

bool KvSchemeParams::operator==(const KvSchemeParams &other) const {
  return scheme == other.scheme && int8.groupSize == other.int8.groupSize &&
         int8.convention == other.int8.convention &&
         int8.epsilon == other.int8.epsilon && perHead == other.perHead;
}

std::optional<KvSchemeParams> parseKvSchemeName(std::string_view name,
                                                std::string *error) {
  KvSchemeParams params;
  constexpr std::string_view int8Prefix = "kv_int8_g";
  if (name.substr(0, int8Prefix.size()) == int8Prefix) {
    std::optional<int64_t> group =
        parseCount(name.substr(int8Prefix.size()), kMaxScaleExtent);
    if (!group) {
      fail(error, "'" + std::string(name) +
                      "': the group size after kv_int8_g must be an integer "
                      "in [1, 2^30]");
      return std::nullopt;
    }
    params.int8.groupSize = *group;
    return params;
  }
  if (name == "kv_fp8_e4m3" || name == "kv_fp8_e5m2") {
    params.scheme =
        name == "kv_fp8_e4m3" ? KvScheme::Fp8E4M3 : KvScheme::Fp8E5M2;
    return params;
  }
  fail(error, "'" + std::string(name) +
                  "' is not a KV scheme (kv_int8_g<G>, kv_fp8_e4m3, "
                  "kv_fp8_e5m2)");
  return std::nullopt;
}

int64_t KvKernelSpec::scaleWidth() const {
  if (scheme.isInt8())
    return (headDim + scheme.int8.groupSize - 1) / scheme.int8.groupSize;
  return scheme.perHead ? heads : 1;
}

std::optional<KvKernelSpec> parseKvKernelSpec(std::string_view text,
                                              std::string *error) {
  std::vector<std::string_view> tokens = splitTokens(text);
  if (tokens.size() < 2) {
    fail(error, "a KV kernel spec is 'kv_append|kv_dequantize SCHEME "
                "key=value...'");
    return std::nullopt;
  }
  KvKernelSpec spec;
  if (tokens[0] == "kv_append")
    spec.op = KvKernelOp::Append;
  else if (tokens[0] == "kv_dequantize")
    spec.op = KvKernelOp::Dequantize;
  else {
    fail(error, "'" + std::string(tokens[0]) +
                    "': the op must be kv_append or kv_dequantize");
    return std::nullopt;
  }
  std::optional<KvSchemeParams> scheme = parseKvSchemeName(tokens[1], error);
  if (!scheme)
    return std::nullopt;
  spec.scheme = *scheme;
  // A value type nobody gave: f16 for append's input, f32 for dequantize's
  // output.
  spec.valueType =
      spec.op == KvKernelOp::Append ? KvValueType::F16 : KvValueType::F32;

  std::set<std::string_view> seen;
  bool haveHeads = false, haveHeadDim = false;
  for (size_t index = 2; index < tokens.size(); ++index) {
    std::string_view token = tokens[index];
    std::string quoted = "'" + std::string(token) + "'";
    size_t equals = token.find('=');
    if (equals == std::string_view::npos) {
      fail(error, quoted + ": expected key=value");
      return std::nullopt;
    }
    std::string_view key = token.substr(0, equals);
    std::string_view value = token.substr(equals + 1);
    if (!seen.insert(key).second) {
      fail(error,
           quoted + ": the key '" + std::string(key) + "' is given twice");
      return std::nullopt;
    }
    auto refuse = [&](std::string why) {
      fail(error, quoted + ": " + why);
      return std::nullopt;
    };
    if (key == "convention") {
      if (!spec.scheme.isInt8())
        return refuse("convention= belongs to kv_int8 schemes only");
      std::optional<ScaleConvention> convention = parseScaleConvention(value);
      if (!convention)
        return refuse("the convention is multiplier or divisor");
      spec.scheme.int8.convention = *convention;
    } else if (key == "eps") {
      if (!spec.scheme.isInt8())
        return refuse("eps= belongs to kv_int8 schemes only");
      float epsilon = 0;
      auto [end, status] =
          std::from_chars(value.data(), value.data() + value.size(), epsilon);
      if (status != std::errc() || end != value.data() + value.size() ||
          !(epsilon > 0.0f) || !std::isfinite(epsilon))
        return refuse("eps must be a finite number > 0");
      spec.scheme.int8.epsilon = epsilon;
    } else if (key == "scale") {
      if (spec.scheme.isInt8())
        return refuse("scale= belongs to kv_fp8 schemes only");
      if (value != "per_tensor" && value != "per_head")
        return refuse("the scale is per_tensor or per_head");
      spec.scheme.perHead = value == "per_head";
    } else if (key == "from" || key == "to") {
      bool wantFrom = spec.op == KvKernelOp::Append;
      if ((key == "from") != wantFrom)
        return refuse(wantFrom ? "kv_append takes from=, not to="
                               : "kv_dequantize takes to=, not from=");
      std::optional<KvValueType> type = parseKvValueType(value);
      if (!type || (wantFrom && *type == KvValueType::F32))
        return refuse(wantFrom ? "kv_append reads f16 or bf16"
                               : "kv_dequantize writes f16, bf16 or f32");
      spec.valueType = *type;
    } else if (key == "layout") {
      std::optional<KvLayout> layout = parseKvLayout(value);
      if (!layout)
        return refuse("the layout is contiguous or paged");
      spec.layout = *layout;
    } else if (key == "heads" || key == "head_dim") {
      std::optional<int64_t> count = parseCount(value, kMaxScaleExtent);
      if (!count)
        return refuse("must be an integer in [1, 2^30]");
      (key == "heads" ? spec.heads : spec.headDim) = *count;
      (key == "heads" ? haveHeads : haveHeadDim) = true;
    } else {
      return refuse("unknown key (convention, eps, scale, from, to, layout, "
                    "heads, head_dim)");
    }
  }
  if (!haveHeads || !haveHeadDim) {
    fail(error, "a KV kernel spec needs heads= and head_dim=");
    return std::nullopt;
  }
  return spec;
}

std::string formatKvKernelSpec(const KvKernelSpec &spec) {
  std::string text =
      std::string(kvKernelOpName(spec.op)) + " " + spec.scheme.name();
  if (spec.scheme.isInt8()) {
    char epsilon[32];
    std::snprintf(epsilon, sizeof epsilon, "%.9g",
                  double(spec.scheme.int8.epsilon));
    text += " convention=" +
            std::string(scaleConventionName(spec.scheme.int8.convention)) +
            " eps=" + epsilon;
  } else {
    text += spec.scheme.perHead ? " scale=per_head" : " scale=per_tensor";
  }
  text += spec.op == KvKernelOp::Append ? " from=" : " to=";
  text += kvValueTypeName(spec.valueType);
  text += " layout=" + std::string(kvLayoutName(spec.layout)) +
          " heads=" + std::to_string(spec.heads) +
          " head_dim=" + std::to_string(spec.headDim);
  return text;
}

} // namespace lowbit::kv
