//===- KvKivi.h - KIVI: 2/4-bit asymmetric KV cache, the reference -*- C++
//-*-===//
//
// KIVI (Liu et al., 2024) quantizes keys per channel and values per token,
// both asymmetric (min/max with an integer zero point), and keeps the
// newest tokens in full precision. One KiviStream is the cache of one
// (sequence, kv head): tokens of head_dim channels.
//
// The residual window: after every append, the newest `residual` tokens
// are in full precision, and older tokens are quantized as soon as they
// fill a whole group of `groupSize` tokens. So the quantized prefix holds
// floor(max(0, T - R) / G) * G tokens and the full-precision tail between
// min(T, R) and R + G - 1 tokens.
//
// Each group is a [G, head_dim] tile quantized by lowbit's reference
// quantizer (format/Quantize.h) with the scheme keySchemeOf / valueSchemeOf
// returns, so the arithmetic is that of lowbit's min/max rule
// (docs/quantization.md): scale = (max - min) / (2^b - 1), zero =
// rne(-min / scale), q = clamp(rne(x / scale) + zero, 0, 2^b - 1).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_KV_KVKIVI_H
#define LOWBIT_KV_KVKIVI_H

#include "format/Quantize.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace lowbit::kv {

enum class KeyGranularity : uint8_t {
  /// KIVI: one scale and zero per channel over each group of G tokens.
  PerChannel,
  /// The baseline KIVI compares against: per token, groups of G channels.
  PerToken,
};

struct KiviOptions {
  int bits = 4;           ///< 2 or 4
  int64_t groupSize = 32; ///< G: tokens per key group, channels per
                          ///< value group
  int64_t residual = 128; ///< R in [0, 128]
  KeyGranularity keys = KeyGranularity::PerChannel;
};

bool validateKiviOptions(const KiviOptions &options, std::string *error);
/// The scheme one key group / one value group is quantized with.
Scheme keySchemeOf(const KiviOptions &options);
Scheme valueSchemeOf(const KiviOptions &options);

class KiviStream {
public:
  /// Fails (nullopt and a message) on invalid options or head_dim < 1.
  static std::optional<KiviStream> create(const KiviOptions &options,
                                          int64_t headDim, std::string *error);

  /// Appends `tokens` tokens: keys and values are [tokens, head_dim].
  bool append(std::span<const float> keys, std::span<const float> values,
              int64_t tokens, std::string *error);

  int64_t tokenCount() const { return quantizedTokens + residualTokens(); }
  int64_t quantizedTokenCount() const { return quantizedTokens; }
  int64_t residualTokens() const {
    return int64_t(residualKeys.size()) / headDim;
  }
  const KiviOptions &options() const { return config; }
  /// The quantized groups, oldest first.
  const std::vector<QuantizedTensor> &keyGroups() const { return keyTiles; }
  const std::vector<QuantizedTensor> &valueGroups() const { return valueTiles; }

  /// [tokenCount, head_dim]: the quantized prefix dequantized, then the
  /// full-precision tail.
  std::vector<float> keys() const;
  std::vector<float> values() const;

private:
  KiviStream(const KiviOptions &options, int64_t headDim)
      : config(options), headDim(headDim) {}
  /// Moves whole groups out of the residual while it holds more than R.
  bool flush(std::string *error);

  KiviOptions config;
  int64_t headDim;
  int64_t quantizedTokens = 0;
  std::vector<QuantizedTensor> keyTiles, valueTiles;
  std::vector<float> residualKeys, residualValues;
};

/// Logical storage bits per element of a full KIVI group (code bits plus
/// the f32 scale and the 8-bit zero point shared by G elements).
double kiviBitsPerElement(const KiviOptions &options);

} // namespace lowbit::kv

#endif // LOWBIT_KV_KVKIVI_H
