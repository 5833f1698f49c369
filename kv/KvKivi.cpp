//===- KvKivi.cpp - KIVI: 2/4-bit asymmetric KV cache, the reference ------===//

#include "kv/KvKivi.h"

namespace lowbit::kv {

namespace {

void setError(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
}

Scheme asymmetricScheme(const KiviOptions &options, ScaleSpec scale) {
  scale.rule = ScaleRule::MinMax;
  scale.zeroPoint = true;
  scale.type = ScaleType::F32;
  scale.mode = ScaleMode::Dynamic;
  return Scheme{"", *makeIntFormat(options.bits, /*isSigned=*/false), scale,
                options.bits == 4 ? Packing::Nibble : Packing::Byte};
}

/// The tiles dequantized, oldest first, then the full-precision tail.
std::vector<float> joined(const std::vector<QuantizedTensor> &tiles,
                          const std::vector<float> &residual) {
  std::vector<float> result;
  for (const QuantizedTensor &tile : tiles) {
    std::vector<float> values = *dequantize(tile, nullptr);
    result.insert(result.end(), values.begin(), values.end());
  }
  result.insert(result.end(), residual.begin(), residual.end());
  return result;
}

} // namespace

bool validateKiviOptions(const KiviOptions &options, std::string *error) {
  if (options.bits != 2 && options.bits != 4) {
    setError(error,
             "KIVI takes 2 or 4 bits; got " + std::to_string(options.bits));
    return false;
  }
  if (options.groupSize < 1 || options.groupSize > 4096) {
    setError(error, "KIVI group size " + std::to_string(options.groupSize) +
                        " is not in [1, 4096]");
    return false;
  }
  if (options.residual < 0 || options.residual > 128) {
    setError(error, "KIVI residual window " + std::to_string(options.residual) +
                        " is not in [0, 128]");
    return false;
  }
  return true;
}

Scheme keySchemeOf(const KiviOptions &options) {
  ScaleSpec scale;
  if (options.keys == KeyGranularity::PerChannel) {
    scale.granularity = Granularity::PerChannel; // one scale per column
    scale.axis = 1;
  } else {
    scale.granularity = Granularity::Group;
    scale.axis = 1;
    scale.groupSize = int(options.groupSize);
    scale.allowTail = true;
  }
  return asymmetricScheme(options, scale);
}

Scheme valueSchemeOf(const KiviOptions &options) {
  ScaleSpec scale;
  scale.granularity = Granularity::Group;
  scale.axis = 1;
  scale.groupSize = int(options.groupSize);
  scale.allowTail = true;
  return asymmetricScheme(options, scale);
}

std::optional<KiviStream> KiviStream::create(const KiviOptions &options,
                                             int64_t headDim,
                                             std::string *error) {
  if (!validateKiviOptions(options, error))
    return std::nullopt;
  if (headDim < 1 || headDim > kMaxScaleExtent) {
    setError(error,
             "head_dim " + std::to_string(headDim) + " is not in [1, 2^30]");
    return std::nullopt;
  }
  return KiviStream(options, headDim);
}

bool KiviStream::append(std::span<const float> keys,
                        std::span<const float> values, int64_t tokens,
                        std::string *error) {
  if (tokens < 0 || int64_t(keys.size()) != tokens * headDim ||
      int64_t(values.size()) != tokens * headDim) {
    setError(error, "append needs keys and values of [" +
                        std::to_string(tokens) + ", " +
                        std::to_string(headDim) + "]");
    return false;
  }
  residualKeys.insert(residualKeys.end(), keys.begin(), keys.end());
  residualValues.insert(residualValues.end(), values.begin(), values.end());
  return flush(error);
}

bool KiviStream::flush(std::string *error) {
  int64_t group = config.groupSize;
  while (residualTokens() - config.residual >= group) {
    int64_t count = group * headDim;
    std::span<const float> keyTile(residualKeys.data(), count);
    std::span<const float> valueTile(residualValues.data(), count);
    std::optional<QuantizedTensor> keyCodes =
        quantize(keySchemeOf(config), keyTile, group, headDim, error);
    std::optional<QuantizedTensor> valueCodes =
        quantize(valueSchemeOf(config), valueTile, group, headDim, error);
    if (!keyCodes || !valueCodes)
      return false;
    keyTiles.push_back(std::move(*keyCodes));
    valueTiles.push_back(std::move(*valueCodes));
    residualKeys.erase(residualKeys.begin(), residualKeys.begin() + count);
    residualValues.erase(residualValues.begin(),
                         residualValues.begin() + count);
    quantizedTokens += group;
  }
  return true;
}

std::vector<float> KiviStream::keys() const {
  return joined(keyTiles, residualKeys);
}

std::vector<float> KiviStream::values() const {
  return joined(valueTiles, residualValues);
}

double kiviBitsPerElement(const KiviOptions &options) {
  return options.bits + (32.0 + 8.0) / double(options.groupSize);
}

} // namespace lowbit::kv
