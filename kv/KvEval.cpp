//===- KvEval.cpp - The KV-cache error check ------------------------------===//

#include "kv/KvEval.h"

#include "kv/KvKivi.h"
#include "kv/KvQuantize.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace lowbit::kv {

namespace {

uint64_t splitMix64(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// A uniform double in (0, 1].
double uniform(uint64_t &state) {
  return (double(splitMix64(state) >> 11) + 1.0) * 0x1.0p-53;
}

struct Cache {
  std::vector<float> keys, values;
};

/// The per-(sequence, head) streams of a [B, H, T, D] cache through KIVI.
std::optional<Cache> throughKivi(const KvEvalConfig &config, const Cache &cache,
                                 const KiviOptions &options) {
  const DecodeShape &shape = config.shape;
  int64_t streamSize = shape.maxTokens * shape.headDim;
  Cache result{std::vector<float>(cache.keys.size()),
               std::vector<float>(cache.values.size())};
  for (int64_t stream = 0; stream < shape.batch * shape.kvHeads; ++stream) {
    std::optional<KiviStream> kivi =
        KiviStream::create(options, shape.headDim, nullptr);
    if (!kivi ||
        !kivi->append(
            std::span(cache.keys).subspan(stream * streamSize, streamSize),
            std::span(cache.values).subspan(stream * streamSize, streamSize),
            shape.maxTokens, nullptr))
      return std::nullopt;
    std::ranges::copy(kivi->keys(), result.keys.begin() + stream * streamSize);
    std::ranges::copy(kivi->values(),
                      result.values.begin() + stream * streamSize);
  }
  return result;
}

} // namespace

std::vector<float> normalSamples(size_t count, uint64_t seed) {
  std::vector<float> samples(count);
  uint64_t state = seed;
  for (size_t index = 0; index < count; index += 2) {
    double radius = std::sqrt(-2.0 * std::log(uniform(state)));
    double angle = 2.0 * std::numbers::pi * uniform(state);
    samples[index] = float(radius * std::cos(angle));
    if (index + 1 < count)
      samples[index + 1] = float(radius * std::sin(angle));
  }
  return samples;
}

std::vector<KvEvalRow> evaluateKvSchemes(const KvEvalConfig &config) {
  const DecodeShape &shape = config.shape;
  size_t cacheSize =
      size_t(shape.batch * shape.kvHeads * shape.maxTokens * shape.headDim);
  Cache cache{normalSamples(cacheSize, config.seed),
              normalSamples(cacheSize, config.seed + 1)};
  // Keys: a few outlier channels carry a large offset of fixed sign in
  // every token (the structure KIVI reports in real keys). Values: a
  // per-channel mean plus noise, as value projections have.
  std::vector<float> valueMeans = normalSamples(shape.headDim, config.seed + 3);
  for (size_t index = 0; index < cacheSize; ++index) {
    int64_t channel = int64_t(index % shape.headDim);
    if (channel * 7 % shape.headDim < config.outlierChannels)
      cache.keys[index] +=
          channel % 2 ? -config.outlierScale : config.outlierScale;
    cache.values[index] += valueMeans[channel];
  }
  std::vector<float> query = normalSamples(
      size_t(shape.batch * shape.qHeads * shape.headDim), config.seed + 2);
  std::vector<int64_t> seqLens(shape.batch, shape.maxTokens);
  if (shape.batch > 1)
    seqLens.back() = shape.maxTokens - 37; // a ragged batch
  float softmaxScale = 1.0f / std::sqrt(float(shape.headDim));
  std::vector<double> exact = decodeAttentionF64(
      shape, query, cache.keys, cache.values, seqLens, softmaxScale);

  std::vector<KvEvalRow> rows;
  auto addRow = [&](std::string name, double bits, const Cache &approx) {
    std::vector<float> attended =
        decodeAttentionSplitK(shape, query, approx.keys, approx.values, seqLens,
                              softmaxScale, /*splitTokens=*/128);
    rows.push_back({std::move(name), bits,
                    meanSquaredError(cache.keys, approx.keys),
                    meanSquaredError(cache.values, approx.values),
                    relativeError(exact, attended)});
  };
  std::vector<int64_t> dims = {shape.batch, shape.kvHeads, shape.maxTokens,
                               shape.headDim};

  for (ScaleConvention convention :
       {ScaleConvention::Multiplier, ScaleConvention::Divisor}) {
    Int8GroupOptions options;
    options.convention = convention;
    auto keys = quantizeInt8Groups(cache.keys, dims, options, nullptr);
    auto values = quantizeInt8Groups(cache.values, dims, options, nullptr);
    addRow("kv_int8_g64 (" + std::string(scaleConventionName(convention)) + ")",
           8.0 + 32.0 / double(options.groupSize),
           {dequantizeInt8Groups(*keys), dequantizeInt8Groups(*values)});
  }

  for (const char *formatName : {"e4m3", "e5m2"}) {
    Fp8KvOptions options(*lookupFormat(formatName), /*headAxis=*/1);
    // Per head: each head's amax maps to the format's max (a calibrated
    // static scale, as engines compute it offline).
    auto headScales = [&](const std::vector<float> &tensor) {
      std::vector<float> scales(shape.kvHeads, 0.0f);
      int64_t perHead = shape.maxTokens * shape.headDim;
      for (size_t index = 0; index < tensor.size(); ++index) {
        float &scale = scales[(index / perHead) % shape.kvHeads];
        scale = std::max(scale, std::fabs(tensor[index]));
      }
      for (float &scale : scales)
        scale = std::max(scale, 1e-12f) / float(options.format.maxValue());
      return scales;
    };
    auto keys = quantizeFp8Kv(cache.keys, dims, options, headScales(cache.keys),
                              nullptr);
    auto values = quantizeFp8Kv(cache.values, dims, options,
                                headScales(cache.values), nullptr);
    addRow(std::string("kv_fp8_") + formatName + " (per head)", 8.0,
           {dequantizeFp8Kv(*keys), dequantizeFp8Kv(*values)});
  }

  for (int bits : {4, 2})
    for (KeyGranularity keys :
         {KeyGranularity::PerChannel, KeyGranularity::PerToken}) {
      KiviOptions options;
      options.bits = bits;
      options.keys = keys;
      options.residual = 0; // every full group quantized: compares the rules
      std::optional<Cache> approx = throughKivi(config, cache, options);
      if (!approx)
        continue;
      addRow("kv_kivi_int" + std::to_string(bits) + " (keys per " +
                 (keys == KeyGranularity::PerChannel ? "channel" : "token") +
                 ", R=0)",
             kiviBitsPerElement(options), *approx);
    }
  // lowbit's zero-including variant, keys per channel: what KIVI's own
  // quantizer (the rows above) gains on one-sign outlier channels.
  for (int bits : {4, 2}) {
    KiviOptions options;
    options.bits = bits;
    options.residual = 0;
    options.zero = KiviZero::Integer;
    if (std::optional<Cache> approx = throughKivi(config, cache, options))
      addRow("kv_kivi_int" + std::to_string(bits) +
                 " (keys per channel, R=0, zero=int)",
             kiviBitsPerElement(options), *approx);
  }
  KiviOptions windowed; // KIVI's default: 4 bits, G = 32, R = 128
  if (std::optional<Cache> approx = throughKivi(config, cache, windowed))
    addRow("kv_kivi_int4 (keys per channel, R=128)",
           kiviBitsPerElement(windowed), *approx);
  return rows;
}

} // namespace lowbit::kv
