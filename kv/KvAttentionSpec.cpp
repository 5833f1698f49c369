//===- KvAttentionSpec.cpp - A decode-attention kernel, as text -----------===//

#include "kv/KvAttentionSpec.h"

#include "kv/SoftmaxScale.h"

#include <charconv>
#include <cmath>
#include <sstream>
#include <vector>

namespace lowbit::kv {

namespace {

bool fail(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
  return false;
}

std::vector<std::string_view> splitWords(std::string_view text) {
  std::vector<std::string_view> words;
  size_t at = 0;
  while (at < text.size()) {
    while (at < text.size() && (text[at] == ' ' || text[at] == '\t'))
      ++at;
    size_t end = at;
    while (end < text.size() && text[end] != ' ' && text[end] != '\t')
      ++end;
    if (end > at)
      words.push_back(text.substr(at, end - at));
    at = end;
  }
  return words;
}

/// A whole-token integer in [1, 2^30].
std::optional<int64_t> parseCount(std::string_view text) {
  int64_t value = 0;
  auto [end, code] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (code != std::errc() || end != text.data() + text.size() || value < 1 ||
      value > (int64_t(1) << 30))
    return std::nullopt;
  return value;
}

/// kv_int8_g<G> (any G), else kv/KvCache.h's names.
bool parseScheme(std::string_view word, KvAttentionSpec &spec) {
  constexpr std::string_view kGrouped = "kv_int8_g";
  if (word.starts_with(kGrouped)) {
    std::optional<int64_t> group = parseCount(word.substr(kGrouped.size()));
    if (!group)
      return false;
    spec.scheme = KvScheme::Int8Groups;
    spec.groupSize = *group;
    return true;
  }
  std::optional<KvScheme> scheme = parseKvScheme(word, &spec.groupSize);
  if (!scheme)
    return false;
  spec.scheme = *scheme;
  return true;
}

std::optional<QueryDtype> parseQueryDtype(std::string_view name) {
  if (name == "f32")
    return QueryDtype::F32;
  if (name == "f16")
    return QueryDtype::F16;
  if (name == "bf16")
    return QueryDtype::BF16;
  return std::nullopt;
}

} // namespace

std::string_view queryDtypeName(QueryDtype dtype) {
  switch (dtype) {
  case QueryDtype::F32:
    return "f32";
  case QueryDtype::F16:
    return "f16";
  case QueryDtype::BF16:
    return "bf16";
  }
  return "f32";
}

std::string_view dotKindName(DotKind dot) {
  return dot == DotKind::Mma ? "mma" : "fma";
}

std::string mmaDotRefusal(const KvAttentionSpec &spec) {
  if (!spec.isFp8())
    return "dot=mma takes FP8 caches (kv_fp8_e4m3, kv_fp8_e5m2), whose codes "
           "are exact in f16; int8 groups scale each code by its group's "
           "scale first";
  if (spec.query == QueryDtype::F32)
    return "dot=mma multiplies f16 operands: an f32 query would lose its low "
           "bits (q=f16 or q=bf16 take it)";
  if (spec.headDim % 16 != 0)
    return "dot=mma needs head_dim a multiple of 16 (one mma k-step), not " +
           std::to_string(spec.headDim);
  return "";
}

std::optional<KvAttentionSpec> parseKvAttentionSpec(std::string_view text,
                                                    std::string *error) {
  std::vector<std::string_view> words = splitWords(text);
  if (words.empty() || words[0] != "kv_attend") {
    fail(error, "a decode-attention spec starts with 'kv_attend', got '" +
                    std::string(words.empty() ? "" : words[0]) + "'");
    return std::nullopt;
  }
  KvAttentionSpec spec;
  if (words.size() < 2 || !parseScheme(words[1], spec)) {
    fail(error, "'" + std::string(words.size() < 2 ? "" : words[1]) +
                    "' is not a KV scheme (kv_int8_g<G>, kv_int8, "
                    "kv_fp8_e4m3, kv_fp8_e5m2)");
    return std::nullopt;
  }
  // A KIVI cache has its own layout and kernel (kv/KiviAttentionSpec.h).
  if (isKivi(spec.scheme)) {
    fail(error, "'" + std::string(words[1]) +
                    "' is a KIVI scheme: kivi_attend takes it, kv_attend "
                    "takes kv_int8_g<G>, kv_int8, kv_fp8_e4m3, kv_fp8_e5m2");
    return std::nullopt;
  }
  bool seenSoftmax = false, seenSplit = false, seenDot = false;
  bool seenQ = false, seenKv = false, seenDim = false;
  for (size_t index = 2; index < words.size(); ++index) {
    std::string_view word = words[index];
    std::string token(word);
    size_t equals = word.find('=');
    if (equals == std::string_view::npos) {
      fail(error, "'" + token + "' is not a key=value option");
      return std::nullopt;
    }
    std::string_view key = word.substr(0, equals);
    std::string_view value = word.substr(equals + 1);
    bool ok = true;
    if (key == "scale") {
      ok = spec.isFp8() && (value == "per_tensor" || value == "per_head");
      spec.perHead = value == "per_head";
      if (!ok) {
        fail(error, "'" + token +
                        "': scale= is per_tensor or per_head, for FP8 "
                        "schemes only (int8 scales are per group)");
        return std::nullopt;
      }
    } else if (key == "convention") {
      std::optional<ScaleConvention> convention = parseScaleConvention(value);
      ok = !spec.isFp8() && convention.has_value();
      if (ok)
        spec.convention = *convention;
    } else if (key == "q") {
      std::optional<QueryDtype> dtype = parseQueryDtype(value);
      ok = dtype.has_value();
      if (ok)
        spec.query = *dtype;
    } else if (key == "layout") {
      ok = value == "contiguous" || value == "paged";
      spec.paged = value == "paged";
    } else if (key == "q_heads" || key == "kv_heads" || key == "head_dim" ||
               key == "split") {
      std::optional<int64_t> count = parseCount(value);
      ok = count.has_value();
      if (ok) {
        if (key == "q_heads")
          spec.qHeads = *count, seenQ = true;
        else if (key == "kv_heads")
          spec.kvHeads = *count, seenKv = true;
        else if (key == "head_dim")
          spec.headDim = *count, seenDim = true;
        else
          spec.splitTokens = *count, seenSplit = true;
      }
    } else if (key == "softmax_scale") {
      std::string number(value);
      char *end = nullptr;
      float scale = std::strtof(number.c_str(), &end);
      ok = !number.empty() && end == number.c_str() + number.size();
      if (std::string refusal = softmaxScaleRefusal(scale);
          ok && !refusal.empty()) {
        fail(error, "'" + token + "': " + refusal);
        return std::nullopt;
      }
      spec.softmaxScale = scale;
      seenSoftmax = true;
    } else if (key == "dot") {
      ok = value == "mma" || value == "fma";
      spec.dot = value == "mma" ? DotKind::Mma : DotKind::Fma;
      seenDot = true;
    } else {
      fail(error, "'" + token + "': unknown option '" + std::string(key) +
                      "' (scale, convention, q, layout, q_heads, kv_heads, "
                      "head_dim, split, softmax_scale, dot)");
      return std::nullopt;
    }
    if (!ok) {
      fail(error, "'" + token + "' has a bad value for " + std::string(key));
      return std::nullopt;
    }
  }
  if (!seenQ || !seenKv || !seenDim) {
    fail(error, "a decode-attention spec names q_heads=, kv_heads= and "
                "head_dim=");
    return std::nullopt;
  }
  if (spec.qHeads % spec.kvHeads != 0) {
    fail(error,
         "'q_heads=" + std::to_string(spec.qHeads) +
             "' is not a multiple of kv_heads=" + std::to_string(spec.kvHeads));
    return std::nullopt;
  }
  if (!seenSplit)
    spec.splitTokens = defaultSplitTokens(spec.kvHeads);
  if (!seenSoftmax)
    spec.softmaxScale = 1.0f / std::sqrt(float(spec.headDim));
  std::string refusal = mmaDotRefusal(spec);
  if (!seenDot)
    spec.dot = refusal.empty() ? DotKind::Mma : DotKind::Fma;
  else if (spec.dot == DotKind::Mma && !refusal.empty()) {
    fail(error, "'dot=mma': " + refusal);
    return std::nullopt;
  }
  return spec;
}

std::string printKvAttentionSpec(const KvAttentionSpec &spec) {
  std::ostringstream text;
  text << "kv_attend ";
  if (spec.isFp8())
    text << kvSchemeName(spec.scheme)
         << " scale=" << (spec.perHead ? "per_head" : "per_tensor");
  else
    text << "kv_int8_g" << spec.groupSize
         << " convention=" << scaleConventionName(spec.convention);
  char scale[32];
  std::snprintf(scale, sizeof scale, "%.9g", double(spec.softmaxScale));
  text << " q=" << queryDtypeName(spec.query)
       << " layout=" << (spec.paged ? "paged" : "contiguous")
       << " q_heads=" << spec.qHeads << " kv_heads=" << spec.kvHeads
       << " head_dim=" << spec.headDim << " split=" << spec.splitTokens
       << " softmax_scale=" << scale << " dot=" << dotKindName(spec.dot);
  return text.str();
}

} // namespace lowbit::kv
