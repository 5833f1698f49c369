//===- EmulatorKernelTest.cpp - Hand-written GPU kernels in the emulator --===//
//
// Kernels in the gpu dialect that use what lowbit's kernels will: warp
// shuffles (xor, down, up with its valid bit), a shared-memory block
// reduction with barriers, and global atomics, lowered by the same
// lowerToNvvm, launched through the same launch plan, checked against known
// results. Then the violations the emulator must report instead of
// computing something: barriers not reached by every thread, a shuffle
// waiting for an exited lane, lanes that do not exist, out-of-bounds
// accesses, stores to inputs, shared-memory races.
//
//===----------------------------------------------------------------------===//

#include "tests/emulator/EmulatorTestSupport.h"
#include "tests/emulator/HandWrittenKernels.h"

#include <catch2/catch.hpp>

#include <iostream>
#include <numeric>

using namespace lowbit;
using namespace lowbit::testing;

namespace {

std::vector<int32_t> ramp(size_t count, uint32_t seed) {
  std::vector<int32_t> values(count);
  for (size_t i = 0; i < count; ++i)
    values[i] = int32_t((i * 2654435761u + seed) % 2001) - 1000;
  return values;
}

} // namespace

TEST_CASE("emulator: warp shuffles (xor, down, up)", "[emulator]") {
  const int64_t warps = 6; // 3 blocks of 2 warps
  std::vector<int32_t> input = ramp(size_t(warps * 32), 1);
  std::vector<int32_t> sums(size_t(warps), 0), prefix(input.size(), 0);
  std::string error =
      runI32Kernel(kWarpShuffleKernels, "sm_90a",
                   {{&input, false}, {&sums, true}, {&prefix, true}});
  REQUIRE(error == "");
  for (int64_t warp = 0; warp < warps; ++warp) {
    auto begin = input.begin() + warp * 32;
    CHECK(sums[size_t(warp)] == std::accumulate(begin, begin + 32, 0));
    int32_t running = 0;
    for (int lane = 0; lane < 32; ++lane) {
      running += input[size_t(warp * 32 + lane)];
      CHECK(prefix[size_t(warp * 32 + lane)] == running);
    }
  }
  std::cout << "emulator: hand-written warp sums (shfl.sync.bfly/down) and "
               "prefix sums (shfl.sync.up with its valid bit) over "
            << warps << " warps: exact\n";
}

TEST_CASE("emulator: shared-memory block reduction with barriers",
          "[emulator]") {
  const int64_t blocks = 5;
  std::vector<int32_t> input = ramp(size_t(blocks * 128), 2);
  std::vector<int32_t> sums(size_t(blocks), 0);
  std::string error = runI32Kernel(kSharedReductionKernel, "sm_90a",
                                   {{&input, false}, {&sums, true}});
  REQUIRE(error == "");
  for (int64_t block = 0; block < blocks; ++block) {
    auto begin = input.begin() + block * 128;
    CHECK(sums[size_t(block)] == std::accumulate(begin, begin + 128, 0));
  }
  std::cout << "emulator: hand-written shared-memory tree reduction (8 "
               "barriers per block) over "
            << blocks << " blocks: exact\n";
}

TEST_CASE("emulator: global atomics", "[emulator]") {
  std::vector<int32_t> input = ramp(1000, 3); // 11 blocks of 96, ragged
  std::vector<int32_t> totals = {0, std::numeric_limits<int32_t>::min()};
  std::string error =
      runI32Kernel(kAtomicKernel, "sm_90a", {{&input, false}, {&totals, true}});
  REQUIRE(error == "");
  CHECK(totals[0] == std::accumulate(input.begin(), input.end(), 0));
  CHECK(totals[1] == *std::max_element(input.begin(), input.end()));
  std::cout << "emulator: hand-written atomic add and max over " << input.size()
            << " threads: exact\n";
}

TEST_CASE("emulator: violations are errors, not results", "[emulator]") {
  struct Case {
    const char *name, *kernel, *expected;
  } cases[] = {
      {"barrier skipped by half of the block", kDivergentBarrierKernel,
       "every thread of a block must reach each barrier"},
      {"shuffle waiting for exited lanes", kShuffleAfterExitKernel, "exited"},
      {"full-mask shuffle in a 48-thread block", kPartialWarpShuffleKernel,
       "naming lanes that do not exist"},
      {"store one past the end", kOutOfBoundsKernel, "runs past the end"},
      {"store into an input", kStoreToInputKernel, "an input of the kernel"},
      {"shared memory read before the barrier", kSharedRaceKernel,
       "shared-memory race"},
  };
  for (const Case &c : cases) {
    std::vector<int32_t> input = ramp(128, 4), output(128, 0);
    std::string error =
        runI32Kernel(c.kernel, "sm_90a", {{&input, false}, {&output, true}});
    INFO(c.name << ": " << error);
    CHECK_THAT(error, Catch::Contains(c.expected));
    std::cout << "emulator: refused (" << c.name << "): " << error << "\n";
  }
}
