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
  const KiviTile &tile = stream->keyGroups()[0];
  REQUIRE(tile.scales.size() == size_t(dim)); // [1, head_dim]
  for (int64_t c = 0; c < dim; ++c) {
    float low = INFINITY, high = -INFINITY; // KIVI: the raw min and max
    for (int64_t t = 0; t < group; ++t) {
      low = std::min(low, keys[t * dim + c]);
      high = std::max(high, keys[t * dim + c]);
    }
    CHECK(tile.scales[c] == (high - low) / 3.0f);
    CHECK(tile.zeros[c] == low);
  }
  // Values: per token, groups of G channels (one group here).
  REQUIRE(stream->valueGroups()[0].scales.size() == size_t(group));
  std::vector<float> back = stream->keys();
  for (int64_t i = 0; i < group * dim; ++i) {
    float scale = tile.scales[i % dim];
    CHECK(std::fabs(back[i] - keys[i]) <= scale * 0.5f * 1.0001f + 1e-6f);
  }
}

// Three tokens of two channels, int2, keys per channel in one group of 3,
// computed by hand with KIVI's formula (jy-yuan/KIVI quant/new_pack.py):
// channel 0 {1, 4, 2.5}: mn 1, s (4 - 1) / 3 = 1, q = rne((x - 1) / 1) =
// {0, 3, rne(1.5) = 2}, back {1, 4, 3}; channel 1 {-2, -0.5, -1.25}: mn
// -2, s 0.5, q {0, 3, rne(1.5) = 2}, back {-2, -0.5, -1}.
TEST_CASE("kivi: KIVI's own quantizer, by hand, is the default") {
  const std::vector<float> keys = {1.0f, -2.0f, 4.0f, -0.5f, 2.5f, -1.25f};
  KiviOptions options;
  options.bits = 2;
  options.groupSize = 3;
  options.residual = 0;
  REQUIRE(options.zero == KiviZero::Float);
  auto stream = KiviStream::create(options, 2, nullptr);
  REQUIRE(stream->append(keys, keys, 3, nullptr));
  const KiviTile &tile = stream->keyGroups().at(0);
  CHECK(tile.codes == std::vector<uint8_t>{0, 0, 3, 3, 2, 2});
  CHECK(tile.scales == std::vector<float>{1.0f, 0.5f});
  CHECK(tile.zeros == std::vector<float>{1.0f, -2.0f});
  CHECK(stream->keys() ==
        std::vector<float>{1.0f, -2.0f, 4.0f, -0.5f, 3.0f, -1.0f});
  // Values, per token (one short group of both channels): token 2 is mn
  // -1.25, s 3.75 / 3 = 1.25, codes {3, 0}, back exactly.
  const KiviTile &valueTile = stream->valueGroups().at(0);
  CHECK(valueTile.zeros == std::vector<float>{-2.0f, -0.5f, -1.25f});
  CHECK(valueTile.scales == std::vector<float>{1.0f, 1.5f, 1.25f});
  CHECK(valueTile.codes == std::vector<uint8_t>{3, 0, 3, 0, 3, 0});

  // zero=int widens each channel's range to include 0: channel 0 is [0,
  // 4], s = 4 / 3, so token 0 (1 / s = 0.75) gets code 1, not KIVI's 0;
  // channel 1 is [-2, 0], s = 2 / 3, zero rne(3) = 3, codes {0, 2, 1}.
  options.zero = KiviZero::Integer;
  auto widened = KiviStream::create(options, 2, nullptr);
  REQUIRE(widened->append(keys, keys, 3, nullptr));
  const KiviTile &intTile = widened->keyGroups().at(0);
  CHECK(intTile.codes == std::vector<uint8_t>{1, 0, 3, 2, 2, 1});
  CHECK(intTile.scales == std::vector<float>{4.0f / 3.0f, 2.0f / 3.0f});
  CHECK(intTile.zeros == std::vector<float>{0.0f, 3.0f});
}

// A constant group has s = 0 and a group of NaN nothing to take min and
// max from: every code is 0 (KIVI's formula gives 0 / 0 there), and the
// constant comes back exactly as mn; a NaN element is skipped by min and
// max and gets code 0.
TEST_CASE("kivi: KIVI's quantizer on constant, NaN and all-NaN groups") {
  const float nan = NAN;
  // Channels: constant 2.5; {NaN, -1, 1}; all NaN.
  const std::vector<float> keys = {2.5f, nan,  nan,  2.5f, -1.0f,
                                   nan,  2.5f, 1.0f, nan};
  KiviOptions options;
  options.bits = 4;
  options.groupSize = 3;
  options.residual = 0;
  auto stream = KiviStream::create(options, 3, nullptr);
  REQUIRE(stream->append(keys, keys, 3, nullptr));
  const KiviTile &tile = stream->keyGroups().at(0);
  CHECK(tile.zeros == std::vector<float>{2.5f, -1.0f, 0.0f});
  CHECK(tile.scales == std::vector<float>{0.0f, 2.0f / 15.0f, 0.0f});
  // Nibbles, the even channel low: token 0 {0, 0 (NaN), 0}, token 1 {0,
  // 0, 0}, token 2 {0, 15, 0}.
  CHECK(tile.codes == std::vector<uint8_t>{0x00, 0x00, 0x00, 0x00, 0xF0, 0x00});
  std::vector<float> back = stream->keys();
  CHECK(back[0] == 2.5f);
  CHECK(back[3] == 2.5f);
  CHECK(back[4] == -1.0f);
  CHECK(back[7] == 15.0f * (2.0f / 15.0f) + -1.0f);
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
  CHECK(kiviBitsPerElement(options) == 4.0 + 64.0 / 32.0); // f32 s, zero
}
