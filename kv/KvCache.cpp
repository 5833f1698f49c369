//===- KvCache.cpp - A quantized KV cache: append, read, attend -----------===//

#include "kv/KvCache.h"

#include "kv/KvAttention.h"
#include "runtime/core/AtomicDirectory.h"
#include "runtime/core/Json.h"
#include "runtime/core/Npy.h"

#include <algorithm>
#include <cmath>

namespace lowbit::kv {

using json::JsonValue;
using json::parseJson;

namespace {

bool failWith(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
  return false;
}

constexpr std::string_view kCacheFormat = "lowbit-kv-cache-1";
constexpr std::string_view kFileNames[] = {
    "meta.json",      "k_codes.npy",     "v_codes.npy", "k_scales.npy",
    "v_scales.npy",   "block_table.npy", "k_zeros.npy", "v_zeros.npy",
    "k_residual.npy", "v_residual.npy"};

bool isCacheFile(std::string_view name) {
  return std::ranges::find(kFileNames, name) != std::end(kFileNames);
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

namespace {

npy::DType codesType(const KvCache &cache) {
  return cache.config().scheme == KvScheme::Int8Groups ? npy::DType::I8
                                                       : npy::DType::U8;
}

npy::Array codesArray(const KvCache &cache, const std::vector<uint8_t> &codes) {
  return npy::Array::fromValues<uint8_t>(
      codesType(cache), cache.storageShape(cache.codeWidth()), codes);
}

npy::Array scalesArray(const KvCache &cache, bool keys,
                       const std::vector<float> &rows,
                       const std::vector<float> &staticScales) {
  if (isKivi(cache.config().scheme))
    return npy::Array::fromValues<float>(npy::DType::F32,
                                         cache.kiviScaleShape(keys), rows);
  if (cache.config().scheme == KvScheme::Int8Groups)
    return npy::Array::fromValues<float>(
        npy::DType::F32, cache.storageShape(cache.scaleWidth()), rows);
  return npy::Array::fromValues<float>(
      npy::DType::F32, {int64_t(staticScales.size())}, staticScales);
}

/// An integer member of meta.json in [minimum, maximum].
std::optional<int64_t> metaInt(const JsonValue &meta, std::string_view key,
                               int64_t minimum, int64_t maximum,
                               std::string *error) {
  const JsonValue *value = meta.get(key);
  std::optional<int64_t> number = value ? value->asInt() : std::nullopt;
  if (!number || *number < minimum || *number > maximum) {
    failWith(error, "meta.json: '" + std::string(key) +
                        "' must be an integer in [" + std::to_string(minimum) +
                        ", " + std::to_string(maximum) + "]");
    return std::nullopt;
  }
  return number;
}

} // namespace

bool writeKvCacheDirectory(const std::string &path, const KvCache &cache,
                           std::string *error) {
  const KvCacheConfig &config = cache.config();
  JsonValue meta = JsonValue::object();
  meta.set("format", JsonValue::string(std::string(kCacheFormat)));
  meta.set("scheme",
           JsonValue::string(std::string(kvSchemeName(config.scheme))));
  if (config.scheme == KvScheme::Int8Groups) {
    meta.set("group", JsonValue::number(config.int8.groupSize));
    meta.set("convention", JsonValue::string(std::string(
                               scaleConventionName(config.int8.convention))));
    meta.set("epsilon", JsonValue::number(double(config.int8.epsilon)));
  }
  if (isKivi(config.scheme)) {
    meta.set("group", JsonValue::number(config.kivi.groupSize));
    meta.set("residual", JsonValue::number(config.kivi.residual));
    meta.set("keys",
             JsonValue::string(config.kivi.keys == KeyGranularity::PerChannel
                                   ? "per_channel"
                                   : "per_token"));
    meta.set("zero",
             JsonValue::string(std::string(kiviZeroName(config.kivi.zero))));
  }
  meta.set("batch", JsonValue::number(config.batch));
  meta.set("kv_heads", JsonValue::number(config.kvHeads));
  meta.set("head_dim", JsonValue::number(config.headDim));
  meta.set("layout", JsonValue::string(config.paged ? "paged" : "contiguous"));
  if (config.paged) {
    meta.set("pages", JsonValue::number(config.pages));
    meta.set("max_blocks", JsonValue::number(config.maxBlocks));
  } else {
    meta.set("capacity", JsonValue::number(config.capacity));
  }
  JsonValue lengths = JsonValue::array();
  for (int64_t length : cache.lengths())
    lengths.push(JsonValue::number(length));
  meta.set("lengths", std::move(lengths));

  std::vector<runtime::DirectoryFile> files;
  files.push_back({"meta.json", meta.serialize()});
  std::vector<std::pair<std::string, npy::Array>> arrays = {
      {"k_codes.npy", codesArray(cache, cache.keyCodes)},
      {"v_codes.npy", codesArray(cache, cache.valueCodes)},
      {"k_scales.npy",
       scalesArray(cache, true, cache.keyRowScales, config.keyScales)},
      {"v_scales.npy",
       scalesArray(cache, false, cache.valueRowScales, config.valueScales)}};
  if (isKivi(config.scheme)) {
    arrays.push_back({"k_zeros.npy",
                      npy::Array::fromValues<float>(npy::DType::F32,
                                                    cache.kiviScaleShape(true),
                                                    cache.keyZeros)});
    arrays.push_back({"v_zeros.npy",
                      npy::Array::fromValues<float>(npy::DType::F32,
                                                    cache.kiviScaleShape(false),
                                                    cache.valueZeros)});
    arrays.push_back(
        {"k_residual.npy",
         npy::Array::fromValues<float>(npy::DType::F32, cache.kiviWindowShape(),
                                       cache.keyResidual)});
    arrays.push_back(
        {"v_residual.npy",
         npy::Array::fromValues<float>(npy::DType::F32, cache.kiviWindowShape(),
                                       cache.valueResidual)});
  }
  if (config.paged)
    arrays.push_back({"block_table.npy",
                      npy::Array::fromValues<int32_t>(
                          npy::DType::I32, {config.batch, config.maxBlocks},
                          config.blockTable)});
  for (auto &[name, array] : arrays) {
    std::optional<std::string> bytes = npy::serializeNpy(array, error);
    if (!bytes)
      return false;
    files.push_back({name, std::move(*bytes)});
  }
  return runtime::replaceDirectory(path, files, isCacheFile, error);
}

std::optional<KvCache> readKvCacheDirectory(const std::string &path,
                                            std::string *error) {
  runtime::DirectoryReader directory;
  if (!directory.open(path, error))
    return std::nullopt;
  auto fail = [&](std::string message) -> std::optional<KvCache> {
    failWith(error, path + ": " + message);
    return std::nullopt;
  };
  std::string text;
  if (!directory.read("meta.json", 1 << 20, text, error))
    return fail("cannot read meta.json (not a KV cache directory?)");
  std::string reason;
  std::optional<JsonValue> meta = parseJson(text, &reason);
  if (!meta || !meta->isObject())
    return fail("meta.json: " + (meta ? "not a JSON object" : reason));
  const JsonValue *format = meta->get("format");
  if (!format || !format->isString() || format->text() != kCacheFormat)
    return fail("meta.json: not a '" + std::string(kCacheFormat) + "' cache");
  KvCacheConfig config;
  const JsonValue *scheme = meta->get("scheme");
  std::optional<KvScheme> kind = scheme && scheme->isString()
                                     ? parseKvScheme(scheme->text(), nullptr)
                                     : std::nullopt;
  if (!kind)
    return fail("meta.json: unknown scheme");
  config.scheme = *kind;
  const int64_t limit = int64_t(1) << 30;
  auto number = [&](std::string_view key, int64_t minimum, int64_t maximum,
                    int64_t &into) {
    std::optional<int64_t> value =
        metaInt(*meta, key, minimum, maximum, &reason);
    if (value)
      into = *value;
    return value.has_value();
  };
  if (!number("batch", 1, limit, config.batch) ||
      !number("kv_heads", 1, limit, config.kvHeads) ||
      !number("head_dim", 1, limit, config.headDim))
    return fail(reason);
  if (config.scheme == KvScheme::Int8Groups) {
    const JsonValue *convention = meta->get("convention");
    std::optional<ScaleConvention> parsed =
        convention && convention->isString()
            ? parseScaleConvention(convention->text())
            : std::nullopt;
    const JsonValue *epsilon = meta->get("epsilon");
    std::optional<double> epsilonValue =
        epsilon ? epsilon->asDouble() : std::nullopt;
    if (!number("group", 1, limit, config.int8.groupSize))
      return fail(reason);
    if (!parsed || !epsilonValue)
      return fail("meta.json: an int8 cache needs 'convention' and "
                  "'epsilon'");
    config.int8.convention = *parsed;
    config.int8.epsilon = float(*epsilonValue);
  }
  if (isKivi(config.scheme)) {
    const JsonValue *keys = meta->get("keys");
    if (!number("group", 1, 4096, config.kivi.groupSize) ||
        !number("residual", 0, 128, config.kivi.residual))
      return fail(reason);
    if (!keys || !keys->isString() ||
        (keys->text() != "per_channel" && keys->text() != "per_token"))
      return fail("meta.json: 'keys' must be \"per_channel\" or "
                  "\"per_token\"");
    config.kivi.keys = keys->text() == "per_channel"
                           ? KeyGranularity::PerChannel
                           : KeyGranularity::PerToken;
    const JsonValue *zero = meta->get("zero");
    std::optional<KiviZero> parsedZero;
    if (zero && zero->isString())
      parsedZero = parseKiviZero(zero->text());
    if (!parsedZero)
      return fail("meta.json: 'zero' must be \"float\" or \"int\"");
    config.kivi.zero = *parsedZero;
  }
  const JsonValue *layout = meta->get("layout");
  if (!layout || !layout->isString() ||
      (layout->text() != "paged" && layout->text() != "contiguous"))
    return fail("meta.json: 'layout' must be \"contiguous\" or \"paged\"");
  config.paged = layout->text() == "paged";
  if (config.paged ? !number("pages", 1, limit, config.pages) ||
                         !number("max_blocks", 1, limit, config.maxBlocks)
                   : !number("capacity", 1, limit, config.capacity))
    return fail(reason);

  auto readArray = [&](std::string_view name) -> std::optional<npy::Array> {
    std::string bytes;
    if (!directory.read(std::string(name), size_t(1) << 41, bytes, &reason)) {
      reason = "cannot read " + std::string(name);
      return std::nullopt;
    }
    std::optional<npy::Array> array =
        npy::parseNpy(bytes, &reason, npy::kMaxNpyRank);
    if (!array)
      reason = std::string(name) + ": " + reason;
    return array;
  };
  auto expect = [&](const npy::Array &array, std::string_view name,
                    npy::DType dtype, const std::vector<int64_t> &shape) {
    if (array.dtype == dtype && array.shape == shape)
      return true;
    reason = std::string(name) + ": expected " +
             std::string(npy::dtypeName(dtype)) + " of shape " +
             npy::Array{dtype, shape, {}}.shapeText() + ", got " +
             std::string(npy::dtypeName(array.dtype)) + " " + array.shapeText();
    return false;
  };
  if (config.paged) {
    std::optional<npy::Array> table = readArray("block_table.npy");
    if (!table || !expect(*table, "block_table.npy", npy::DType::I32,
                          {config.batch, config.maxBlocks}))
      return fail(reason);
    config.blockTable = table->values<int32_t>();
  }
  std::optional<npy::Array> scaleFiles[2] = {readArray("k_scales.npy"),
                                             readArray("v_scales.npy")};
  if (!scaleFiles[0] || !scaleFiles[1])
    return fail(reason);
  if (config.scheme == KvScheme::Fp8E4M3 ||
      config.scheme == KvScheme::Fp8E5M2) {
    for (int side = 0; side < 2; ++side) {
      const npy::Array &array = *scaleFiles[side];
      if (array.dtype != npy::DType::F32 || array.shape.size() != 1)
        return fail(std::string(side ? "v" : "k") +
                    "_scales.npy: expected a 1-D float32 array");
      (side ? config.valueScales : config.keyScales) = array.values<float>();
    }
  }
  std::string createError;
  std::optional<KvCache> cache = KvCache::withoutStorage(config, &createError);
  if (!cache)
    return fail("meta.json: " + createError);

  const JsonValue *lengths = meta->get("lengths");
  if (!lengths || !lengths->isArray() ||
      int64_t(lengths->items().size()) != config.batch)
    return fail("meta.json: 'lengths' must hold one length per sequence");
  std::vector<int64_t> lengthValues;
  for (const JsonValue &item : lengths->items()) {
    std::optional<int64_t> length = item.asInt();
    if (!length || *length < 0 || *length > limit)
      return fail("meta.json: a sequence length is not an integer in "
                  "[0, 2^30]");
    lengthValues.push_back(*length);
  }
  if (config.paged) {
    PagedLayout pagedLayout{config.pages, config.kvHeads,   1,
                            config.batch, config.maxBlocks, config.blockTable};
    if (!validatePagedLayout(pagedLayout, lengthValues, &reason))
      return fail(reason);
  } else {
    for (int64_t length : lengthValues)
      if (length > config.capacity)
        return fail("meta.json: a sequence length passes the capacity");
  }
  cache->sequenceLengths = lengthValues;

  for (int side = 0; side < 2; ++side) {
    std::string name = side ? "v_codes.npy" : "k_codes.npy";
    std::optional<npy::Array> codes = readArray(name);
    if (!codes || !expect(*codes, name, codesType(*cache),
                          cache->storageShape(cache->codeWidth())))
      return fail(reason);
    (side ? cache->valueCodes : cache->keyCodes) = codes->values<uint8_t>();
    if (config.scheme == KvScheme::Int8Groups) {
      std::string scaleName = side ? "v_scales.npy" : "k_scales.npy";
      if (!expect(*scaleFiles[side], scaleName, npy::DType::F32,
                  cache->storageShape(cache->scaleWidth())))
        return fail(reason);
      (side ? cache->valueRowScales : cache->keyRowScales) =
          scaleFiles[side]->values<float>();
    }
    if (isKivi(config.scheme)) {
      std::string prefix = side ? "v_" : "k_";
      std::vector<int64_t> scaleShape = cache->kiviScaleShape(side == 0);
      std::optional<npy::Array> zeros = readArray(prefix + "zeros.npy");
      std::optional<npy::Array> window = readArray(prefix + "residual.npy");
      if (!zeros || !window ||
          !expect(*scaleFiles[side], prefix + "scales.npy", npy::DType::F32,
                  scaleShape) ||
          !expect(*zeros, prefix + "zeros.npy", npy::DType::F32, scaleShape) ||
          !expect(*window, prefix + "residual.npy", npy::DType::F32,
                  cache->kiviWindowShape()))
        return fail(reason);
      (side ? cache->valueRowScales : cache->keyRowScales) =
          scaleFiles[side]->values<float>();
      (side ? cache->valueZeros : cache->keyZeros) = zeros->values<float>();
      (side ? cache->valueResidual : cache->keyResidual) =
          window->values<float>();
      if (!cache->dequantizeKivi(side == 0, &reason))
        return fail(
            std::string(side ? "the stored values" : "the stored keys") + " (" +
            prefix + "codes.npy, " + prefix + "scales.npy, " + prefix +
            "zeros.npy) do not dequantize: " + reason);
    }
  }
  return cache;
}

} // namespace lowbit::kv
