//===- KvAttentionMmaTest.cpp - The tensor-core q.K against float64 -------===//
//
// dot=mma (docs/decode-attention.md, "Tensor-core q.K"): the GPU kernels
// run in the emulator (whose mma.sync is docs/emulator.md's model) are
// within 1e-5 relative of the float64 reference on the dequantized cache,
// for FP8 e4m3 and e5m2, per tensor and per head, f16 and bf16 queries,
// contiguous and paged, 1, 4, 8 and 12 query heads per kv head, head_dim
// 128, 64 and 80 (a quad lane without a fifth chunk), lengths 0, 1, 17
// and 300. The CPU tail of the same spec keeps KvDecodeOrder's order bit
// for bit.
//
//===----------------------------------------------------------------------===//

#include "tests/kvattention/KvAttentionCase.h"

#include "kv/KvAttention.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

using namespace lowbit;
using lowbit::testing::AttentionCase;

namespace {

void checkMma(const std::string &text, const std::string &chip,
              float queryScale = 1.0f) {
  INFO(text << " on " << chip << ", query scale " << queryScale);
  AttentionCase data =
      AttentionCase::make(text, {0, 1, 17, 300}, 13, queryScale);
  REQUIRE(data.spec.dot == kv::DotKind::Mma);
  std::vector<float> output = data.runEmulator(chip);
  double error = kv::relativeError(data.float64Reference(), output);
  INFO("relative error " << error);
  CHECK(error < 1e-5);
  // Length 0 gives zeros.
  for (int64_t i = 0; i < data.spec.qHeads * data.spec.headDim; ++i)
    REQUIRE(output[i] == 0.0f);
}

} // namespace

TEST_CASE("dot=mma kernels in the emulator are within 1e-5 of float64") {
  const char *specs[] = {
      "kv_attend kv_fp8_e4m3 scale=per_head q=bf16 layout=contiguous "
      "q_heads=8 kv_heads=2 head_dim=128 split=64",
      "kv_attend kv_fp8_e5m2 scale=per_tensor q=f16 layout=paged "
      "q_heads=2 kv_heads=2 head_dim=128 split=64",
      "kv_attend kv_fp8_e4m3 scale=per_tensor q=f16 layout=paged "
      "q_heads=16 kv_heads=2 head_dim=80 split=32",
      "kv_attend kv_fp8_e5m2 scale=per_head q=bf16 layout=contiguous "
      "q_heads=8 kv_heads=1 head_dim=80 split=64",
      "kv_attend kv_fp8_e4m3 scale=per_head q=bf16 layout=paged "
      "q_heads=12 kv_heads=1 head_dim=64 split=64"};
  for (const char *text : specs)
    checkMma(text, "sm_90a");
  // sm_80 decodes FP8 in software before the f16 narrowing.
  checkMma(specs[0], "sm_80");
}

TEST_CASE("dot=mma: a bf16 query outside f16's range is rescaled by a "
          "power of two") {
  // Without the rescale, 2^20-sized values overflow f16 and 2^-30-sized
  // ones underflow it; softmax_scale brings the logits back to O(1).
  checkMma("kv_attend kv_fp8_e4m3 scale=per_head q=bf16 q_heads=4 kv_heads=1 "
           "head_dim=64 split=64 softmax_scale=1.1920929e-07",
           "sm_90a", std::ldexp(1.0f, 20));
  checkMma("kv_attend kv_fp8_e5m2 scale=per_tensor q=bf16 q_heads=4 "
           "kv_heads=1 head_dim=64 split=64 softmax_scale=134217728",
           "sm_90a", std::ldexp(1.0f, -30));
}

TEST_CASE("dot=mma: the CPU tail keeps KvDecodeOrder's order bit for bit") {
  AttentionCase data = AttentionCase::make(
      "kv_attend kv_fp8_e4m3 scale=per_head q=bf16 layout=paged q_heads=8 "
      "kv_heads=2 head_dim=128 split=64",
      {0, 1, 17, 300}, 13);
  REQUIRE(data.spec.dot == kv::DotKind::Mma);
  std::vector<float> output = data.runCpu();
  std::vector<float> expected = data.kernelOrderReference();
  REQUIRE(output.size() == expected.size());
  CHECK(std::memcmp(output.data(), expected.data(),
                    output.size() * sizeof(float)) == 0);
}
