//===- KvKernelSpecTest.cpp - The KV kernel spec's grammar ----------------===//

#include "kv/KvKernelSpec.h"

#include <catch2/catch.hpp>

using namespace lowbit::kv;

TEST_CASE("KV kernel specs parse and print back", "[kvspec]") {
  std::string error;
  auto spec = parseKvKernelSpec("kv_append kv_int8_g64 convention=divisor "
                                "from=f16 layout=paged heads=8 head_dim=128",
                                &error);
  REQUIRE(spec);
  CHECK(spec->op == KvKernelOp::Append);
  CHECK(spec->scheme.isInt8());
  CHECK(spec->scheme.int8.groupSize == 64);
  CHECK(spec->scheme.int8.convention == ScaleConvention::Divisor);
  CHECK(spec->scheme.int8.epsilon == 1e-8f);
  CHECK(spec->layout == KvLayout::Paged);
  CHECK(spec->heads == 8);
  CHECK(spec->headDim == 128);
  CHECK(spec->scaleWidth() == 2);
  CHECK(formatKvKernelSpec(*spec) ==
        "kv_append kv_int8_g64 convention=divisor eps=9.99999994e-09 "
        "from=f16 layout=paged heads=8 head_dim=128");

  for (const char *text :
       {"kv_append kv_int8_g48 convention=multiplier eps=0.001 from=bf16 "
        "layout=contiguous heads=3 head_dim=100",
        "kv_dequantize kv_fp8_e5m2 scale=per_head to=bf16 layout=paged "
        "heads=2 head_dim=8",
        "kv_dequantize kv_fp8_e4m3 heads=1 head_dim=1"}) {
    auto parsed = parseKvKernelSpec(text, &error);
    INFO(text << ": " << error);
    REQUIRE(parsed);
    auto again = parseKvKernelSpec(formatKvKernelSpec(*parsed), &error);
    REQUIRE(again);
    CHECK(*again == *parsed);
  }
  auto ragged =
      parseKvKernelSpec("kv_append kv_int8_g48 heads=3 head_dim=100", &error);
  REQUIRE(ragged);
  CHECK(ragged->scaleWidth() == 3);
  auto perHead = parseKvKernelSpec(
      "kv_append kv_fp8_e4m3 scale=per_head heads=4 head_dim=8", &error);
  REQUIRE(perHead);
  CHECK(perHead->scaleWidth() == 4);
}

TEST_CASE("KV kernel spec errors name the offending token", "[kvspec]") {
  struct Case {
    const char *text, *message;
  };
  const Case cases[] = {
      {"kv_attend kv_int8_g64 heads=1 head_dim=8", "'kv_attend': the op"},
      {"kv_append kv_int4 heads=1 head_dim=8", "'kv_int4' is not a KV scheme"},
      {"kv_append kv_int8_g0 heads=1 head_dim=8", "'kv_int8_g0': the group"},
      {"kv_append kv_int8_gx heads=1 head_dim=8", "'kv_int8_gx': the group"},
      {"kv_append kv_fp8_e4m3 convention=divisor heads=1 head_dim=8",
       "'convention=divisor': convention= belongs to kv_int8"},
      {"kv_append kv_int8_g8 scale=per_head heads=1 head_dim=8",
       "'scale=per_head': scale= belongs to kv_fp8"},
      {"kv_append kv_int8_g8 convention=both heads=1 head_dim=8",
       "'convention=both': the convention is multiplier or divisor"},
      {"kv_append kv_int8_g8 eps=0 heads=1 head_dim=8",
       "'eps=0': eps must be a finite number > 0"},
      {"kv_append kv_int8_g8 eps=nan heads=1 head_dim=8", "'eps=nan'"},
      {"kv_append kv_int8_g8 from=f32 heads=1 head_dim=8",
       "'from=f32': kv_append reads f16 or bf16"},
      {"kv_append kv_int8_g8 to=f32 heads=1 head_dim=8",
       "'to=f32': kv_append takes from=, not to="},
      {"kv_dequantize kv_int8_g8 from=f16 heads=1 head_dim=8",
       "'from=f16': kv_dequantize takes to=, not from="},
      {"kv_append kv_int8_g8 layout=ring heads=1 head_dim=8",
       "'layout=ring': the layout is contiguous or paged"},
      {"kv_append kv_int8_g8 heads=0 head_dim=8", "'heads=0': must be"},
      {"kv_append kv_int8_g8 heads=2 heads=2 head_dim=8",
       "'heads=2': the key 'heads' is given twice"},
      {"kv_append kv_int8_g8 heads=2 head_dim=8 colour=red",
       "'colour=red': unknown key"},
      {"kv_append kv_int8_g8 heads=2 head_dim", "'head_dim': expected"},
      {"kv_append kv_int8_g8 heads=2", "needs heads= and head_dim="},
      {"kv_append", "a KV kernel spec is"},
  };
  for (const Case &c : cases) {
    std::string error;
    INFO(c.text);
    CHECK_FALSE(parseKvKernelSpec(c.text, &error));
    CHECK_THAT(error, Catch::Contains(c.message));
  }
}
