// KIVI in the KV cache (kv/KvCacheKivi.cpp): the same numbers as one
// KiviStream per (sequence, head), contiguous and paged, in chunks or at
// once; refusals change nothing; the directory round trips.
#include "kv/KvCache.h"
#include "kv/KvEval.h"
#include "runtime/files/KvCacheDirectory.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace lowbit;
using namespace lowbit::kv;
using namespace lowbit::files;

namespace {

constexpr int64_t kBatch = 2, kHeads = 2, kDim = 9, kTokens = 40;

KvCacheConfig kiviConfig(KvScheme scheme, KeyGranularity keys, bool paged) {
  KvCacheConfig config;
  config.scheme = scheme;
  config.kivi.groupSize = 4; // head_dim 9: value groups 4, 4, 1
  config.kivi.residual = 5;
  config.kivi.keys = keys;
  config.batch = kBatch;
  config.kvHeads = kHeads;
  config.headDim = kDim;
  config.paged = paged;
  config.capacity = kTokens;
  config.pages = 6;
  config.maxBlocks = 3;
  config.blockTable = {4, 1, -1, 0, 5, 2};
  return config;
}

/// Tokens [first, first + count) of a [2, 2, 40, 9] tensor.
std::vector<float> tokensOf(const std::vector<float> &all, int64_t first,
                            int64_t count) {
  std::vector<float> result;
  for (int64_t head = 0; head < kBatch * kHeads; ++head)
    result.insert(result.end(), all.begin() + (head * kTokens + first) * kDim,
                  all.begin() + (head * kTokens + first + count) * kDim);
  return result;
}

/// (sequence, head) `head` of a [2, 2, tokens, 9] tensor.
std::vector<float> headOf(const std::vector<float> &all, int64_t head,
                          int64_t tokens) {
  return {all.begin() + head * tokens * kDim,
          all.begin() + (head + 1) * tokens * kDim};
}

std::string freshDirectory() {
  std::string base =
      (std::filesystem::temp_directory_path() / "lowbit-kivi-test-XXXXXX")
          .string();
  REQUIRE(mkdtemp(base.data()));
  return base;
}

} // namespace

TEST_CASE("kivi cache: equals one KiviStream per head, in chunks or at once") {
  std::vector<float> keys = normalSamples(kBatch * kHeads * kTokens * kDim, 11);
  std::vector<float> values =
      normalSamples(kBatch * kHeads * kTokens * kDim, 12);
  for (KiviZero zero : {KiviZero::Float, KiviZero::Integer})
    for (KvScheme scheme : {KvScheme::Kivi4, KvScheme::Kivi2})
      for (KeyGranularity granularity :
           {KeyGranularity::PerChannel, KeyGranularity::PerToken})
        for (bool paged : {false, true}) {
          CAPTURE(kvSchemeName(scheme), int(granularity), paged, int(zero));
          KvCacheConfig config = kiviConfig(scheme, granularity, paged);
          config.kivi.zero = zero;
          auto chunked = KvCache::create(config, nullptr);
          auto once = KvCache::create(config, nullptr);
          REQUIRE(chunked);
          REQUIRE(once);
          std::string error;
          int64_t appended = 0;
          for (int64_t chunk : {1, 3, 7, 2, 9, 5}) {
            INFO(error);
            REQUIRE(chunked->append(tokensOf(keys, appended, chunk),
                                    tokensOf(values, appended, chunk), chunk,
                                    &error));
            appended += chunk;
          }
          REQUIRE(appended == 27);
          REQUIRE(once->append(tokensOf(keys, 0, 27), tokensOf(values, 0, 27),
                               27, &error));
          // 27 tokens, R = 5, G = 4: 20 quantized, 7 in the window.
          CHECK(chunked->kiviQuantizedTokens(27) == 20);
          CHECK(chunked->keyCodes == once->keyCodes);
          CHECK(chunked->keyRowScales == once->keyRowScales);
          CHECK(chunked->valueZeros == once->valueZeros);
          CHECK(chunked->keyResidual == once->keyResidual);

          KiviOptions options = config.kivi;
          options.bits = scheme == KvScheme::Kivi4 ? 4 : 2;
          std::vector<float> cacheKeys = chunked->dequantizeKeys();
          std::vector<float> cacheValues = chunked->dequantizeValues();
          for (int64_t head = 0; head < kBatch * kHeads; ++head) {
            auto stream = KiviStream::create(options, kDim, nullptr);
            REQUIRE(stream->append(headOf(tokensOf(keys, 0, 27), head, 27),
                                   headOf(tokensOf(values, 0, 27), head, 27),
                                   27, nullptr));
            CHECK(headOf(cacheKeys, head, 27) == stream->keys());
            CHECK(headOf(cacheValues, head, 27) == stream->values());
          }
          // The window is exact; the quantized prefix is not.
          CHECK(headOf(cacheKeys, 3, 27)[26 * kDim] ==
                headOf(tokensOf(keys, 0, 27), 3, 27)[26 * kDim]);
          CHECK(headOf(cacheKeys, 3, 27) !=
                headOf(tokensOf(keys, 0, 27), 3, 27));
        }
}

