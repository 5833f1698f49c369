// KIVI's streams: the residual window, per-channel keys, round trips.
#include "kv/KvKivi.h"
#include "kv/KvEval.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

using namespace lowbit;
using namespace lowbit::kv;

TEST_CASE("kivi: the newest R tokens stay exact; full groups move") {
  const int64_t dim = 8;
  KiviOptions options; // 4 bits, G = 32, R = 128
  auto stream = KiviStream::create(options, dim, nullptr);
  REQUIRE(stream);
  std::vector<float> keys = normalSamples(300 * dim, 1);
  std::vector<float> values = normalSamples(300 * dim, 2);
  int64_t appended = 0;
  for (int64_t chunk : {1, 5, 100, 27, 1, 128, 38}) {
    REQUIRE(
        stream->append(std::span(keys).subspan(appended * dim, chunk * dim),
                       std::span(values).subspan(appended * dim, chunk * dim),
                       chunk, nullptr));
    appended += chunk;
    int64_t expected = std::max<int64_t>(0, appended - 128) / 32 * 32;
    CHECK(stream->quantizedTokenCount() == expected);
    CHECK(stream->tokenCount() == appended);
    CHECK(stream->residualTokens() >= std::min<int64_t>(appended, 128));
    CHECK(stream->residualTokens() < 128 + 32);
  }
  REQUIRE(appended == 300);
  // The tail comes back bit for bit; the prefix within half a step.
  std::vector<float> back = stream->keys();
  int64_t prefix = stream->quantizedTokenCount() * dim;
  CHECK(std::equal(back.begin() + prefix, back.end(), keys.begin() + prefix));
  CHECK_FALSE(std::equal(back.begin(), back.begin() + prefix, keys.begin()));

  // One append of everything gives the same cache.
  auto once = KiviStream::create(options, dim, nullptr);
  REQUIRE(once->append(keys, values, 300, nullptr));
  CHECK(once->keys() == back);
  CHECK(once->values() == stream->values());
}

TEST_CASE("kivi: keys per channel share a scale down each channel") {
  const int64_t dim = 4, group = 32;
  KiviOptions options;
  options.bits = 2;
  options.residual = 0;
  auto stream = KiviStream::create(options, dim, nullptr);
  std::vector<float> keys = normalSamples(group * dim, 9);
  for (int64_t t = 0; t < group; ++t)
    keys[t * dim + 2] *= 50.0f; // channel 2 is an outlier channel
  std::vector<float> values = normalSamples(group * dim, 10);
  REQUIRE(stream->append(keys, values, group, nullptr));
  REQUIRE(stream->keyGroups().size() == 1);
  const QuantizedTensor &tile = stream->keyGroups()[0];
  REQUIRE(tile.scaleCodes.size() == size_t(dim)); // [1, head_dim]
  for (int64_t c = 0; c < dim; ++c) {
    float low = 0, high = 0;
    for (int64_t t = 0; t < group; ++t) {
      low = std::min(low, keys[t * dim + c]);
      high = std::max(high, keys[t * dim + c]);
    }
    CHECK(std::bit_cast<float>(tile.scaleCodes[c]) == (high - low) / 3.0f);
  }
  // Values: per token, groups of G channels (one group here).
  REQUIRE(stream->valueGroups()[0].scaleCodes.size() == size_t(group));
  std::vector<float> back = stream->keys();
  for (int64_t i = 0; i < group * dim; ++i) {
    float scale = std::bit_cast<float>(tile.scaleCodes[i % dim]);
    CHECK(std::fabs(back[i] - keys[i]) <= scale * 0.5f * 1.0001f + 1e-6f);
  }
}

TEST_CASE("kivi: options are checked") {
  std::string error;
  KiviOptions options;
  options.bits = 3;
  CHECK_FALSE(KiviStream::create(options, 8, &error));
  CHECK(error.find("2 or 4 bits") != std::string::npos);
  options.bits = 4;
  options.residual = 129;
  CHECK_FALSE(KiviStream::create(options, 8, &error));
  CHECK(error.find("129") != std::string::npos);
  options.residual = 0;
  options.groupSize = 0;
  CHECK_FALSE(KiviStream::create(options, 8, &error));
  options.groupSize = 32;
  CHECK_FALSE(KiviStream::create(options, 0, &error));
  CHECK(error.find("head_dim") != std::string::npos);
  auto stream = KiviStream::create(options, 8, nullptr);
  std::vector<float> three(3);
  CHECK_FALSE(stream->append(three, three, 1, &error));
  CHECK(error.find("[1, 8]") != std::string::npos);
  CHECK(kiviBitsPerElement(options) == 4.0 + 40.0 / 32.0);
}
