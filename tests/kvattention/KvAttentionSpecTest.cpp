//===- KvAttentionSpecTest.cpp - The kv_attend text form ------------------===//

#include "kv/KvAttentionSpec.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <string>

using namespace lowbit::kv;

TEST_CASE("kv_attend parses every field and prints back the same spec") {
  std::string error;
  auto spec = parseKvAttentionSpec(
      "kv_attend kv_fp8_e4m3 scale=per_head q=bf16 layout=paged q_heads=32 "
      "kv_heads=8 head_dim=128",
      &error);
  INFO(error);
  REQUIRE(spec);
  CHECK(spec->scheme == KvScheme::Fp8E4M3);
  CHECK(spec->perHead);
  CHECK(spec->query == QueryDtype::BF16);
  CHECK(spec->paged);
  CHECK(spec->qHeads == 32);
  CHECK(spec->kvHeads == 8);
  CHECK(spec->groupHeads() == 4);
  CHECK(spec->headDim == 128);
  CHECK(spec->splitTokens == 256);
  CHECK(spec->softmaxScale == 1.0f / std::sqrt(128.0f));
  CHECK(spec->dot == DotKind::Mma);
  std::string text = printKvAttentionSpec(*spec);
  CHECK(text == "kv_attend kv_fp8_e4m3 scale=per_head q=bf16 layout=paged "
                "q_heads=32 kv_heads=8 head_dim=128 split=256 "
                "softmax_scale=0.0883883461 dot=mma");
  auto again = parseKvAttentionSpec(text, &error);
  REQUIRE(again);
  CHECK(printKvAttentionSpec(*again) == text);
  CHECK(again->softmaxScale == spec->softmaxScale);
}

TEST_CASE("kv_attend's dot: mma by default where it applies, fma named or "
          "elsewhere") {
  std::string error;
  struct Case {
    const char *text;
    DotKind dot;
  };
  const Case cases[] = {
      {"kv_attend kv_fp8_e5m2 q=f16 q_heads=4 kv_heads=1 head_dim=64",
       DotKind::Mma},
      {"kv_attend kv_fp8_e4m3 q=bf16 q_heads=4 kv_heads=1 head_dim=64 "
       "dot=fma",
       DotKind::Fma},
      // An f32 query, int8 groups and a head_dim that is not a multiple of
      // 16 keep the fma dot.
      {"kv_attend kv_fp8_e4m3 q=f32 q_heads=4 kv_heads=1 head_dim=64",
       DotKind::Fma},
      {"kv_attend kv_int8_g32 q=bf16 q_heads=4 kv_heads=1 head_dim=64",
       DotKind::Fma},
      {"kv_attend kv_fp8_e4m3 q=bf16 q_heads=4 kv_heads=1 head_dim=72",
       DotKind::Fma},
  };
  for (const Case &item : cases) {
    INFO(item.text);
    auto spec = parseKvAttentionSpec(item.text, &error);
    REQUIRE(spec);
    CHECK(spec->dot == item.dot);
    std::string text = printKvAttentionSpec(*spec);
    CHECK(text.ends_with(std::string(" dot=") +
                         std::string(dotKindName(item.dot))));
    auto again = parseKvAttentionSpec(text, &error);
    REQUIRE(again);
    CHECK(again->dot == item.dot);
  }
}

TEST_CASE("kv_attend's default split gives one 32k-token sequence >= 2 "
          "blocks per SM of 132") {
  std::string error;
  // The rule's values, written out: 64 for one kv head, 128 for two, 256
  // from three up; a split the text names is kept.
  const std::pair<int64_t, int64_t> expected[] = {
      {1, 64}, {2, 128}, {3, 256}, {4, 256}, {8, 256}};
  for (auto [kvHeads, split] : expected) {
    std::string text =
        "kv_attend kv_fp8_e4m3 q_heads=" + std::to_string(2 * kvHeads) +
        " kv_heads=" + std::to_string(kvHeads) + " head_dim=64";
    INFO(text);
    auto spec = parseKvAttentionSpec(text, &error);
    REQUIRE(spec);
    CHECK(spec->splitTokens == split);
    CHECK(kvHeads * ((32768 + split - 1) / split) >= 2 * 132);
    CHECK(printKvAttentionSpec(*spec).find(" split=" + std::to_string(split) +
                                           " ") != std::string::npos);
  }
  auto named = parseKvAttentionSpec(
      "kv_attend kv_fp8_e4m3 q_heads=2 kv_heads=1 head_dim=64 split=512",
      &error);
  REQUIRE(named);
  CHECK(named->splitTokens == 512);
}

TEST_CASE("kv_attend takes int8 groups of any size and both conventions") {
  std::string error;
  auto spec = parseKvAttentionSpec(
      "kv_attend kv_int8_g32 convention=divisor q_heads=4 kv_heads=4 "
      "head_dim=72 split=100 softmax_scale=0.5",
      &error);
  INFO(error);
  REQUIRE(spec);
  CHECK(spec->groupSize == 32);
  CHECK(spec->scaleWidth() == 3);
  CHECK(spec->convention == ScaleConvention::Divisor);
  CHECK(spec->splitTokens == 100);
  CHECK(spec->softmaxScale == 0.5f);
  CHECK(!spec->paged);
  auto plain = parseKvAttentionSpec(
      "kv_attend kv_int8 q_heads=1 kv_heads=1 head_dim=8", &error);
  REQUIRE(plain);
  CHECK(plain->groupSize == 64);
  CHECK(plain->convention == ScaleConvention::Multiplier);
}

