//===- KvCache.cpp - A quantized KV cache: append, read, attend -----------===//

#include "kv/KvCache.h"

#include "kv/KvAttention.h"

#include <algorithm>
#include <cmath>

namespace lowbit::kv {

namespace {

bool failWith(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
  return false;
}

Format fp8Format(KvScheme scheme) {
  return *lookupFormat(scheme == KvScheme::Fp8E4M3 ? "e4m3" : "e5m2");
}

} // namespace

std::string_view kvSchemeName(KvScheme scheme) {
  switch (scheme) {
  case KvScheme::Int8Groups:
    return "kv_int8";
  case KvScheme::Fp8E4M3:
    return "kv_fp8_e4m3";
  case KvScheme::Fp8E5M2:
    return "kv_fp8_e5m2";
  case KvScheme::Kivi4:
    return "kv_kivi_int4";
  case KvScheme::Kivi2:
    return "kv_kivi_int2";
  }
  return "kv_int8";
}

std::optional<KvScheme> parseKvScheme(std::string_view name,
                                      int64_t *groupSize) {
  if (name == "kv_fp8_e4m3")
    return KvScheme::Fp8E4M3;
  if (name == "kv_fp8_e5m2")
    return KvScheme::Fp8E5M2;
  if (name == "kv_kivi_int4")
    return KvScheme::Kivi4;
  if (name == "kv_kivi_int2")
    return KvScheme::Kivi2;
  if (name == "kv_int8")
    return KvScheme::Int8Groups;
  // kv_int8_g<G>: the group size in the name, as in kv_int8_g64.
  std::string_view prefix = "kv_int8_g";
  if (!name.starts_with(prefix) || name.size() == prefix.size() ||
      name.size() > prefix.size() + 9 || name[prefix.size()] == '0')
    return std::nullopt;
  int64_t size = 0;
  for (char digit : name.substr(prefix.size())) {
    if (digit < '0' || digit > '9')
      return std::nullopt;
    size = size * 10 + (digit - '0');
  }
  if (groupSize)
    *groupSize = size;
  return KvScheme::Int8Groups;
}

std::optional<KvCache> KvCache::withoutStorage(KvCacheConfig config,
                                               std::string *error) {
  const int64_t limit = int64_t(1) << 30;
  for (int64_t dim : {config.batch, config.kvHeads, config.headDim})
    if (dim < 1 || dim > limit) {
      failWith(error, "batch, kv heads and head_dim must be in [1, 2^30]");
      return std::nullopt;
    }
  if (isKivi(config.scheme)) {
    config.kivi.bits = config.scheme == KvScheme::Kivi4 ? 4 : 2;
    if (!validateKiviOptions(config.kivi, error))
      return std::nullopt;
  } else if (config.scheme == KvScheme::Int8Groups) {
    if (config.int8.groupSize < 1 || config.int8.groupSize > limit) {
      failWith(error, "group size " + std::to_string(config.int8.groupSize) +
                          " is not in [1, 2^30]");
      return std::nullopt;
    }
  } else {
    for (const std::vector<float> *scales :
         {&config.keyScales, &config.valueScales}) {
      if (scales->size() != 1 && int64_t(scales->size()) != config.kvHeads) {
        failWith(error, "an FP8 cache needs 1 scale (per tensor) or " +
                            std::to_string(config.kvHeads) +
                            " (per head) for K and for V; got " +
                            std::to_string(scales->size()));
        return std::nullopt;
      }
      for (float scale : *scales)
        if (!(scale > 0.0f) || !std::isfinite(scale)) {
          failWith(error, "every KV scale must be finite and > 0");
          return std::nullopt;
        }
    }
  }
  if (config.paged) {
    if (config.pages < 1 || config.pages > limit || config.maxBlocks < 1 ||
        config.maxBlocks > limit) {
      failWith(error, "a paged cache needs pages and max blocks in [1, 2^30]");
      return std::nullopt;
    }
  } else if (config.capacity < 1 || config.capacity > limit) {
    failWith(error, "a contiguous cache needs a capacity in [1, 2^30] tokens");
    return std::nullopt;
  }
  KvCache cache(std::move(config));
  const KvCacheConfig &settings = cache.settings;
  // Every stored tensor at most 2^40 elements, counted without overflow
  // (each dimension is at most 2^30, a product of three is not).
  auto fits = [](const std::vector<int64_t> &shape) {
    int64_t elements = 1;
    for (int64_t dim : shape)
      if (__builtin_mul_overflow(elements, dim, &elements) ||
          elements > (int64_t(1) << 40))
        return false;
    return true;
  };
  bool fitting = fits(cache.storageShape(settings.headDim));
  if (isKivi(settings.scheme))
    fitting = fitting && fits(cache.kiviScaleShape(true)) &&
              fits(cache.kiviWindowShape());
  if (!fitting) {
    failWith(error, "the cache would hold more than 2^40 elements");
    return std::nullopt;
  }
  if (settings.paged) {
    PagedLayout layout{settings.pages, settings.kvHeads,   1,
                       settings.batch, settings.maxBlocks, settings.blockTable};
    // The table (read from a file) is checked before a vector of `batch`
    // lengths (any number in meta.json) is made: a table of another size
    // is refused for its size.
    std::vector<int64_t> empty;
    if (int64_t(settings.blockTable.size()) ==
        settings.batch * settings.maxBlocks)
      empty.assign(settings.batch, 0);
    if (!validatePagedLayout(layout, empty, error))
      return std::nullopt;
  }
  return cache;
}

std::optional<KvCache> KvCache::create(KvCacheConfig config,
                                       std::string *error) {
  std::optional<KvCache> cache = withoutStorage(std::move(config), error);
  if (!cache)
    return std::nullopt;
  const KvCacheConfig &settings = cache->settings;
  int64_t rows = cache->storageShape(1)[0] * cache->storageShape(1)[1] *
                 cache->storageShape(1)[2];
  cache->keyCodes.assign(rows * settings.headDim, 0);
  cache->valueCodes.assign(rows * settings.headDim, 0);
  cache->keyRowScales.assign(rows * cache->scaleWidth(), 0.0f);
  cache->valueRowScales.assign(rows * cache->scaleWidth(), 0.0f);
  cache->sequenceLengths.assign(settings.batch, 0);
  if (isKivi(settings.scheme))
    cache->allocateKivi(rows);
  return cache;
}

int64_t KvCache::scaleWidth() const {
  if (isKivi(settings.scheme))
    return (settings.headDim + settings.kivi.groupSize - 1) /
           settings.kivi.groupSize;
  if (settings.scheme != KvScheme::Int8Groups)
    return 0;
  return (settings.headDim + settings.int8.groupSize - 1) /
         settings.int8.groupSize;
}

std::vector<int64_t> KvCache::storageShape(int64_t width) const {
  if (settings.paged)
    return {settings.pages, settings.kvHeads, kPageTokens, width};
  return {settings.batch, settings.kvHeads, settings.capacity, width};
}

int64_t KvCache::rowOffset(int64_t sequence, int64_t head, int64_t token,
                           int64_t width) const {
  if (settings.paged) {
    PagedLayout layout{settings.pages, settings.kvHeads,   width,
                       settings.batch, settings.maxBlocks, {}};
    int64_t page =
        settings
            .blockTable[sequence * settings.maxBlocks + token / kPageTokens];
    return ((page * layout.kvHeads + head) * kPageTokens +
            token % kPageTokens) *
           width;
  }
  return ((sequence * settings.kvHeads + head) * settings.capacity + token) *
         width;
}

int64_t KvCache::maxLength() const {
  return *std::ranges::max_element(sequenceLengths);
}

bool KvCache::append(std::span<const float> keys, std::span<const float> values,
                     int64_t tokens, std::string *error) {
  int64_t dim = settings.headDim;
  int64_t expected = settings.batch * settings.kvHeads * tokens * dim;
  if (tokens < 1 || int64_t(keys.size()) != expected ||
      int64_t(values.size()) != expected)
    return failWith(error, "append needs K and V of [" +
                               std::to_string(settings.batch) + ", " +
                               std::to_string(settings.kvHeads) + ", tokens, " +
                               std::to_string(dim) + "] with tokens >= 1");
  std::vector<int64_t> after = sequenceLengths;
  for (int64_t &length : after)
    length += tokens;
  if (settings.paged) {
    PagedLayout layout{settings.pages, settings.kvHeads,   1,
                       settings.batch, settings.maxBlocks, settings.blockTable};
    if (!validatePagedLayout(layout, after, error))
      return false;
  } else {
    for (size_t b = 0; b < after.size(); ++b)
      if (after[b] > settings.capacity)
        return failWith(error, "sequence " + std::to_string(b) +
                                   " would hold " + std::to_string(after[b]) +
                                   " tokens; the cache holds " +
                                   std::to_string(settings.capacity));
  }
  if (isKivi(settings.scheme))
    return appendKivi(keys, values, tokens, std::move(after), error);
  std::vector<int64_t> shape = {settings.batch, settings.kvHeads, tokens, dim};
  // Quantize every new row first, so a refusal leaves the cache unchanged.
  std::vector<uint8_t> newCodes[2];
  std::vector<float> newScales[2];
  std::span<const float> inputs[2] = {keys, values};
  for (int side = 0; side < 2; ++side) {
    if (settings.scheme == KvScheme::Int8Groups) {
      auto quantized =
          quantizeInt8Groups(inputs[side], shape, settings.int8, error);
      if (!quantized)
        return false;
      newCodes[side].assign(quantized->codes.begin(), quantized->codes.end());
      newScales[side] = std::move(quantized->scales);
    } else {
      const std::vector<float> &scales =
          side == 0 ? settings.keyScales : settings.valueScales;
      Fp8KvOptions options(fp8Format(settings.scheme),
                           scales.size() == 1 ? -1 : 1);
      auto quantized =
          quantizeFp8Kv(inputs[side], shape, options, scales, error);
      if (!quantized)
        return false;
      newCodes[side] = std::move(quantized->codes);
    }
  }
  int64_t width = scaleWidth();
  for (int side = 0; side < 2; ++side) {
    std::vector<uint8_t> &codes = side == 0 ? keyCodes : valueCodes;
    std::vector<float> &scales = side == 0 ? keyRowScales : valueRowScales;
    for (int64_t b = 0; b < settings.batch; ++b)
      for (int64_t h = 0; h < settings.kvHeads; ++h)
        for (int64_t t = 0; t < tokens; ++t) {
          int64_t row = (b * settings.kvHeads + h) * tokens + t;
          int64_t token = sequenceLengths[b] + t;
          std::copy_n(newCodes[side].begin() + row * dim, dim,
                      codes.begin() + rowOffset(b, h, token, dim));
          if (width)
            std::copy_n(newScales[side].begin() + row * width, width,
                        scales.begin() + rowOffset(b, h, token, width));
        }
  }
  sequenceLengths = std::move(after);
  return true;
}

std::vector<float>
KvCache::dequantize(const std::vector<uint8_t> &codes,
                    const std::vector<float> &rowScales,
                    const std::vector<float> &staticScales) const {
  int64_t dim = settings.headDim, width = scaleWidth(), tokens = maxLength();
  std::vector<float> result(settings.batch * settings.kvHeads * tokens * dim,
                            0.0f);
  if (tokens == 0)
    return result;
  for (int64_t b = 0; b < settings.batch; ++b)
    for (int64_t h = 0; h < settings.kvHeads; ++h) {
      int64_t length = sequenceLengths[b];
      if (length == 0)
        continue;
      // One sequence's rows, gathered, then the scheme's own dequantize.
      std::vector<uint8_t> rowCodes(length * dim);
      std::vector<float> rowScaleValues(length * width);
      for (int64_t t = 0; t < length; ++t) {
        std::copy_n(codes.begin() + rowOffset(b, h, t, dim), dim,
                    rowCodes.begin() + t * dim);
        if (width)
          std::copy_n(rowScales.begin() + rowOffset(b, h, t, width), width,
                      rowScaleValues.begin() + t * width);
      }
      std::vector<float> rows;
      std::vector<int64_t> shape = {length, dim};
      if (settings.scheme == KvScheme::Int8Groups) {
        Int8GroupTensor tensor{
            shape, settings.int8,
            std::vector<int8_t>(rowCodes.begin(), rowCodes.end()),
            std::move(rowScaleValues)};
        rows = dequantizeInt8Groups(tensor);
      } else {
        float scale = staticScales[staticScales.size() == 1 ? 0 : h];
        Fp8KvTensor tensor{shape,
                           Fp8KvOptions(fp8Format(settings.scheme)),
                           std::move(rowCodes),
                           {scale}};
        rows = dequantizeFp8Kv(tensor);
      }
      std::ranges::copy(rows, result.begin() +
                                  (b * settings.kvHeads + h) * tokens * dim);
    }
  return result;
}

std::vector<float> KvCache::dequantizeKeys() const {
  if (isKivi(settings.scheme))
    return *dequantizeKivi(true, nullptr); // checked when read
  return dequantize(keyCodes, keyRowScales, settings.keyScales);
}

std::vector<float> KvCache::dequantizeValues() const {
  if (isKivi(settings.scheme))
    return *dequantizeKivi(false, nullptr); // checked when read
  return dequantize(valueCodes, valueRowScales, settings.valueScales);
}

std::optional<std::vector<float>> KvCache::attend(std::span<const float> query,
                                                  int64_t qHeads,
                                                  float softmaxScale,
                                                  int64_t splitTokens,
                                                  std::string *error) const {
  DecodeShape shape{settings.batch, qHeads, settings.kvHeads, settings.headDim,
                    std::max<int64_t>(maxLength(), 1)};
  std::vector<float> keys = dequantizeKeys(), values = dequantizeValues();
  if (maxLength() == 0) {
    keys.assign(settings.batch * settings.kvHeads * settings.headDim, 0.0f);
    values = keys;
  }
  if (!validateDecode(shape, sequenceLengths, query.size(), keys.size(),
                      values.size(), error))
    return std::nullopt;
  if (!(splitTokens >= 1)) {
    failWith(error, "the split size must be >= 1 token");
    return std::nullopt;
  }
  return decodeAttentionSplitK(shape, query, keys, values, sequenceLengths,
                               softmaxScale, splitTokens);
}

} // namespace lowbit::kv
