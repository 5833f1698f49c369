// The KV cache behind `lowbit kv`: append, pages, the directory form.
#include "kv/KvCache.h"
#include "kv/KvEval.h"
#include "runtime/files/KvCacheDirectory.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

// Under AddressSanitizer an address-space limit would break its shadow
// memory; the limit is then left out (the sanitizer reports a huge
// allocation itself).
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LOWBIT_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define LOWBIT_TEST_ASAN 1
#endif

using namespace lowbit;
using namespace lowbit::kv;
using namespace lowbit::files;

namespace {

KvCacheConfig int8Config(bool paged) {
  KvCacheConfig config;
  config.int8.groupSize = 4; // head_dim 10: groups 4, 4, 2
  config.batch = 2;
  config.kvHeads = 2;
  config.headDim = 10;
  config.paged = paged;
  config.capacity = 40;
  config.pages = 6;
  config.maxBlocks = 3;
  config.blockTable = {4, 1, -1, 0, 5, 2};
  return config;
}

/// Tokens [first, first + count) of every (sequence, head) of `cache`, a
/// [2, 2, 40, 10] tensor.
std::vector<float> slice(const std::vector<float> &cache, int64_t first,
                         int64_t count) {
  std::vector<float> result;
  for (int64_t bh = 0; bh < 4; ++bh)
    result.insert(result.end(), cache.begin() + (bh * 40 + first) * 10,
                  cache.begin() + (bh * 40 + first + count) * 10);
  return result;
}

std::string freshDirectory() {
  std::string base =
      (std::filesystem::temp_directory_path() / "lowbit-kv-test-XXXXXX")
          .string();
  REQUIRE(mkdtemp(base.data()));
  return base;
}

} // namespace

TEST_CASE("kv cache: appends equal one quantization of the whole cache") {
  std::vector<float> keys = normalSamples(2 * 2 * 40 * 10, 1);
  std::vector<float> values = normalSamples(2 * 2 * 40 * 10, 2);
  for (bool paged : {false, true}) {
    auto cache = KvCache::create(int8Config(paged), nullptr);
    REQUIRE(cache);
    std::string error;
    REQUIRE(
        cache->append(slice(keys, 0, 17), slice(values, 0, 17), 17, &error));
    REQUIRE(cache->append(slice(keys, 17, 5), slice(values, 17, 5), 5, &error));
    CHECK(cache->lengths() == std::vector<int64_t>{22, 22});
    std::vector<int64_t> shape = {2, 2, 22, 10};
    Int8GroupOptions options;
    options.groupSize = 4;
    auto whole =
        quantizeInt8Groups(slice(keys, 0, 22), shape, options, nullptr);
    CHECK(cache->dequantizeKeys() == dequantizeInt8Groups(*whole));
    auto wholeValues =
        quantizeInt8Groups(slice(values, 0, 22), shape, options, nullptr);
    CHECK(cache->dequantizeValues() == dequantizeInt8Groups(*wholeValues));
  }
}

TEST_CASE("kv cache: FP8 per head, paged and contiguous agree") {
  KvCacheConfig config = int8Config(false);
  config.scheme = KvScheme::Fp8E4M3;
  config.keyScales = {0.01f, 0.02f};
  config.valueScales = {0.05f};
  std::vector<float> keys = normalSamples(2 * 2 * 40 * 10, 3);
  std::vector<float> values = normalSamples(2 * 2 * 40 * 10, 4);
  auto contiguous = KvCache::create(config, nullptr);
  config.paged = true;
  auto paged = KvCache::create(config, nullptr);
  REQUIRE(contiguous);
  REQUIRE(paged);
  for (KvCache *cache : {&*contiguous, &*paged})
    REQUIRE(
        cache->append(slice(keys, 0, 32), slice(values, 0, 32), 32, nullptr));
  CHECK(contiguous->dequantizeKeys() == paged->dequantizeKeys());
  CHECK(contiguous->dequantizeValues() == paged->dequantizeValues());
  std::vector<int64_t> shape = {2, 2, 32, 10};
  auto direct = quantizeFp8Kv(slice(keys, 0, 32), shape,
                              Fp8KvOptions(*lookupFormat("e4m3"), 1),
                              config.keyScales, nullptr);
  CHECK(contiguous->dequantizeKeys() == dequantizeFp8Kv(*direct));
}

