//===- GpuTailWarmupTest.cpp - The GPU tail's warm-up beside a compile ----===//
//
// Its own executable with one test case: the warm-up runs once per process,
// so the order below (disabled, refused targets, then a real one) holds
// only in a process where nothing else compiled for a GPU first.
//
//===----------------------------------------------------------------------===//

#include "lowering/GpuTailWarmup.h"
#include "lowering/NvptxCodegen.h"
#include "runtime/compiler/Compiler.h"

#include "TestTarget.h"

#include <catch2/catch.hpp>

#include <cstdlib>

using namespace lowbit;
using lowbit::test::targetOf;

TEST_CASE("the GPU tail warm-up runs once, for valid NVIDIA targets only",
          "[warmup]") {
  // Nothing started yet: nothing to wait for.
  CHECK_FALSE(waitForGpuTailWarmup());

  // Off by default and with LOWBIT_TAIL_WARMUP=0.
  ::unsetenv("LOWBIT_TAIL_WARMUP");
  startGpuTailWarmup(targetOf("sm_90a"));
  CHECK_FALSE(waitForGpuTailWarmup());
  ::setenv("LOWBIT_TAIL_WARMUP", "0", 1);
  startGpuTailWarmup(targetOf("sm_90a"));
  CHECK_FALSE(waitForGpuTailWarmup());
  ::setenv("LOWBIT_TAIL_WARMUP", "1", 1);

  startGpuTailWarmup(targetOf("cpu"));
  CHECK_FALSE(waitForGpuTailWarmup());
  // A PTX version LLVM would abort on for the chip: refused, never run.
  Target tooOld = targetOf("sm_90a");
  tooOld.ptxVersion = 60;
  startGpuTailWarmup(tooOld);
  CHECK_FALSE(waitForGpuTailWarmup());
  // Nothing refused made an NVPTX machine.
  CHECK(idleNvptxMachines() == 0);

  // A real target: its small kernel goes all the way to PTX.
  startGpuTailWarmup(targetOf("sm_90a"));
  CHECK(waitForGpuTailWarmup());
  // It left its NVPTX machine in the pool, for the compile that follows.
  CHECK(idleNvptxMachines() == 1);

  // A compile right after it (the warm-up's own context is gone, the
  // caller's is the pool's) works and names its kernels.
  std::optional<KernelSpec> spec = parseKernelSpec("quantize mxfp4", nullptr);
  REQUIRE(spec);
  auto ptx = compiler::compileToPtx(*spec, targetOf("sm_90a"));
  REQUIRE(bool(ptx));
  CHECK(ptx->ptx.find(".entry") != std::string::npos);
  CHECK_FALSE(ptx->kernelNames.empty());
  // Once per process: a second start (another chip) changes nothing.
  startGpuTailWarmup(targetOf("sm_100a"));
  CHECK(waitForGpuTailWarmup());
}
