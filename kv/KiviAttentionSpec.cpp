//===- KiviAttentionSpec.cpp - KIVI decode attention, as text -------------===//

#include "kv/KiviAttentionSpec.h"

#include "kv/SoftmaxScale.h"

#include "kv/KvAttentionSpec.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace lowbit::kv {

namespace {

constexpr int64_t kMaxSize = int64_t(1) << 30;

std::optional<KiviAttentionSpec> refuse(std::string *error,
                                        std::string message) {
  if (error)
    *error = std::move(message);
  return std::nullopt;
}

} // namespace

bool validateKiviAttentionSpec(const KiviAttentionSpec &spec,
                               std::string *error) {
  auto fail = [&](std::string message) {
    if (error)
      *error = std::move(message);
    return false;
  };
  if (!validateKiviSide(spec.keys, error))
    return false;
  if (spec.cache == KvValueType::F32)
    return fail("a KIVI cache's residual is f16 or bf16, not f32");
  for (int64_t size : {spec.qHeads, spec.kvHeads, spec.headDim})
    if (size < 1 || size > kMaxSize)
      return fail("q_heads, kv_heads and head_dim are in [1, 2^30]; got " +
                  std::to_string(size));
  if (spec.qHeads % spec.kvHeads != 0)
    return fail(
        "q_heads=" + std::to_string(spec.qHeads) +
        " is not a multiple of kv_heads=" + std::to_string(spec.kvHeads));
  if (spec.splitTokens < 1 || spec.splitTokens > kMaxSize)
    return fail("split is in [1, 2^30]; got " +
                std::to_string(spec.splitTokens));
  if (std::string refusal = softmaxScaleRefusal(spec.softmaxScale);
      !refusal.empty())
    return fail(refusal);
  return true;
}

std::optional<KiviAttentionSpec> parseKiviAttentionSpec(std::string_view text,
                                                        std::string *error) {
  std::istringstream words{std::string(text)};
  std::string word;
  if (!(words >> word) || word != "kivi_attend")
    return refuse(error, "a KIVI decode-attention spec starts with "
                         "'kivi_attend', got '" +
                             word + "'");
  KiviAttentionSpec spec;
  word.clear();
  words >> word;
  std::optional<int> bits = parseKiviSchemeBits(word);
  if (!bits)
    return refuse(error, "'" + word +
                             "' is not a KIVI scheme (kv_kivi_int4, "
                             "kv_kivi_int2)");
  spec.keys.bits = *bits;
  bool seenSplit = false, seenScale = false;
  bool seenQ = false, seenKv = false, seenDim = false;
  while (words >> word) {
    size_t equals = word.find('=');
    if (equals == std::string::npos)
      return refuse(error, "'" + word + "' is not a key=value option");
    std::string key = word.substr(0, equals), value = word.substr(equals + 1);
    // A whole-token integer in [0, 2^30] (0 only where a window allows it).
    auto count = [&](int64_t &into) {
      int64_t number = 0;
      auto [end, code] =
          std::from_chars(value.data(), value.data() + value.size(), number);
      if (code != std::errc() || end != value.data() + value.size() ||
          number < 0 || number > kMaxSize)
        return false;
      into = number;
      return true;
    };
    bool ok = true;
    if (key == "group")
      ok = count(spec.keys.groupSize);
    else if (key == "residual")
      ok = count(spec.keys.residual);
    else if (key == "keys") {
      ok = value == "per_channel" || value == "per_token";
      spec.keys.perChannel = value == "per_channel";
    } else if (key == "zero") {
      std::optional<KiviZero> zero = parseKiviZero(value);
      ok = zero.has_value();
      if (ok)
        spec.keys.zero = *zero;
    } else if (key == "cache" || key == "q") {
      std::optional<KvValueType> type = parseKvValueType(value);
      ok = type && (key == "q" || *type != KvValueType::F32);
      if (ok)
        (key == "q" ? spec.query : spec.cache) = *type;
    } else if (key == "layout") {
      std::optional<KvLayout> layout = parseKvLayout(value);
      ok = layout.has_value();
      if (ok)
        spec.layout = *layout;
    } else if (key == "q_heads")
      ok = count(spec.qHeads) && spec.qHeads >= 1, seenQ = true;
    else if (key == "kv_heads")
      ok = count(spec.kvHeads) && spec.kvHeads >= 1, seenKv = true;
    else if (key == "head_dim")
      ok = count(spec.headDim) && spec.headDim >= 1, seenDim = true;
    else if (key == "split")
      ok = count(spec.splitTokens) && spec.splitTokens >= 1, seenSplit = true;
    else if (key == "softmax_scale") {
      char *end = nullptr;
      spec.softmaxScale = std::strtof(value.c_str(), &end);
      ok = !value.empty() && end == value.c_str() + value.size();
      if (std::string refusal = softmaxScaleRefusal(spec.softmaxScale);
          ok && !refusal.empty())
        return refuse(error, "'" + word + "': " + refusal);
      seenScale = true;
    } else
      return refuse(error, "'" + word + "': unknown option '" + key +
                               "' (group, residual, keys, zero, cache, q, "
                               "layout, "
                               "q_heads, kv_heads, head_dim, split, "
                               "softmax_scale)");
    if (!ok)
      return refuse(error, "'" + word + "' has a bad value for " + key);
  }
  if (!seenQ || !seenKv || !seenDim)
    return refuse(error, "a KIVI decode-attention spec names q_heads=, "
                         "kv_heads= and head_dim=");
  if (!seenSplit)
    spec.splitTokens = defaultSplitTokens(spec.kvHeads);
  if (!seenScale)
    spec.softmaxScale = 1.0f / std::sqrt(float(spec.headDim));
  std::string invalid;
  if (!validateKiviAttentionSpec(spec, &invalid))
    return refuse(error, "'" + std::string(text) + "': " + invalid);
  return spec;
}

std::string printKiviAttentionSpec(const KiviAttentionSpec &spec) {
  char scale[32];
  std::snprintf(scale, sizeof scale, "%.9g", double(spec.softmaxScale));
  std::ostringstream text;
  text << "kivi_attend " << kiviSchemeName(spec.keys.bits)
       << " group=" << spec.keys.groupSize << " residual=" << spec.keys.residual
       << " keys=" << (spec.keys.perChannel ? "per_channel" : "per_token")
       << " zero=" << kiviZeroName(spec.keys.zero)
       << " cache=" << kvValueTypeName(spec.cache)
       << " q=" << kvValueTypeName(spec.query)
       << " layout=" << kvLayoutName(spec.layout) << " q_heads=" << spec.qHeads
       << " kv_heads=" << spec.kvHeads << " head_dim=" << spec.headDim
       << " split=" << spec.splitTokens << " softmax_scale=" << scale;
  return text.str();
}

} // namespace lowbit::kv
