//===- KvCache.h - A quantized KV cache: append, read, attend ---*- C++ -*-===//
//
// The reference cache behind `lowbit kv`: K and V of [batch, kv_heads,
// tokens, head_dim], quantized on append with kv_int8_g<G>,
// kv_fp8_{e4m3,e5m2} or KIVI (kv_kivi_int4/int2 with a full-precision
// residual window, KvCacheKivi.cpp), stored contiguous (a fixed capacity
// per sequence) or
// paged (pages of 16 tokens and a block table, KvPaged.h). Each sequence
// has its own length; an append writes the same number of new tokens to
// every sequence, at its length. A cache lives in a directory that is
// replaced as one unit, so a failed append leaves the old cache whole
// (docs/kv-cache.md); its files are runtime/files/KvCacheDirectory.h's,
// so kv/ itself does no I/O.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_KV_KVCACHE_H
#define LOWBIT_KV_KVCACHE_H

#include "kv/KvKivi.h"
#include "kv/KvPaged.h"
#include "kv/KvQuantize.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lowbit::kv {

enum class KvScheme : uint8_t { Int8Groups, Fp8E4M3, Fp8E5M2, Kivi4, Kivi2 };
bool isKivi(KvScheme scheme);
std::string_view kvSchemeName(KvScheme scheme);
/// "kv_int8" (any G), "kv_int8_g<G>" (G given, e.g. kv_int8_g64),
/// "kv_fp8_e4m3", "kv_fp8_e5m2", "kv_kivi_int4", "kv_kivi_int2".
std::optional<KvScheme> parseKvScheme(std::string_view name,
                                      int64_t *groupSize);

struct KvCacheConfig {
  KvScheme scheme = KvScheme::Int8Groups;
  Int8GroupOptions int8;
  /// KIVI: bits follow the scheme; group size, residual window, keys.
  KiviOptions kivi;
  /// FP8: static scales for K and V, 1 (per tensor) or kvHeads (per head).
  std::vector<float> keyScales, valueScales;
  int64_t batch = 1, kvHeads = 1, headDim = 1;
  bool paged = false;
  /// Contiguous: tokens each sequence can hold.
  int64_t capacity = 0;
  /// Paged: page count and block table [batch, maxBlocks].
  int64_t pages = 0, maxBlocks = 0;
  std::vector<int32_t> blockTable;
};

class KvCache {
public:
  /// An empty cache; nullopt and a message for an invalid configuration.
  static std::optional<KvCache> create(KvCacheConfig config,
                                       std::string *error);

  /// Quantizes and appends `tokens` tokens to every sequence: keys and
  /// values are [batch, kvHeads, tokens, headDim]. Refused, with the cache
  /// unchanged, when a sequence would pass its capacity or reach a block
  /// table entry that names no page.
  bool append(std::span<const float> keys, std::span<const float> values,
              int64_t tokens, std::string *error);

  /// [batch, kvHeads, maxLength, headDim] (maxLength = the longest
  /// sequence); zeros past each sequence's length.
  std::vector<float> dequantizeKeys() const;
  std::vector<float> dequantizeValues() const;
  int64_t maxLength() const;
  /// KIVI's dequantize; fails only on stored groups the format model
  /// refuses (a file edited by hand), so the reader checks them with it.
  std::optional<std::vector<float>> dequantizeKivi(bool keys,
                                                   std::string *error) const;

  /// Decode attention of q [batch, qHeads, headDim] over the cache (f32
  /// split-K, KvAttention.h); qHeads must be a multiple of kvHeads.
  std::optional<std::vector<float>> attend(std::span<const float> query,
                                           int64_t qHeads, float softmaxScale,
                                           int64_t splitTokens,
                                           std::string *error) const;

  const KvCacheConfig &config() const { return settings; }
  const std::vector<int64_t> &lengths() const { return sequenceLengths; }
  /// Scale columns per token row: ceil(headDim / G) for int8 and for
  /// KIVI's per-token groups, else 0.
  int64_t scaleWidth() const;
  /// KIVI: scale columns per token row of the keys (0 when keys are per
  /// channel), bytes per token row of codes, tokens a sequence can hold,
  /// the quantized prefix of a sequence of `length` tokens, and the rows of
  /// the full-precision window (R + G - 1, at least 1).
  int64_t keyScaleWidth() const;
  int64_t codeWidth() const;
  int64_t tokenCapacity() const;
  int64_t kiviQuantizedTokens(int64_t length) const;
  int64_t kiviWindowRows() const;
  /// KIVI: the shape of the scales and zero points of keys or values, and
  /// of the full-precision window.
  std::vector<int64_t> kiviScaleShape(bool keys) const;
  std::vector<int64_t> kiviWindowShape() const;
  /// Shape of the code storage and of the per-row scale storage.
  std::vector<int64_t> storageShape(int64_t width) const;

  // The stored data, as written to and read from the directory.
  std::vector<uint8_t> keyCodes, valueCodes;
  std::vector<float> keyRowScales, valueRowScales;
  std::vector<int64_t> sequenceLengths;
  /// KIVI: zeros (f32: mn, or zero=int's zero point) shaped as the
  /// scales, and the full-precision window
  /// [batch, kvHeads, kiviWindowRows(), headDim] (rows past a sequence's
  /// own residual count are zero). Per-channel key scales and zeros are
  /// [batch, kvHeads, tokenCapacity() / G, headDim], one row per group.
  std::vector<float> keyZeros, valueZeros;
  std::vector<float> keyResidual, valueResidual;

  /// A checked configuration without storage, for a reader that fills
  /// every tensor from its file (runtime/files/KvCacheDirectory.h), so that
  /// no size from meta.json is ever allocated before a file of that size
  /// was read. nullopt and a message as create's.
  static std::optional<KvCache> withoutStorage(KvCacheConfig config,
                                               std::string *error);

private:
  explicit KvCache(KvCacheConfig config) : settings(std::move(config)) {}
  int64_t rowOffset(int64_t sequence, int64_t head, int64_t token,
                    int64_t width) const;
  std::vector<float> dequantize(const std::vector<uint8_t> &codes,
                                const std::vector<float> &rowScales,
                                const std::vector<float> &staticScales) const;
  // KIVI (KvCacheKivi.cpp).
  void allocateKivi(int64_t rows);
  bool appendKivi(std::span<const float> keys, std::span<const float> values,
                  int64_t tokens, std::vector<int64_t> after,
                  std::string *error);

  KvCacheConfig settings;
};

} // namespace lowbit::kv

#endif // LOWBIT_KV_KVCACHE_H
