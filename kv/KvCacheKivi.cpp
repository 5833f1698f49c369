//===- KvCacheKivi.cpp - KIVI in the quantized KV cache
//--------------------===//
//
// kv_kivi_int4 / kv_kivi_int2 in KvCache: the arithmetic of KiviStream
// (KvKivi.h), stored in token rows so that contiguous and paged caches
// hold it the same way. A sequence of T tokens keeps its quantized prefix
// (kiviQuantizedTokens(T), whole groups of G) as packed codes in the token
// rows, and the rest, at most R + G - 1 tokens, in a full-precision window
// of its own. Keys per channel have one scale and zero point per channel
// and group of G tokens (a row of [batch, kv_heads, groups, head_dim]),
// both f32 (the zero is KIVI's float mn, or zero=int's integer point);
// keys per token and values have ceil(head_dim / G) per token row, paged
// like the codes (docs/kv-cache.md).
//
//===----------------------------------------------------------------------===//

#include "kv/KvCache.h"

#include <algorithm>

namespace lowbit::kv {

namespace {

/// The group of a stored tile's scale and zero-point entries: for keys per
/// channel one row per group ([1, head_dim] in the tile), for per-token
/// groups one row per token ([G, width] in the tile).
struct KiviSide {
  std::vector<uint8_t> *codes;
  std::vector<float> *scales;
  std::vector<float> *zeros;
  std::vector<float> *residual;
  bool keys;
  /// Scale entries per token row; 0 for per-channel groups.
  int64_t rowWidth;
};

} // namespace

bool isKivi(KvScheme scheme) {
  return scheme == KvScheme::Kivi4 || scheme == KvScheme::Kivi2;
}

int64_t KvCache::keyScaleWidth() const {
  if (isKivi(settings.scheme) &&
      settings.kivi.keys == KeyGranularity::PerChannel)
    return 0;
  return scaleWidth();
}

int64_t KvCache::codeWidth() const {
  if (!isKivi(settings.scheme))
    return settings.headDim;
  return codesShape(valueSchemeOf(settings.kivi), 1, settings.headDim).cols;
}

int64_t KvCache::tokenCapacity() const {
  return settings.paged ? settings.maxBlocks * kPageTokens : settings.capacity;
}

int64_t KvCache::kiviQuantizedTokens(int64_t length) const {
  int64_t group = settings.kivi.groupSize;
  return std::max<int64_t>(0, length - settings.kivi.residual) / group * group;
}

int64_t KvCache::kiviWindowRows() const {
  return std::max<int64_t>(1, settings.kivi.residual + settings.kivi.groupSize -
                                  1);
}

/// Rows of the per-channel key scales: one per group a sequence can fill.
static int64_t keyGroupRows(const KvCache &cache) {
  return std::max<int64_t>(1, cache.tokenCapacity() /
                                  cache.config().kivi.groupSize);
}

std::vector<int64_t> KvCache::kiviScaleShape(bool keys) const {
  if (keys && !keyScaleWidth())
    return {settings.batch, settings.kvHeads, keyGroupRows(*this),
            settings.headDim};
  return storageShape(scaleWidth());
}

std::vector<int64_t> KvCache::kiviWindowShape() const {
  return {settings.batch, settings.kvHeads, kiviWindowRows(), settings.headDim};
}

void KvCache::allocateKivi(int64_t rows) {
  const KvCacheConfig &config = settings;
  int64_t heads = config.batch * config.kvHeads;
  keyCodes.assign(rows * codeWidth(), 0);
  valueCodes.assign(rows * codeWidth(), 0);
  int64_t keyEntries = keyScaleWidth()
                           ? rows * keyScaleWidth()
                           : heads * keyGroupRows(*this) * config.headDim;
  keyRowScales.assign(keyEntries, 0.0f);
  keyZeros.assign(keyEntries, 0.0f);
  valueRowScales.assign(rows * scaleWidth(), 0.0f);
  valueZeros.assign(rows * scaleWidth(), 0.0f);
  keyResidual.assign(heads * kiviWindowRows() * config.headDim, 0.0f);
  valueResidual = keyResidual;
}

bool KvCache::appendKivi(std::span<const float> keys,
                         std::span<const float> values, int64_t tokens,
                         std::vector<int64_t> after, std::string *error) {
  const KvCacheConfig &config = settings;
  const int64_t dim = config.headDim, group = config.kivi.groupSize;
  const int64_t window = kiviWindowRows(), width = codeWidth();
  // Work on copies: a failed quantization leaves the cache unchanged.
  std::vector<uint8_t> codes[2] = {keyCodes, valueCodes};
  std::vector<float> scales[2] = {keyRowScales, valueRowScales};
  std::vector<float> zeros[2] = {keyZeros, valueZeros};
  std::vector<float> residual[2] = {keyResidual, valueResidual};
  KiviSide sides[2] = {
      {&codes[0], &scales[0], &zeros[0], &residual[0], true, keyScaleWidth()},
      {&codes[1], &scales[1], &zeros[1], &residual[1], false, scaleWidth()}};
  std::span<const float> inputs[2] = {keys, values};
  for (int64_t b = 0; b < config.batch; ++b) {
    int64_t quantized = kiviQuantizedTokens(sequenceLengths[b]);
    int64_t held = sequenceLengths[b] - quantized;
    int64_t quantizedAfter = kiviQuantizedTokens(after[b]);
    for (int64_t h = 0; h < config.kvHeads; ++h) {
      int64_t head = b * config.kvHeads + h;
      for (int side = 0; side < 2; ++side) {
        KiviSide &target = sides[side];
        // The window's tokens, then the new ones: tokens quantized.. on.
        std::vector<float> tail(target.residual->begin() + head * window * dim,
                                target.residual->begin() +
                                    (head * window + held) * dim);
        auto fresh = inputs[side].begin() + head * tokens * dim;
        tail.insert(tail.end(), fresh, fresh + tokens * dim);
        for (int64_t first = quantized; first < quantizedAfter;
             first += group) {
          std::span<const float> rows(tail.data() + (first - quantized) * dim,
                                      group * dim);
          std::optional<KiviTile> tile = quantizeKiviTile(
              config.kivi, target.keys, rows, group, dim, error);
          if (!tile)
            return false;
          for (int64_t t = 0; t < group; ++t) {
            std::copy_n(tile->codes.begin() + t * width, width,
                        target.codes->begin() +
                            rowOffset(b, h, first + t, width));
            if (!target.rowWidth)
              continue;
            int64_t at = rowOffset(b, h, first + t, target.rowWidth);
            for (int64_t c = 0; c < target.rowWidth; ++c) {
              (*target.scales)[at + c] = tile->scales[t * target.rowWidth + c];
              (*target.zeros)[at + c] = tile->zeros[t * target.rowWidth + c];
            }
          }
          if (!target.rowWidth) {
            int64_t at =
                (head * keyGroupRows(*this) + first / group) * config.headDim;
            for (int64_t c = 0; c < dim; ++c) {
              (*target.scales)[at + c] = tile->scales[c];
              (*target.zeros)[at + c] = tile->zeros[c];
            }
          }
        }
        // The new window: what is left after the groups that filled.
        auto kept = tail.begin() + (quantizedAfter - quantized) * dim;
        auto windowStart = target.residual->begin() + head * window * dim;
        std::fill_n(windowStart, window * dim, 0.0f);
        std::copy(kept, tail.end(), windowStart);
      }
    }
  }
  keyCodes = std::move(codes[0]);
  valueCodes = std::move(codes[1]);
  keyRowScales = std::move(scales[0]);
  valueRowScales = std::move(scales[1]);
  keyZeros = std::move(zeros[0]);
  valueZeros = std::move(zeros[1]);
  keyResidual = std::move(residual[0]);
  valueResidual = std::move(residual[1]);
  sequenceLengths = std::move(after);
  return true;
}

std::optional<std::vector<float>>
KvCache::dequantizeKivi(bool keys, std::string *error) const {
  const KvCacheConfig &config = settings;
  const int64_t dim = config.headDim, group = config.kivi.groupSize;
  const int64_t tokens = maxLength(), window = kiviWindowRows();
  const int64_t width = codeWidth();
  const std::vector<uint8_t> &codes = keys ? keyCodes : valueCodes;
  const std::vector<float> &scales = keys ? keyRowScales : valueRowScales;
  const std::vector<float> &zeros = keys ? keyZeros : valueZeros;
  const std::vector<float> &residual = keys ? keyResidual : valueResidual;
  int64_t rowWidth = keys ? keyScaleWidth() : scaleWidth();
  std::vector<float> result(config.batch * config.kvHeads * tokens * dim, 0.0f);
  for (int64_t b = 0; b < config.batch; ++b) {
    int64_t quantized = kiviQuantizedTokens(sequenceLengths[b]);
    for (int64_t h = 0; h < config.kvHeads; ++h) {
      int64_t head = b * config.kvHeads + h;
      auto out = result.begin() + head * tokens * dim;
      // Each stored group back into the tile the reference quantized, and
      // through the reference's own dequantize.
      for (int64_t first = 0; first < quantized; first += group) {
        KiviTile tile;
        tile.rows = group;
        tile.cols = dim;
        for (int64_t t = 0; t < group; ++t) {
          auto row = codes.begin() + rowOffset(b, h, first + t, width);
          tile.codes.insert(tile.codes.end(), row, row + width);
          if (!rowWidth)
            continue;
          int64_t at = rowOffset(b, h, first + t, rowWidth);
          tile.scales.insert(tile.scales.end(), scales.begin() + at,
                             scales.begin() + at + rowWidth);
          tile.zeros.insert(tile.zeros.end(), zeros.begin() + at,
                            zeros.begin() + at + rowWidth);
        }
        if (!rowWidth) {
          int64_t at = (head * keyGroupRows(*this) + first / group) * dim;
          tile.scales.assign(scales.begin() + at, scales.begin() + at + dim);
          tile.zeros.assign(zeros.begin() + at, zeros.begin() + at + dim);
        }
        std::optional<std::vector<float>> rows =
            dequantizeKiviTile(config.kivi, keys, tile, error);
        if (!rows) {
          // The format model's indices are the group's own: say which.
          if (error)
            *error = "sequence " + std::to_string(b) + ", kv head " +
                     std::to_string(h) + ", tokens " + std::to_string(first) +
                     ".." + std::to_string(first + group - 1) + ": " + *error;
          return std::nullopt;
        }
        std::ranges::copy(*rows, out + first * dim);
      }
      auto held = residual.begin() + head * window * dim;
      std::copy_n(held, (sequenceLengths[b] - quantized) * dim,
                  out + quantized * dim);
    }
  }
  return result;
}

} // namespace lowbit::kv