TEST_CASE("kivi cache: 4-bit codes are packed two to a byte") {
  auto cache = KvCache::create(
      kiviConfig(KvScheme::Kivi4, KeyGranularity::PerChannel, false), nullptr);
  CHECK(cache->codeWidth() == 5);
  CHECK(cache->kiviScaleShape(true) == std::vector<int64_t>{2, 2, 10, 9});
  CHECK(cache->kiviScaleShape(false) == std::vector<int64_t>{2, 2, 40, 3});
  CHECK(cache->kiviWindowShape() == std::vector<int64_t>{2, 2, 8, 9});
  auto two = KvCache::create(
      kiviConfig(KvScheme::Kivi2, KeyGranularity::PerToken, false), nullptr);
  CHECK(two->codeWidth() == 9);
  CHECK(two->kiviScaleShape(true) == std::vector<int64_t>{2, 2, 40, 3});
}

TEST_CASE("kivi cache: refused appends and options change nothing") {
  std::vector<float> keys = normalSamples(kBatch * kHeads * kTokens * kDim, 13);
  std::string error;
  auto contiguous = KvCache::create(
      kiviConfig(KvScheme::Kivi2, KeyGranularity::PerChannel, false), nullptr);
  REQUIRE(contiguous->append(tokensOf(keys, 0, 38), tokensOf(keys, 0, 38), 38,
                             &error));
  KvCache before = *contiguous;
  CHECK_FALSE(contiguous->append(tokensOf(keys, 0, 3), tokensOf(keys, 0, 3), 3,
                                 &error));
  CHECK(error == "sequence 0 would hold 41 tokens; the cache holds 40");
  CHECK(contiguous->keyCodes == before.keyCodes);
  CHECK(contiguous->keyResidual == before.keyResidual);
  CHECK(contiguous->lengths() == before.lengths());

  // Paged: sequence 0's third block is -1, so token 32 has no page.
  auto paged = KvCache::create(
      kiviConfig(KvScheme::Kivi4, KeyGranularity::PerChannel, true), nullptr);
  REQUIRE(
      paged->append(tokensOf(keys, 0, 30), tokensOf(keys, 0, 30), 30, &error));
  std::vector<float> window = paged->valueResidual;
  CHECK_FALSE(
      paged->append(tokensOf(keys, 0, 3), tokensOf(keys, 0, 3), 3, &error));
  CHECK(error == "block table [0, 2] = -1 is not a page in [0, 6)");
  CHECK(paged->valueResidual == window);
  CHECK(paged->lengths() == std::vector<int64_t>{30, 30});

  KvCacheConfig bad =
      kiviConfig(KvScheme::Kivi4, KeyGranularity::PerChannel, false);
  bad.kivi.residual = 129;
  CHECK_FALSE(KvCache::create(bad, &error));
  CHECK(error == "KIVI residual window 129 is not in [0, 128]");
}