TEST_CASE("kv_attend errors name the offending token") {
  struct Case {
    const char *text, *message;
  };
  const Case cases[] = {
      {"quantize kv_int8 q_heads=1 kv_heads=1 head_dim=8", "'quantize'"},
      {"kv_attend kv_int4 q_heads=1 kv_heads=1 head_dim=8",
       "'kv_int4' is not a KV scheme"},
      {"kv_attend kv_int8_g0 q_heads=1 kv_heads=1 head_dim=8",
       "'kv_int8_g0' is not a KV scheme"},
      {"kv_attend kv_kivi_int4 q_heads=1 kv_heads=1 head_dim=8",
       "'kv_kivi_int4' is a KIVI scheme: kivi_attend takes it"},
      {"kv_attend kv_kivi_int2 q_heads=1 kv_heads=1 head_dim=8",
       "'kv_kivi_int2' is a KIVI scheme: kivi_attend takes it"},
      {"kv_attend kv_int8 q_heads=6 kv_heads=4 head_dim=8",
       "'q_heads=6' is not a multiple of kv_heads=4"},
      {"kv_attend kv_int8 scale=per_head q_heads=1 kv_heads=1 head_dim=8",
       "'scale=per_head': scale= is per_tensor or per_head, for FP8"},
      {"kv_attend kv_fp8_e5m2 convention=divisor q_heads=1 kv_heads=1 "
       "head_dim=8",
       "'convention=divisor' has a bad value for convention"},
      {"kv_attend kv_int8 q=f64 q_heads=1 kv_heads=1 head_dim=8",
       "'q=f64' has a bad value for q"},
      {"kv_attend kv_int8 layout=ring q_heads=1 kv_heads=1 head_dim=8",
       "'layout=ring' has a bad value for layout"},
      {"kv_attend kv_int8 q_heads=0 kv_heads=1 head_dim=8",
       "'q_heads=0' has a bad value for q_heads"},
      {"kv_attend kv_int8 q_heads=1 kv_heads=1 head_dim=8 split=x",
       "'split=x' has a bad value for split"},
      {"kv_attend kv_int8 q_heads=1 kv_heads=1 head_dim=8 softmax_scale=x",
       "'softmax_scale=x' has a bad value for softmax_scale"},
      {"kv_attend kv_int8 q_heads=1 kv_heads=1 head_dim=8 softmax_scale=inf",
       "'softmax_scale=inf': softmax_scale must be a positive normal number "
       "(finite, at least 2^-126), got inf"},
      {"kv_attend kv_int8 q_heads=1 kv_heads=1 head_dim=8 softmax_scale=nan",
       "'softmax_scale=nan': softmax_scale must be a positive normal number"},
      {"kv_attend kv_int8 q_heads=1 kv_heads=1 head_dim=8 softmax_scale=-0",
       "'softmax_scale=-0': softmax_scale must be a positive normal number "
       "(finite, at least 2^-126), got -0"},
      {"kv_attend kv_int8 q_heads=1 kv_heads=1 head_dim=8 softmax_scale=0",
       "got 0"},
      {"kv_attend kv_int8 q_heads=1 kv_heads=1 head_dim=8 "
       "softmax_scale=-0.125",
       "got -0.125"},
      {"kv_attend kv_int8 q_heads=1 kv_heads=1 head_dim=8 softmax_scale=1e-40",
       "got 9.9999461e-41"},
      {"kv_attend kv_int8 q_heads=1 kv_heads=1 head_dim=8 window=4",
       "'window=4': unknown option 'window'"},
      {"kv_attend kv_int8 q_heads=1 kv_heads=1 head_dim=8 paged",
       "'paged' is not a key=value option"},
      {"kv_attend kv_int8 q_heads=1 head_dim=8",
       "names q_heads=, kv_heads= and head_dim="},
      {"kv_attend kv_fp8_e4m3 q=bf16 q_heads=1 kv_heads=1 head_dim=16 "
       "dot=tensor",
       "'dot=tensor' has a bad value for dot"},
      {"kv_attend kv_fp8_e4m3 q=f32 q_heads=1 kv_heads=1 head_dim=16 dot=mma",
       "'dot=mma': dot=mma multiplies f16 operands: an f32 query"},
      {"kv_attend kv_int8 q=bf16 q_heads=1 kv_heads=1 head_dim=16 dot=mma",
       "'dot=mma': dot=mma takes FP8 caches"},
      {"kv_attend kv_fp8_e5m2 q=f16 q_heads=1 kv_heads=1 head_dim=24 dot=mma",
       "'dot=mma': dot=mma needs head_dim a multiple of 16 (one mma k-step), "
       "not 24"},
  };
  for (const Case &item : cases) {
    INFO(item.text);
    std::string error;
    CHECK_FALSE(parseKvAttentionSpec(item.text, &error));
    CHECK_THAT(error, Catch::Contains(item.message));
  }
}

TEST_CASE("kv_attend takes any positive normal softmax_scale") {
  for (const char *scale : {"1.17549435e-38", "3.40282347e+38", "0.125"}) {
    INFO(scale);
    std::string error;
    auto spec = parseKvAttentionSpec(
        std::string("kv_attend kv_int8 q_heads=1 kv_heads=1 head_dim=8 "
                    "softmax_scale=") +
            scale,
        &error);
    REQUIRE(spec);
    CHECK(spec->softmaxScale == std::strtof(scale, nullptr));
  }
}
