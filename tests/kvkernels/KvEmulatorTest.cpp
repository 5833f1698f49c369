//===- KvEmulatorTest.cpp - KV kernels' GPU modules in the emulator -------===//
//
// The cases of KvCpuKernelTest.cpp, run on the GPU modules (lowerKvForGpu:
// lowbit-to-gpu's one-warp-per-row mapping, lowering/GpuKvAppend.h; then
// lowerToNvvm) in the GPU emulator: every scheme x
// f16/bf16 x contiguous/paged, ragged last groups, appends past the cache;
// codes and scales equal kv/KvQuantize.h bit for bit and dequantize reads
// them back as the reference does. sm_90a (native FP8 cvt) everywhere, and
// sm_80 (the software FP8 codec) for kv_fp8.
//
//===----------------------------------------------------------------------===//

#include "KvEmulatorRun.h"
#include "KvKernelTestSupport.h"

#include <catch2/catch.hpp>

using namespace lowbit;
using namespace lowbit::kv;
using namespace lowbit::kvtest;

TEST_CASE("kv_int8 multiplier in the GPU emulator", "[kvemu]") {
  KvRunner run = emulatorOn("sm_90a");
  checkEveryLayoutAndType(run, "kv_int8_g64 convention=multiplier", 72);
  checkEveryLayoutAndType(run, "kv_int8_g4 convention=multiplier", 64);
  checkEveryLayoutAndType(run, "kv_int8_g7 convention=multiplier eps=0.5", 40);
}

TEST_CASE("kv_int8 divisor in the GPU emulator", "[kvemu]") {
  KvRunner run = emulatorOn("sm_90a");
  checkEveryLayoutAndType(run, "kv_int8_g64 convention=divisor", 72);
  checkEveryLayoutAndType(run, "kv_int8_g32 convention=divisor", 40);
}

TEST_CASE("kv_fp8 in the GPU emulator", "[kvemu]") {
  for (const char *targetName : {"sm_90a", "sm_80"}) {
    INFO(targetName);
    KvRunner run = emulatorOn(targetName);
    for (const char *scheme : {"kv_fp8_e4m3", "kv_fp8_e5m2"})
      for (const char *scale : {" scale=per_tensor", " scale=per_head"})
        checkEveryLayoutAndType(run, std::string(scheme) + scale, 24);
  }
}

TEST_CASE("kv_append in the GPU emulator skips tokens outside the cache",
          "[kvemu]") {
  checkAppendSkipsOutsideTheCache(emulatorOn("sm_90a"));
}

TEST_CASE("the KV kernels' GPU modules launch once", "[kvemu]") {
  KvCase setup = makeCase("kv_int8_g64 convention=multiplier", true,
                          KvValueType::BF16, 72);
  CHECK(emulatedKernelFor(setup.appendSpec, "sm_90a").plan().steps.size() == 1);
  CHECK(emulatedKernelFor(setup.dequantizeSpec(KvValueType::F32), "sm_90a")
            .plan()
            .steps.size() == 1);
}