TEST_CASE("kivi cache: the directory round trips and names a bad file") {
  std::string directory = freshDirectory() + "/cache";
  std::vector<float> keys = normalSamples(kBatch * kHeads * kTokens * kDim, 14);
  for (bool paged : {false, true}) {
    KvCacheConfig config =
        kiviConfig(KvScheme::Kivi4, KeyGranularity::PerToken, paged);
    config.kivi.zero = paged ? KiviZero::Integer : KiviZero::Float;
    auto cache = KvCache::create(config, nullptr);
    REQUIRE(cache->append(tokensOf(keys, 0, 19), tokensOf(keys, 19, 19), 19,
                          nullptr));
    std::string error;
    REQUIRE(writeKvCacheDirectory(directory, *cache, &error));
    auto back = readKvCacheDirectory(directory, &error);
    INFO(error);
    REQUIRE(back);
    CHECK(back->config().kivi.keys == KeyGranularity::PerToken);
    CHECK(back->config().kivi.residual == 5);
    CHECK(back->config().kivi.zero == config.kivi.zero);
    CHECK(back->dequantizeKeys() == cache->dequantizeKeys());
    CHECK(back->dequantizeValues() == cache->dequantizeValues());
  }
  std::filesystem::resize_file(directory + "/v_residual.npy", 90);
  std::string error;
  CHECK_FALSE(readKvCacheDirectory(directory, &error));
  CHECK(error.find("v_residual.npy") != std::string::npos);
  // A stored zero=int group the format model refuses names the key files
  // and the group (the model's own indices are the group's, not the
  // file's); so does a zero point that is no integer.
  KvCacheConfig config =
      kiviConfig(KvScheme::Kivi4, KeyGranularity::PerToken, false);
  config.kivi.zero = KiviZero::Integer;
  auto cache = KvCache::create(config, nullptr);
  REQUIRE(cache->append(tokensOf(keys, 0, 19), tokensOf(keys, 19, 19), 19,
                        nullptr));
  cache->keyZeros[0] = 2.5f;
  REQUIRE(writeKvCacheDirectory(directory, *cache, &error));
  CHECK_FALSE(readKvCacheDirectory(directory, &error));
  CHECK_THAT(error, Catch::Contains("tokens 0..3: zero point 2.500000 is not "
                                    "an integer in [0, 255]"));
  cache->keyZeros[0] = 200;
  REQUIRE(writeKvCacheDirectory(directory, *cache, &error));
  CHECK_FALSE(readKvCacheDirectory(directory, &error));
  CHECK_THAT(error, Catch::Contains("the stored keys (k_codes.npy, "
                                    "k_scales.npy, k_zeros.npy) do not "
                                    "dequantize: sequence 0, kv head 0, "
                                    "tokens 0..3: zero point [0, 0] is 200"));
  std::filesystem::remove_all(std::filesystem::path(directory).parent_path());
}

TEST_CASE("kivi cache: scheme names") {
  int64_t group = 0;
  CHECK(parseKvScheme("kv_kivi_int4", &group) == KvScheme::Kivi4);
  CHECK(parseKvScheme("kv_kivi_int2", &group) == KvScheme::Kivi2);
  CHECK(group == 0);
  CHECK(parseKvScheme("kv_int8_g4", &group) == KvScheme::Int8Groups);
  CHECK(group == 4);
  CHECK(parseKvScheme("kv_int8_g64", &group) == KvScheme::Int8Groups);
  CHECK(group == 64);
  CHECK_FALSE(parseKvScheme("kv_int8_g", &group));
  CHECK_FALSE(parseKvScheme("kv_int8_g04", &group));
  CHECK_FALSE(parseKvScheme("kv_int8_g4x", &group));
  CHECK_FALSE(parseKvScheme("kv_kivi_int3", &group));
}
