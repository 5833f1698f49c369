//===- KvAttentionPtxTest.cpp - Decode-attention PTX assembles ------------===//
//
// Every KV scheme, contiguous and paged, compiled to PTX for sm_80, sm_89,
// sm_90a and sm_100a, and assembled by ptxas (when the toolkit is there):
// two kernels, the splits and their merge.
//
//===----------------------------------------------------------------------===//

#include "tests/gpu/GpuTestSupport.h"

#include "runtime/compiler/KvAttentionCompiler.h"
#include "runtime/compiler/KvFamilyCompile.h"

#include <catch2/catch.hpp>

using namespace lowbit;

TEST_CASE("decode-attention PTX assembles for sm_80, sm_89, sm_90a, sm_100a") {
  const char *schemes[] = {"kv_int8_g64 convention=divisor",
                           "kv_fp8_e4m3 scale=per_head",
                           "kv_fp8_e5m2 scale=per_tensor"};
  // Each chip gets one scheme contiguous and the next one paged, so every
  // scheme and layout is on two chips and the test stays a few seconds.
  const char *chips[] = {"sm_80", "sm_89", "sm_90a", "sm_100a"};
  int assembled = 0;
  for (int chipIndex = 0; chipIndex < 4; ++chipIndex)
    for (int paged = 0; paged < 2; ++paged) {
      const char *chip = chips[chipIndex];
      const char *scheme = schemes[(chipIndex + paged) % 3];
      const char *layout = paged ? "paged" : "contiguous";
      std::string text = std::string("kv_attend ") + scheme +
                         " q=bf16 layout=" + layout +
                         " q_heads=32 kv_heads=8 head_dim=128";
      INFO(text << " on " << chip);
      std::string error;
      auto spec = kv::parseKvAttentionSpec(text, &error);
      REQUIRE(spec);
      std::optional<Target> target = parseTarget(chip, &error);
      REQUIRE(target);
      auto ptx = compiler::compileKvFamilyToPtx(*spec, *target);
      if (!ptx)
        FAIL(llvm::toString(ptx.takeError()));
      CHECK(ptx->kernelNames.size() == 2);
      CHECK(ptx->ptx.find(".target " + std::string(chip)) != std::string::npos);
      // FP8 with a bf16 query takes the tensor-core dot by default.
      INFO(kv::printKvAttentionSpec(*spec));
      CHECK((ptx->ptx.find("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16."
                           "f32") != std::string::npos) == spec->isFp8());
      if (test::ptxasPath().empty())
        continue;
      test::checkAssembles(ptx->ptx, chip);
      ++assembled;
    }
  if (!test::ptxasPath().empty())
    CHECK(assembled == 8);
}

TEST_CASE("decode-attention PTX refuses a target that is not NVIDIA") {
  std::string error;
  auto spec = kv::parseKvAttentionSpec(
      "kv_attend kv_int8 q_heads=2 kv_heads=1 head_dim=8", &error);
  REQUIRE(spec);
  std::optional<Target> cpu = parseTarget("cpu", &error);
  REQUIRE(cpu);
  auto ptx = compiler::compileKvFamilyToPtx(*spec, *cpu);
  REQUIRE(!ptx);
  CHECK_THAT(llvm::toString(ptx.takeError()),
             Catch::Contains("needs an NVIDIA target"));
}

TEST_CASE("decode-attention PTX: head_dim 72 (one load per channel) "
          "assembles, and a block over 48 KiB of shared memory is refused") {
  std::string error;
  std::optional<Target> target = parseTarget("sm_90a", &error);
  REQUIRE(target);
  auto ragged = kv::parseKvAttentionSpec(
      "kv_attend kv_int8_g32 q=f16 q_heads=4 kv_heads=1 head_dim=72", &error);
  REQUIRE(ragged);
  auto ptx = compiler::compileKvFamilyToPtx(*ragged, *target);
  if (!ptx)
    FAIL(llvm::toString(ptx.takeError()));
  // Stage 1 shuffles (the FlashDecoding kernel), stage 2 does not.
  CHECK(ptx->ptx.find("shfl.sync.bfly") != std::string::npos);
  if (!test::ptxasPath().empty())
    test::checkAssembles(ptx->ptx, "sm_90a");

  // 4 x (4096 x 64 + 4 x 64 + 16 x 128 + 16) B of shared memory.
  auto large = kv::parseKvAttentionSpec(
      "kv_attend kv_fp8_e4m3 q_heads=64 kv_heads=1 head_dim=128 split=4096",
      &error);
  REQUIRE(large);
  auto refused = compiler::compileKvFamilyToPtx(*large, *target);
  REQUIRE(!refused);
  std::string message = llvm::toString(refused.takeError());
  CHECK_THAT(message, Catch::Contains("no GPU kernel"));
  CHECK_THAT(message, Catch::Contains("1057856 B for split 4096, 64 heads "
                                      "per kv head, head_dim 128"));
}
