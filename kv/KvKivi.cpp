//===- KvKivi.cpp - KIVI: 2/4-bit asymmetric KV cache, the reference ------===//

#include "kv/KvKivi.h"

#include <algorithm>
#include <bit>
#include <cmath>

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

/// The scale and zero index of element (r, c) of a tile: its channel for
/// keys per channel, else its row's group of G channels (`params` is the
/// scheme's scaleShape).
size_t groupIndex(const Scheme &scheme, bool perChannel, Shape2D params,
                  int64_t r, int64_t c) {
  return size_t(perChannel ? c : r * params.cols + c / scheme.scale.groupSize);
}

/// KIVI's own quantizer (KiviZero::Float) on a [rows, cols] tile: each
/// group's raw min and max (NaN skipped, in element order, std::min's and
/// std::max's tie rules as the kernels' stdMin/stdMax), s = (mx - mn) /
/// qmax, q = rne(clamp((x - mn) / s, 0, qmax)) with NaN giving 0.
KiviTile quantizeFloatZero(const Scheme &scheme, bool perChannel,
                           std::span<const float> x, int64_t rows,
                           int64_t cols) {
  const float qmax = float(scheme.element.codeMask());
  Shape2D params = scaleShape(scheme, rows, cols);
  KiviTile tile;
  tile.rows = rows;
  tile.cols = cols;
  size_t groups = size_t(params.rows * params.cols);
  std::vector<float> low(groups, INFINITY), high(groups, -INFINITY);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      float value = x[r * cols + c];
      if (std::isnan(value))
        continue;
      size_t g = groupIndex(scheme, perChannel, params, r, c);
      low[g] = value < low[g] ? value : low[g];
      high[g] = high[g] < value ? value : high[g];
    }
  for (size_t g = 0; g < groups; ++g) {
    if (high[g] < low[g]) // every element NaN
      low[g] = high[g] = 0.0f;
    tile.zeros.push_back(low[g]);
    tile.scales.push_back((high[g] - low[g]) / qmax);
  }
  Shape2D packed = codesShape(scheme, rows, cols);
  bool nibbles = scheme.packing == Packing::Nibble;
  tile.codes.assign(size_t(packed.rows * packed.cols), 0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      size_t g = groupIndex(scheme, perChannel, params, r, c);
      float scaled = (x[r * cols + c] - tile.zeros[g]) / tile.scales[g];
      if (std::isnan(scaled))
        scaled = 0.0f;
      scaled = std::clamp(scaled, 0.0f, qmax);
      auto code = uint8_t(std::nearbyint(scaled)); // RNE, the default mode
      if (nibbles)
        tile.codes[r * packed.cols + c / 2] |= uint8_t(code << (c % 2 * 4));
      else
        tile.codes[r * packed.cols + c] = code;
    }
  return tile;
}

/// The values of a KiviZero::Float tile: q * s + mn.
std::vector<float> dequantizeFloatZero(const Scheme &scheme, bool perChannel,
                                       const KiviTile &tile) {
  Shape2D params = scaleShape(scheme, tile.rows, tile.cols);
  Shape2D packed = codesShape(scheme, tile.rows, tile.cols);
  bool nibbles = scheme.packing == Packing::Nibble;
  std::vector<float> values;
  values.reserve(size_t(tile.rows * tile.cols));
  for (int64_t r = 0; r < tile.rows; ++r)
    for (int64_t c = 0; c < tile.cols; ++c) {
      size_t g = groupIndex(scheme, perChannel, params, r, c);
      uint8_t code =
          nibbles ? uint8_t(tile.codes[r * packed.cols + c / 2] >> (c % 2 * 4) &
                            0xF)
                  : tile.codes[r * packed.cols + c];
      float product = float(code) * tile.scales[g];
      values.push_back(product + tile.zeros[g]);
    }
  return values;
}

/// The tiles dequantized, oldest first, then the full-precision tail.
std::vector<float> joined(const KiviOptions &options, bool keys,
                          const std::vector<KiviTile> &tiles,
                          const std::vector<float> &residual) {
  std::vector<float> result;
  for (const KiviTile &tile : tiles) {
    std::vector<float> values =
        *dequantizeKiviTile(options, keys, tile, nullptr);
    result.insert(result.end(), values.begin(), values.end());
  }
  result.insert(result.end(), residual.begin(), residual.end());
  return result;
}

} // namespace

std::string_view kiviZeroName(KiviZero zero) {
  return zero == KiviZero::Float ? "float" : "int";
}

std::optional<KiviZero> parseKiviZero(std::string_view name) {
  if (name == "float")
    return KiviZero::Float;
  if (name == "int")
    return KiviZero::Integer;
  return std::nullopt;
}

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

std::optional<KiviTile> quantizeKiviTile(const KiviOptions &options, bool keys,
                                         std::span<const float> x, int64_t rows,
                                         int64_t cols, std::string *error) {
  Scheme scheme = keys ? keySchemeOf(options) : valueSchemeOf(options);
  bool perChannel = keys && options.keys == KeyGranularity::PerChannel;
  if (options.zero == KiviZero::Float)
    return quantizeFloatZero(scheme, perChannel, x, rows, cols);
  std::optional<QuantizedTensor> quantized =
      quantize(scheme, x, rows, cols, error);
  if (!quantized)
    return std::nullopt;
  KiviTile tile;
  tile.rows = rows;
  tile.cols = cols;
  tile.codes = std::move(quantized->codes);
  for (uint32_t code : quantized->scaleCodes)
    tile.scales.push_back(std::bit_cast<float>(code));
  tile.zeros.assign(quantized->zeros.begin(), quantized->zeros.end());
  return tile;
}

std::optional<std::vector<float>> dequantizeKiviTile(const KiviOptions &options,
                                                     bool keys,
                                                     const KiviTile &tile,
                                                     std::string *error) {
  Scheme scheme = keys ? keySchemeOf(options) : valueSchemeOf(options);
  bool perChannel = keys && options.keys == KeyGranularity::PerChannel;
  if (options.zero == KiviZero::Float)
    return dequantizeFloatZero(scheme, perChannel, tile);
  QuantizedTensor quantized(scheme);
  quantized.rows = tile.rows;
  quantized.cols = tile.cols;
  quantized.codes = tile.codes;
  for (float scale : tile.scales)
    quantized.scaleCodes.push_back(std::bit_cast<uint32_t>(scale));
  for (float zero : tile.zeros) {
    // An integer zero point, stored as f32: refuse anything else rather
    // than truncate it.
    if (!(zero >= 0.0f && zero <= 255.0f) || zero != std::floor(zero)) {
      setError(error, "zero point " + std::to_string(zero) +
                          " is not an integer in [0, 255]");
      return std::nullopt;
    }
    quantized.zeros.push_back(uint8_t(zero));
  }
  return lowbit::dequantize(quantized, error);
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
    std::optional<KiviTile> keyCodes =
        quantizeKiviTile(config, true, keyTile, group, headDim, error);
    std::optional<KiviTile> valueCodes =
        quantizeKiviTile(config, false, valueTile, group, headDim, error);
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
  return joined(config, true, keyTiles, residualKeys);
}

std::vector<float> KiviStream::values() const {
  return joined(config, false, valueTiles, residualValues);
}

double kiviBitsPerElement(const KiviOptions &options) {
  return options.bits + (32.0 + 32.0) / double(options.groupSize);
}

} // namespace lowbit::kv