TEST_CASE("kv cache: refused appends leave the cache as it was") {
  std::vector<float> keys = normalSamples(2 * 2 * 40 * 10, 5);
  std::string error;
  auto contiguous = KvCache::create(int8Config(false), nullptr);
  REQUIRE(
      contiguous->append(slice(keys, 0, 30), slice(keys, 0, 30), 30, &error));
  std::vector<uint8_t> before = contiguous->keyCodes;
  CHECK_FALSE(
      contiguous->append(slice(keys, 0, 11), slice(keys, 0, 11), 11, &error));
  CHECK(error == "sequence 0 would hold 41 tokens; the cache holds 40");
  CHECK(contiguous->keyCodes == before);
  CHECK(contiguous->lengths() == std::vector<int64_t>{30, 30});

  // Paged: sequence 0's third block is -1, so token 32 has no page.
  auto paged = KvCache::create(int8Config(true), nullptr);
  REQUIRE(paged->append(slice(keys, 0, 32), slice(keys, 0, 32), 32, &error));
  CHECK_FALSE(paged->append(slice(keys, 0, 1), slice(keys, 0, 1), 1, &error));
  CHECK(error == "block table [0, 2] = -1 is not a page in [0, 6)");
  CHECK(paged->lengths() == std::vector<int64_t>{32, 32});

  CHECK_FALSE(
      paged->append(std::vector<float>(7), std::vector<float>(7), 1, &error));
  CHECK(error.find("append needs K and V of [2, 2, tokens, 10]") == 0);

  KvCacheConfig bad = int8Config(false);
  bad.scheme = KvScheme::Fp8E5M2;
  bad.keyScales = {1.0f, 1.0f, 1.0f};
  bad.valueScales = {1.0f};
  CHECK_FALSE(KvCache::create(bad, &error));
  CHECK(error.find("got 3") != std::string::npos);
}

TEST_CASE("kv cache: attention over the cache, grouped heads") {
  std::vector<float> keys = normalSamples(2 * 2 * 40 * 10, 6);
  auto cache = KvCache::create(int8Config(true), nullptr);
  REQUIRE(cache->append(slice(keys, 0, 20), slice(keys, 20, 20), 20, nullptr));
  std::vector<float> query = normalSamples(2 * 6 * 10, 7);
  std::string error;
  auto out = cache->attend(query, 6, 0.3f, 8, &error);
  REQUIRE(out);
  DecodeShape shape{2, 6, 2, 10, 20};
  std::vector<int64_t> lengths = {20, 20};
  CHECK(*out == decodeAttentionSplitK(shape, query, cache->dequantizeKeys(),
                                      cache->dequantizeValues(), lengths, 0.3f,
                                      8));
  CHECK_FALSE(cache->attend(query, 5, 0.3f, 8, &error));
  CHECK(error.find("multiple of kv heads") != std::string::npos);
}

TEST_CASE("kv cache: the directory round trips and refuses damage") {
  std::string directory = freshDirectory() + "/cache";
  std::vector<float> keys = normalSamples(2 * 2 * 40 * 10, 8);
  for (bool paged : {false, true}) {
    auto cache = KvCache::create(int8Config(paged), nullptr);
    REQUIRE(cache->append(slice(keys, 0, 9), slice(keys, 9, 9), 9, nullptr));
    std::string error;
    REQUIRE(writeKvCacheDirectory(directory, *cache, &error));
    auto back = readKvCacheDirectory(directory, &error);
    REQUIRE(back);
    CHECK(back->lengths() == cache->lengths());
    CHECK(back->keyCodes == cache->keyCodes);
    CHECK(back->valueRowScales == cache->valueRowScales);
    CHECK(back->dequantizeKeys() == cache->dequantizeKeys());
  }
  // A truncated codes file is named in the refusal.
  std::filesystem::resize_file(directory + "/k_codes.npy", 100);
  std::string error;
  CHECK_FALSE(readKvCacheDirectory(directory, &error));
  CHECK(error.find("k_codes.npy") != std::string::npos);
  CHECK_FALSE(readKvCacheDirectory(directory + "-missing", &error));
  std::ofstream(directory + "/meta.json") << "{\"format\": \"something\"}";
  CHECK_FALSE(readKvCacheDirectory(directory, &error));
  CHECK(error.find("not a 'lowbit-kv-cache-1' cache") != std::string::npos);
  std::filesystem::remove_all(std::filesystem::path(directory).parent_path());
}

