//===- KvCacheDirFuzzer.cpp - Fuzz a `lowbit kv` cache directory ----------===//
//
// Input: a KV cache directory packed into one byte string (fuzz/pack.py
// kv-cache writes it; fuzz/PackedDirectory.h unpacks it): meta.json, then
// the .npy files in the order of kFiles. The directory is read as
// `lowbit kv` does (files::readKvCacheDirectory). What it accepts must write
// and read back to the same cache, dequantize to [batch, kv_heads, longest,
// head_dim], and take one more token where a sequence has room (an append
// writes through the block table the reader checked).
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzCheck.h"
#include "fuzz/PackedDirectory.h"
#include "runtime/files/KvCacheDirectory.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

using namespace lowbit;
using namespace lowbit::kv;
using namespace lowbit::files;

namespace {

constexpr const char *kFiles[] = {
    "meta.json",      "k_codes.npy",    "v_codes.npy", "k_scales.npy",
    "v_scales.npy",   "k_zeros.npy",    "v_zeros.npy", "k_residual.npy",
    "v_residual.npy", "block_table.npy"};

/// Work per input stays small: dequantize and append only caches whose
/// output is at most this many elements (sequences that share pages make a
/// small directory dequantize to a large tensor, which is not a bug).
constexpr int64_t kMaxWorkElements = int64_t(1) << 20;

/// a * b * c, or INT64_MAX where it overflows.
int64_t product(int64_t a, int64_t b, int64_t c) {
  int64_t result = 0;
  if (__builtin_mul_overflow(a, b, &result) ||
      __builtin_mul_overflow(result, c, &result))
    return INT64_MAX;
  return result;
}

const fuzz::ScratchDirectory &scratch(int which) {
  static const fuzz::ScratchDirectory input("lowbit-fuzz-kv");
  static const fuzz::ScratchDirectory output("lowbit-fuzz-kv-out");
  return which == 0 ? input : output;
}

template <typename T>
bool sameBits(const std::vector<T> &a, const std::vector<T> &b) {
  return a.size() == b.size() &&
         (a.empty() ||
          std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

bool sameCache(const KvCache &a, const KvCache &b) {
  const KvCacheConfig &x = a.config(), &y = b.config();
  return x.scheme == y.scheme && x.batch == y.batch && x.kvHeads == y.kvHeads &&
         x.headDim == y.headDim && x.paged == y.paged &&
         x.capacity == y.capacity && x.pages == y.pages &&
         x.maxBlocks == y.maxBlocks && x.blockTable == y.blockTable &&
         sameBits(x.keyScales, y.keyScales) &&
         sameBits(x.valueScales, y.valueScales) &&
         x.int8.groupSize == y.int8.groupSize &&
         x.int8.convention == y.int8.convention &&
         sameBits(std::vector<float>{x.int8.epsilon},
                  std::vector<float>{y.int8.epsilon}) &&
         x.kivi.groupSize == y.kivi.groupSize &&
         x.kivi.residual == y.kivi.residual && x.kivi.keys == y.kivi.keys &&
         x.kivi.zero == y.kivi.zero && a.lengths() == b.lengths() &&
         a.keyCodes == b.keyCodes && a.valueCodes == b.valueCodes &&
         sameBits(a.keyRowScales, b.keyRowScales) &&
         sameBits(a.valueRowScales, b.valueRowScales) &&
         sameBits(a.keyZeros, b.keyZeros) &&
         sameBits(a.valueZeros, b.valueZeros) &&
         sameBits(a.keyResidual, b.keyResidual) &&
         sameBits(a.valueResidual, b.valueResidual);
}

/// The cache must write, and read back equal.
void checkRoundTrip(const KvCache &cache) {
  std::string path = scratch(1).str() + "/cache", error;
  LOWBIT_FUZZ_CHECK(writeKvCacheDirectory(path, cache, &error),
                    "an accepted cache writes");
  std::optional<KvCache> reread = readKvCacheDirectory(path, &error);
  LOWBIT_FUZZ_CHECK(reread.has_value(), "a written cache reads");
  LOWBIT_FUZZ_CHECK(sameCache(cache, *reread),
                    "a written cache reads back equal");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &directory = scratch(0).str();
  fuzz::unpackDirectory(
      std::string_view(reinterpret_cast<const char *>(data), size), directory,
      kFiles);
  std::string error;
  std::optional<KvCache> cache = readKvCacheDirectory(directory, &error);
  if (!cache) {
    LOWBIT_FUZZ_CHECK(!error.empty(), "a refused cache names its problem");
    return 0;
  }
  checkRoundTrip(*cache);

  const KvCacheConfig &config = cache->config();
  int64_t heads = config.batch * config.kvHeads; // each at most 2^30
  if (product(heads, cache->maxLength(), config.headDim) <= kMaxWorkElements) {
    std::vector<float> keys = cache->dequantizeKeys();
    std::vector<float> values = cache->dequantizeValues();
    size_t expected =
        size_t(heads) * size_t(cache->maxLength()) * size_t(config.headDim);
    LOWBIT_FUZZ_CHECK(keys.size() == expected && values.size() == expected,
                      "an accepted cache dequantizes to its shape");
  }
  if (product(heads, cache->kiviWindowRows(), config.headDim) <=
      kMaxWorkElements) {
    // One token of small values: refused only where a sequence is full (or
    // its next block names no page), and then the cache is unchanged.
    std::vector<float> token(size_t(heads * config.headDim));
    for (size_t i = 0; i < token.size(); ++i)
      token[i] = float(int(i % 17) - 8) / 8.0f;
    std::vector<int64_t> before = cache->lengths();
    if (cache->append(token, token, 1, &error)) {
      for (size_t b = 0; b < before.size(); ++b)
        LOWBIT_FUZZ_CHECK(cache->lengths()[b] == before[b] + 1,
                          "an append adds one token to every sequence");
      checkRoundTrip(*cache);
    } else {
      LOWBIT_FUZZ_CHECK(!error.empty() && cache->lengths() == before,
                        "a refused append names its problem, changes nothing");
    }
  }
  return 0;
}
