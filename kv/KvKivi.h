//===- KvKivi.h - KIVI: 2/4-bit asymmetric KV cache, the reference -*- C++
//-*-===//
//
// KIVI (Liu et al., 2024) quantizes keys per channel and values per token,
// both asymmetric (min/max with a zero), and keeps the newest tokens in
// full precision. One KiviStream is the cache of one
// (sequence, kv head): tokens of head_dim channels.
//
// The residual window: after every append, the newest `residual` tokens
// are in full precision, and older tokens are quantized as soon as they
// fill a whole group of `groupSize` tokens. So the quantized prefix holds
// floor(max(0, T - R) / G) * G tokens and the full-precision tail between
// min(T, R) and R + G - 1 tokens.
//
// Each group is a [G, head_dim] tile (quantizeKiviTile). By default
// (KiviZero::Float) with KIVI's own quantizer (jy-yuan/KIVI,
// quant/new_pack.py), in f32: mn and mx the group's raw min and max, s =
// (mx - mn) / (2^b - 1), q = rne(clamp((x - mn) / s, 0, 2^b - 1)), value q
// * s + mn (two roundings, no fma). KiviZero::Integer is lowbit's min/max
// rule instead (format/Quantize.h with keySchemeOf / valueSchemeOf;
// docs/quantization.md): the range widened to include 0, an integer zero.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_KV_KVKIVI_H
#define LOWBIT_KV_KVKIVI_H

#include "format/Quantize.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lowbit::kv {

enum class KeyGranularity : uint8_t {
  /// KIVI: one scale and zero per channel over each group of G tokens.
  PerChannel,
  /// The baseline KIVI compares against: per token, groups of G channels.
  PerToken,
};

/// How a group's zero is chosen (docs/kv-cache.md, KIVI).
enum class KiviZero : uint8_t {
  /// KIVI's own: the group's raw min as a float zero (q * s + mn). NaN
  /// elements are skipped by min and max and get code 0, as does every
  /// element of a group whose scale is 0 or whose elements are all NaN.
  Float,
  /// lowbit's min/max rule: the range widened to include 0, an integer
  /// zero point in [0, 2^b - 1] (stored as an f32 holding that integer).
  Integer,
};
/// "float" or "int", the spelling in specs and on the command line.
std::string_view kiviZeroName(KiviZero zero);
std::optional<KiviZero> parseKiviZero(std::string_view name);

struct KiviOptions {
  int bits = 4;           ///< 2 or 4
  int64_t groupSize = 32; ///< G: tokens per key group, channels per
                          ///< value group
  int64_t residual = 128; ///< R in [0, 128]
  KeyGranularity keys = KeyGranularity::PerChannel;
  KiviZero zero = KiviZero::Float;
};

bool validateKiviOptions(const KiviOptions &options, std::string *error);
/// The scheme one key group / one value group is quantized with: its
/// packing and scale layout hold for both zeros, its arithmetic for
/// KiviZero::Integer.
Scheme keySchemeOf(const KiviOptions &options);
Scheme valueSchemeOf(const KiviOptions &options);

/// One quantized group of `rows` tokens of `cols` channels: codes packed
/// and scales laid out as codesShape / scaleShape of the side's scheme
/// (keys per channel: [1, cols]; per-token groups: [rows, ceil(cols /
/// G)]), one f32 zero per scale (mn, or the integer zero point).
struct KiviTile {
  int64_t rows = 0, cols = 0;
  std::vector<uint8_t> codes;
  std::vector<float> scales, zeros;
};

/// Quantizes a [rows, cols] tile of keys (`keys`) or values.
std::optional<KiviTile> quantizeKiviTile(const KiviOptions &options, bool keys,
                                         std::span<const float> x, int64_t rows,
                                         int64_t cols, std::string *error);
/// The tile's [rows, cols] values; fails (KiviZero::Integer only) on
/// parameters the format model refuses, or a zero that is not an integer
/// in [0, 2^b - 1].
std::optional<std::vector<float>> dequantizeKiviTile(const KiviOptions &options,
                                                     bool keys,
                                                     const KiviTile &tile,
                                                     std::string *error);

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
  const std::vector<KiviTile> &keyGroups() const { return keyTiles; }
  const std::vector<KiviTile> &valueGroups() const { return valueTiles; }

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
  std::vector<KiviTile> keyTiles, valueTiles;
  std::vector<float> residualKeys, residualValues;
};

/// Logical storage bits per element of a full KIVI group (code bits plus
/// the f32 scale and the f32 zero shared by G elements).
double kiviBitsPerElement(const KiviOptions &options);

} // namespace lowbit::kv

#endif // LOWBIT_KV_KVKIVI_H
