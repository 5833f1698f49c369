//===- KvPtxTest.cpp - Every KV kernel's PTX assembles --------------------===//
//
// Every scheme x op x layout x value type through the GPU tail for sm_80,
// sm_89, sm_90a and sm_100a; ptxas (when the CUDA toolkit is present)
// accepts each PTX.
//
//===----------------------------------------------------------------------===//

#include "GpuTestSupport.h"
#include "KvKernelTestSupport.h"

#include "runtime/compiler/KvFamilyCompile.h"
#include "target/Target.h"

#include <catch2/catch.hpp>

using namespace lowbit;

namespace {

void checkEveryKernelAssembles(const char *targetName) {
  const char *schemes[] = {
      "kv_int8_g64 convention=multiplier", "kv_int8_g48 convention=divisor",
      "kv_fp8_e4m3 scale=per_head", "kv_fp8_e5m2 scale=per_tensor"};
  bool haveAssembler = !test::ptxasPath().empty();
  int assembled = 0;
  {
    std::string error;
    std::optional<Target> target = parseTarget(targetName, &error);
    REQUIRE(target);
    for (const char *scheme : schemes)
      for (const char *op : {"kv_append", "kv_dequantize"})
        for (const char *layout : {"contiguous", "paged"}) {
          std::string text =
              std::string(op) + " " + scheme + " layout=" + layout +
              " heads=8 head_dim=128" +
              (std::string(op) == "kv_append" ? " from=bf16" : " to=f16");
          INFO(targetName << ": " << text);
          auto spec = kv::parseKvKernelSpec(text, &error);
          REQUIRE(spec);
          auto ptx = compiler::compileKvFamilyToPtx(*spec, *target);
          REQUIRE(kvtest::errorText(ptx.takeError()) == "");
          CHECK(ptx->ptx.find(".entry") != std::string::npos);
          if (!haveAssembler)
            continue;
          test::checkAssembles(ptx->ptx, targetName);
          ++assembled;
        }
  }
  if (haveAssembler)
    CHECK(assembled == 4 * 2 * 2);
}

} // namespace

TEST_CASE("every KV kernel's PTX assembles for sm_80", "[kvptx]") {
  checkEveryKernelAssembles("sm_80");
}
TEST_CASE("every KV kernel's PTX assembles for sm_89", "[kvptx]") {
  checkEveryKernelAssembles("sm_89");
}
TEST_CASE("every KV kernel's PTX assembles for sm_90a", "[kvptx]") {
  checkEveryKernelAssembles("sm_90a");
}
TEST_CASE("every KV kernel's PTX assembles for sm_100a", "[kvptx]") {
  checkEveryKernelAssembles("sm_100a");
}
