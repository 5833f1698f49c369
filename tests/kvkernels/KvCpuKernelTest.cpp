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

#include <map>
#include <memory>

using namespace lowbit;
using namespace lowbit::kv;
using namespace lowbit::kvtest;

namespace {

/// Compiles each spec once per process (the dequantize kernels repeat
/// across the input types).
compiler::KvCpuKernel &kernelFor(const KvKernelSpec &spec) {
  static std::map<std::string, std::unique_ptr<compiler::KvCpuKernel>> cache;
  std::unique_ptr<compiler::KvCpuKernel> &entry =
      cache[formatKvKernelSpec(spec)];
  if (!entry) {
    auto compiled = compiler::compileKvForCpu(spec);
    if (!compiled)
      throw std::runtime_error(errorText(compiled.takeError()));
    entry = std::move(*compiled);
  }
  return *entry;
}

/// The CPU tail as a KvRunner.
std::string runOnCpu(const KvKernelSpec &spec,
                     const std::vector<compiler::KvBuffer> &buffers) {
  return errorText(kernelFor(spec).run(buffers));
}

} // namespace

// head_dim 72 = 64 + a short group of 8; 40 = 32 + 8, or 5 groups of 7 +
// a short 5; 64 in groups of 4 has no short group.
TEST_CASE("kv_int8 multiplier on the CPU tail", "[kvcpu]") {
  checkEveryLayoutAndType(runOnCpu, "kv_int8_g64 convention=multiplier", 72);
  checkEveryLayoutAndType(runOnCpu, "kv_int8_g4 convention=multiplier", 64);
  checkEveryLayoutAndType(runOnCpu, "kv_int8_g7 convention=multiplier eps=0.5",
                          40);
}

TEST_CASE("kv_int8 divisor on the CPU tail", "[kvcpu]") {
  checkEveryLayoutAndType(runOnCpu, "kv_int8_g64 convention=divisor", 72);
  checkEveryLayoutAndType(runOnCpu, "kv_int8_g32 convention=divisor", 40);
}

TEST_CASE("kv_fp8_e4m3 on the CPU tail", "[kvcpu]") {
  checkEveryLayoutAndType(runOnCpu, "kv_fp8_e4m3 scale=per_tensor", 24);
  checkEveryLayoutAndType(runOnCpu, "kv_fp8_e4m3 scale=per_head", 24);
}

TEST_CASE("kv_fp8_e5m2 on the CPU tail", "[kvcpu]") {
  checkEveryLayoutAndType(runOnCpu, "kv_fp8_e5m2 scale=per_tensor", 24);
  checkEveryLayoutAndType(runOnCpu, "kv_fp8_e5m2 scale=per_head", 24);
}

TEST_CASE("kv_append skips tokens outside the cache", "[kvcpu]") {
  checkAppendSkipsOutsideTheCache(runOnCpu);
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
