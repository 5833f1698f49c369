//===- KvEval.h - The KV-cache error check ----------------------*- C++ -*-===//
//
// Closes the loop for every KV scheme on synthetic data with fixed seeds:
// keys N(0, 1) plus a large fixed offset in a few outlier channels (the
// structure KIVI exploits), values N(0, 1) plus a per-channel mean, queries
// N(0, 1) (docs/kv-cache.md says why). Per scheme: bits per element, the MSE of
// K and V after quantize -> dequantize, and the relative error of the decode
// attention output (f32 split-K over the dequantized cache) against f64
// attention over the unquantized cache. `lowbit eval --kv` prints it.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_KV_KVEVAL_H
#define LOWBIT_KV_KVEVAL_H

#include "kv/KvAttention.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lowbit::kv {

struct KvEvalConfig {
  DecodeShape shape{/*batch=*/2, /*qHeads=*/8, /*kvHeads=*/2, /*headDim=*/64,
                    /*maxTokens=*/512};
  int outlierChannels = 4;
  float outlierScale = 15.0f; ///< the outlier channels' offset
  uint64_t seed = 20261201;
};

struct KvEvalRow {
  std::string scheme;
  double bitsPerElement = 0;
  double keyMse = 0, valueMse = 0;
  double attentionRelativeError = 0;
};

/// Every KV scheme on the same synthetic cache.
std::vector<KvEvalRow> evaluateKvSchemes(const KvEvalConfig &config);

/// Deterministic N(0, 1) samples (splitmix64 + Box-Muller), the same on
/// every platform.
std::vector<float> normalSamples(size_t count, uint64_t seed);

} // namespace lowbit::kv

#endif // LOWBIT_KV_KVEVAL_H
