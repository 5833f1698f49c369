// Decode attention references and the paged layout.
#include "kv/KvAttention.h"
#include "kv/KvEval.h"
#include "kv/KvPaged.h"
#include "kv/KvQuantize.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <numeric>

using namespace lowbit::kv;

TEST_CASE("attention: a hand-computed head") {
  DecodeShape shape{1, 1, 1, 2, 2};
  std::vector<float> q = {1, 0}, k = {1, 0, 0, 0}, v = {1, 2, 3, 4};
  std::vector<int64_t> lens = {2};
  std::vector<double> out = decodeAttentionF64(shape, q, k, v, lens, 1.0f);
  double e = std::exp(1.0), p0 = e / (1 + e), p1 = 1 / (1 + e);
  CHECK(out[0] == Approx(p0 * 1 + p1 * 3).epsilon(1e-15));
  CHECK(out[1] == Approx(p0 * 2 + p1 * 4).epsilon(1e-15));
  std::vector<float> split =
      decodeAttentionSplitK(shape, q, k, v, lens, 1.0f, 1);
  CHECK(split[0] == Approx(out[0]).epsilon(1e-6));
}

TEST_CASE("attention: f32 split-K matches f64 within 1e-5, GQA, ragged") {
  DecodeShape shape{3, 8, 2, 64, 700};
  std::vector<float> q = normalSamples(3 * 8 * 64, 1);
  std::vector<float> k = normalSamples(3 * 2 * 700 * 64, 2);
  std::vector<float> v = normalSamples(3 * 2 * 700 * 64, 3);
  std::vector<int64_t> lens = {700, 1, 333};
  std::string error;
  REQUIRE(validateDecode(shape, lens, q.size(), k.size(), v.size(), &error));
  float scale = 0.125f;
  std::vector<double> exact = decodeAttentionF64(shape, q, k, v, lens, scale);
  for (int64_t split : {1, 7, 64, 256, 1000}) {
    std::vector<float> approx =
        decodeAttentionSplitK(shape, q, k, v, lens, scale, split);
    CHECK(relativeError(exact, approx) < 1e-5);
    for (size_t i = 0; i < exact.size(); ++i)
      REQUIRE(std::fabs(approx[i] - exact[i]) <=
              1e-5 * std::max(1.0, std::fabs(exact[i])));
  }
  // Query heads 0-3 read kv head 0 and 4-7 kv head 1: one sequence of
  // length 1 returns that kv head's first value row.
  std::vector<float> approx =
      decodeAttentionSplitK(shape, q, k, v, lens, scale, 64);
  for (int64_t h = 0; h < 8; ++h)
    for (int64_t d = 0; d < 64; ++d)
      CHECK(approx[(1 * 8 + h) * 64 + d] ==
            v[((1 * 2 + h / 4) * 700) * 64 + d]);
}

TEST_CASE("attention: bad shapes are refused") {
  std::string error;
  std::vector<int64_t> lens = {4};
  CHECK_FALSE(validateDecode({1, 6, 4, 8, 4}, lens, 48, 128, 128, &error));
  CHECK(error.find("multiple of kv heads") != std::string::npos);
  std::vector<int64_t> tooLong = {5};
  CHECK_FALSE(validateDecode({1, 4, 4, 8, 4}, tooLong, 32, 128, 128, &error));
  CHECK(error.find("length 5") != std::string::npos);
  CHECK_FALSE(validateDecode({1, 4, 4, 8, 4}, lens, 32, 127, 128, &error));
}

TEST_CASE("paged: scatter then gather gives the contiguous cache") {
  // 2 sequences, 2 kv heads, 40 and 17 tokens in pages of 16.
  PagedLayout layout;
  layout.pages = 7;
  layout.kvHeads = 2;
  layout.width = 8;
  layout.batch = 2;
  layout.maxBlocks = 3;
  layout.blockTable = {5, 0, 3, 6, 2, -1};
  std::vector<int64_t> tokens = {40, 17};
  std::string error;
  REQUIRE(validatePagedLayout(layout, tokens, &error));
  std::vector<float> storage(layout.storageSize(), -7.0f);
  const int64_t maxTokens = 40;
  std::vector<float> contiguous = normalSamples(2 * 2 * maxTokens * 8, 4);
  // Append in two steps: 10 tokens each, then the rest of each sequence.
  std::vector<int64_t> start = {0, 0};
  for (int64_t count : {10, 7}) {
    std::vector<float> chunk(2 * 2 * count * 8);
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t t = 0; t < count; ++t)
          for (int64_t d = 0; d < 8; ++d)
            chunk[((b * 2 + h) * count + t) * 8 + d] =
                contiguous[((b * 2 + h) * maxTokens + start[b] + t) * 8 + d];
    scatterPaged<float>(layout, storage, chunk, start, count);
    for (int64_t &s : start)
      s += count;
  }
  std::vector<int64_t> written = {17, 17};
  std::vector<float> gathered =
      gatherPaged<float>(layout, storage, written, maxTokens);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t t = 0; t < maxTokens; ++t)
        for (int64_t d = 0; d < 8; ++d) {
          size_t i = ((b * 2 + h) * maxTokens + t) * 8 + d;
          CHECK(gathered[i] == (t < 17 ? contiguous[i] : 0.0f));
        }

  layout.blockTable[4] = 7;
  CHECK_FALSE(validatePagedLayout(layout, tokens, &error));
  CHECK(error.find("block table [1, 1] = 7") != std::string::npos);
  std::vector<int64_t> tooMany = {49, 1};
  CHECK_FALSE(validatePagedLayout(layout, tooMany, &error));
  CHECK(error.find("49 tokens") != std::string::npos);
}

TEST_CASE("paged: an int8 cache's codes and scales page like values") {
  // Quantizing new tokens then paging codes and scales equals quantizing
  // the contiguous cache: the groups never cross a token.
  const int64_t dim = 20, group = 8, tokens = 33;
  std::vector<float> cache = normalSamples(tokens * dim, 12);
  std::vector<int64_t> shape = {1, 1, tokens, dim};
  Int8GroupOptions options;
  options.groupSize = group;
  auto whole = quantizeInt8Groups(cache, shape, options, nullptr);
  REQUIRE(whole);
  PagedLayout codes{4, 1, dim, 1, 3, {2, 0, 3}};
  PagedLayout scales = codes;
  scales.width = 3;
  std::vector<int8_t> codeStorage(codes.storageSize());
  std::vector<float> scaleStorage(scales.storageSize());
  std::vector<int64_t> start = {0};
  for (int64_t count : {20, 13}) {
    std::vector<int64_t> chunkShape = {1, 1, count, dim};
    std::span<const float> tokensIn(cache.data() + start[0] * dim, count * dim);
    auto chunk = quantizeInt8Groups(tokensIn, chunkShape, options, nullptr);
    REQUIRE(chunk);
    scatterPaged<int8_t>(codes, codeStorage, chunk->codes, start, count);
    scatterPaged<float>(scales, scaleStorage, chunk->scales, start, count);
    start[0] += count;
  }
  std::vector<int64_t> lens = {tokens};
  CHECK(gatherPaged<int8_t>(codes, codeStorage, lens, tokens) == whole->codes);
  CHECK(gatherPaged<float>(scales, scaleStorage, lens, tokens) ==
        whole->scales);
}
