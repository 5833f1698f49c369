//===- KvCacheDirectory.cpp - A KV cache as a directory of files ---------===//

#include "runtime/files/KvCacheDirectory.h"

#include "runtime/core/AtomicDirectory.h"
#include "runtime/core/Json.h"
#include "runtime/core/Npy.h"

#include <algorithm>
#include <iterator>

namespace lowbit::files {

using json::JsonValue;
using json::parseJson;
using namespace lowbit::kv;

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

} // namespace lowbit::files
