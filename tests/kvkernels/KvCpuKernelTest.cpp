//===- KvCpuKernelTest.cpp - KV kernels on the CPU tail, bit for bit ------===//
//
// Every scheme (kv_int8_g<G> with both conventions, ragged last groups;
// kv_fp8_e4m3/e5m2 per tensor and per head) x f16/bf16 x contiguous/paged:
// lowbit.kv_append through lowbit-kv-to-loops and the CPU tail writes
// exactly kv/KvQuantize.h's codes and scales into the cache rows at each
// sequence's position, and touches no other byte; lowbit.kv_dequantize
// reads them back exactly as kv/KvQuantize.h dequantizes.
//
//===----------------------------------------------------------------------===//

#include "KvKernelTestSupport.h"

#include <catch2/catch.hpp>

using namespace lowbit;
using namespace lowbit::kv;
using namespace lowbit::kvtest;

namespace {

void checkAppendAndDequantize(const std::string &schemeText, bool paged,
                              KvValueType type, int64_t headDim) {
  KvCase setup = makeCase(schemeText, paged, type, headDim);
  INFO(formatKvKernelSpec(setup.appendSpec));
  auto append = compiler::compileKvForCpu(setup.appendSpec);
  REQUIRE("" == errorText(append.takeError()));
  KvCacheBuffers cache = setup.emptyCache();
  REQUIRE("" == errorText((*append)->run(setup.appendBuffers(cache))));
  KvCacheBuffers expected = setup.expectedCache();
  CHECK(firstDifference(cache.codes, expected.codes) == "");
  CHECK(firstDifference(cache.scales, expected.scales) == "");

  for (KvValueType outType :
       {KvValueType::F32, KvValueType::F16, KvValueType::BF16}) {
    KvKernelSpec readSpec = setup.dequantizeSpec(outType);
    INFO(formatKvKernelSpec(readSpec));
    auto read = compiler::compileKvForCpu(readSpec);
    REQUIRE("" == errorText(read.takeError()));
    std::vector<uint8_t> output(setup.valueBytes(outType), 0xEE);
    REQUIRE("" ==
            errorText((*read)->run(setup.dequantizeBuffers(cache, output))));
    std::vector<uint8_t> expectedOutput = setup.expectedDequantized(outType);
    canonicalizeNarrowNans(output, outType);
    canonicalizeNarrowNans(expectedOutput, outType);
    CHECK(firstDifference(output, expectedOutput) == "");
  }
}

} // namespace

TEST_CASE("kv_append and kv_dequantize: kv_int8 on the CPU tail", "[kvcpu]") {
  for (const char *scheme :
       {"kv_int8_g64 convention=multiplier", "kv_int8_g64 convention=divisor",
        "kv_int8_g4 convention=multiplier", "kv_int8_g32 convention=divisor",
        "kv_int8_g7 convention=multiplier eps=0.5"})
    for (bool paged : {false, true})
      for (KvValueType type : {KvValueType::F16, KvValueType::BF16})
        // 64: whole groups for g64/g4/g32; 40: ragged for every G but 4.
        for (int64_t headDim : {64, 40}) {
          INFO(scheme << " paged=" << paged << " head_dim=" << headDim);
          checkAppendAndDequantize(scheme, paged, type, headDim);
        }
}

TEST_CASE("kv_append and kv_dequantize: kv_fp8 on the CPU tail", "[kvcpu]") {
  for (const char *scheme :
       {"kv_fp8_e4m3 scale=per_tensor", "kv_fp8_e4m3 scale=per_head",
        "kv_fp8_e5m2 scale=per_tensor", "kv_fp8_e5m2 scale=per_head"})
    for (bool paged : {false, true})
      for (KvValueType type : {KvValueType::F16, KvValueType::BF16}) {
        INFO(scheme << " paged=" << paged);
        checkAppendAndDequantize(scheme, paged, type, 24);
      }
}

TEST_CASE("kv_append skips tokens outside the cache", "[kvcpu]") {
  // Contiguous: sequence 1 starts 2 tokens before the end of its capacity;
  // paged: sequence 0 reaches a table entry of -1 and sequence 1 runs past
  // the table. Only the tokens that fit are written (expectedCache drops
  // the others), nothing else changes.
  for (bool paged : {false, true}) {
    INFO("paged=" << paged);
    KvCase setup =
        makeCase("kv_int8_g8 convention=divisor", paged, KvValueType::F16, 16);
    if (paged)
      setup.positions = {int32_t(kPageTokens) - 2,
                         2 * int32_t(kPageTokens) - 2};
    else
      setup.positions[1] = int32_t(setup.capacity) - 2;
    auto append = compiler::compileKvForCpu(setup.appendSpec);
    REQUIRE("" == errorText(append.takeError()));
    KvCacheBuffers cache = setup.emptyCache();
    REQUIRE("" == errorText((*append)->run(setup.appendBuffers(cache))));
    KvCacheBuffers expected = setup.expectedCache();
    CHECK(firstDifference(cache.codes, expected.codes) == "");
    CHECK(firstDifference(cache.scales, expected.scales) == "");
  }
}

TEST_CASE("KV CPU kernels refuse buffers of the wrong shape", "[kvcpu]") {
  KvCase setup =
      makeCase("kv_fp8_e4m3 scale=per_head", false, KvValueType::F16, 8);
  auto append = compiler::compileKvForCpu(setup.appendSpec);
  REQUIRE("" == errorText(append.takeError()));
  KvCacheBuffers cache = setup.emptyCache();
  std::vector<compiler::KvBuffer> buffers = setup.appendBuffers(cache);
  buffers[2].shape = {setup.heads + 1};
  CHECK_THAT(errorText((*append)->run(buffers)),
             Catch::Contains("buffer 2 dimension 0 is 4; the kernel takes 3"));
  buffers.pop_back();
  CHECK_THAT(errorText((*append)->run(buffers)),
             Catch::Contains("the kernel takes 4 buffers, got 3"));
}