// meta.json alone used to size the cache: a 2 KB directory claiming a
// capacity of 2^30 tokens made the reader allocate 32 GiB of zeros before
// it read k_codes.npy, and a batch of 2^30 made it allocate 8 GiB of
// lengths (found by the kv-cache fuzzer). Read in a child with 1 GiB of
// address space, the edited directories must be refused, not kill it.
TEST_CASE("kv cache: the reader allocates nothing meta.json alone sizes") {
  std::string directory = freshDirectory() + "/cache";
  auto cache = KvCache::create(int8Config(false), nullptr);
  REQUIRE(cache);
  REQUIRE(writeKvCacheDirectory(directory, *cache, nullptr));
  std::stringstream text;
  text << std::ifstream(directory + "/meta.json").rdbuf();
  std::string meta = text.str();
  auto edited = [&](std::string from, std::string to) {
    std::string result = meta;
    REQUIRE(result.find(from) != std::string::npos);
    return result.replace(result.find(from), from.size(), to);
  };
  struct Case {
    std::string meta, message;
  };
  for (const Case &bad :
       {Case{edited("\"capacity\": 40", "\"capacity\": 1073741824"),
             "k_codes.npy: expected int8 of shape (2, 2, 1073741824, 10)"},
        Case{edited("\"batch\": 2", "\"batch\": 1073741824"),
             "one length per sequence"}}) {
    std::ofstream(directory + "/meta.json") << bad.meta;
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
#ifndef LOWBIT_TEST_ASAN
      rlimit limit{rlim_t(1) << 30, rlim_t(1) << 30};
      setrlimit(RLIMIT_AS, &limit);
#endif
      // Nothing may leave the child but its exit status (std::bad_alloc
      // would reach Catch2's handler in the child's copy of the run).
      try {
        std::string error;
        bool refused = !readKvCacheDirectory(directory, &error);
        _exit(refused && error.find(bad.message) != std::string::npos ? 0 : 1);
      } catch (...) {
        _exit(2);
      }
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    INFO(bad.message);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  std::filesystem::remove_all(std::filesystem::path(directory).parent_path());
}

// Two (sequence, block) slots naming one page used to be accepted: init
// and append succeeded and each sequence read the other's keys.
TEST_CASE("kv cache: a block table sharing a page is refused where it enters") {
  std::string error;
  for (std::vector<int32_t> shared :
       {std::vector<int32_t>{4, 1, -1, 0, 4, 2},   // reached by both at once
        std::vector<int32_t>{4, 1, 1, 0, 5, 2}}) { // one slot not yet reached
    KvCacheConfig config = int8Config(true);
    config.blockTable = shared;
    CHECK_FALSE(KvCache::create(config, &error));
    CHECK(error.find("both name page") != std::string::npos);
  }
  // Unused slots may repeat any value outside the pages.
  KvCacheConfig unused = int8Config(true);
  unused.blockTable = {4, -1, -1, 0, -1, 9};
  CHECK(KvCache::create(unused, &error));

  // A table edited on disk is refused by the reader, before any append.
  std::string directory = freshDirectory() + "/cache";
  auto cache = KvCache::create(int8Config(true), &error);
  REQUIRE(cache);
  REQUIRE(writeKvCacheDirectory(directory, *cache, &error));
  std::filesystem::path table = directory + "/block_table.npy";
  std::string bytes;
  {
    std::ifstream in(table, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  // The last int32 (slot [1, 2] = 2) becomes 4, slot [0, 0]'s page.
  bytes[bytes.size() - 4] = 4;
  std::ofstream(table, std::ios::binary) << bytes;
  CHECK_FALSE(readKvCacheDirectory(directory, &error));
  CHECK(error.find("block table [0, 0] and [1, 2] both name page 4") !=
        std::string::npos);
  std::filesystem::remove_all(std::filesystem::path(directory).parent_path());
}
