//===- CubinMakerTest.cpp - nvJitLink's warm-up and the cubin's maker -----===//
//
// docs/pipeline.md: nvJitLink's first use runs on a background thread while
// the lowering runs, and who turns PTX into machine code (nvJitLink at
// compile time, or the driver's PTX JIT at load) is a choice with an
// environment switch. No GPU needed: the driver path stores PTX only, which
// CudaModule::load hands to cuModuleLoadData.
//
//===----------------------------------------------------------------------===//

#include "runtime/driver/NvJitLink.h"

#include <catch2/catch.hpp>

#include <cstdlib>

using namespace lowbit;
using namespace lowbit::runtime;

namespace {

const char *const kKernelPtx = ".version 8.0\n"
                               ".target sm_80\n"
                               ".address_size 64\n"
                               ".visible .entry lowbit_test()\n"
                               "{\n"
                               "  ret;\n"
                               "}\n";

} // namespace

TEST_CASE("the nvJitLink warm-up loads the library on a background thread",
          "[runtime][nvjitlink][warmup]") {
  // Not a chip: nothing starts, nothing to wait for.
  startNvJitLinkWarmup("compute_90");
  CHECK_FALSE(waitForNvJitLinkWarmup());
  startNvJitLinkWarmup("sm_90a");
  bool loaded = waitForNvJitLinkWarmup();
  CHECK(loaded == nvJitLinkLibrary().ok());
  REQUIRE(loaded); // the CUDA toolkit is part of this machine's setup
  // Started once per process: a second call is a no-op that returns.
  startNvJitLinkWarmup("sm_100a");
  CHECK(waitForNvJitLinkWarmup());
  auto cubin = linkPtx(kKernelPtx, "sm_90a");
  REQUIRE(cubin.ok());
  CHECK(!cubin->bytes.empty());
}

TEST_CASE("the cubin's maker is named, parsed and read from LOWBIT_CUBIN",
          "[runtime][nvjitlink][cubin-maker]") {
  CHECK(*parseCubinMaker("nvjitlink") == CubinMaker::NvJitLink);
  CHECK(*parseCubinMaker("driver") == CubinMaker::Driver);
  CHECK(cubinMakerName(CubinMaker::Driver) == "driver");
  CHECK(cubinMakerName(CubinMaker::NvJitLink) == "nvjitlink");
  auto bad = parseCubinMaker("ptxas");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code == ErrorCode::InvalidArgument);

  ::unsetenv("LOWBIT_CUBIN");
  CHECK(*cubinMakerFromEnvironment() == CubinMaker::NvJitLink);
  ::setenv("LOWBIT_CUBIN", "driver", 1);
  CHECK(*cubinMakerFromEnvironment() == CubinMaker::Driver);
  ::setenv("LOWBIT_CUBIN", "sometimes", 1);
  auto unknown = cubinMakerFromEnvironment();
  REQUIRE_FALSE(unknown.ok());
  CHECK_THAT(unknown.error().message,
             Catch::Matchers::Contains("LOWBIT_CUBIN") &&
                 Catch::Matchers::Contains("sometimes"));
  ::unsetenv("LOWBIT_CUBIN");
}

TEST_CASE("makeCubin: nvJitLink links, the driver path keeps the PTX",
          "[runtime][nvjitlink][cubin-maker]") {
  auto api = nvJitLinkLibrary();
  REQUIRE(api.ok());
  auto linked = makeCubin(*api, kKernelPtx, "sm_90a", CubinMaker::NvJitLink);
  REQUIRE(linked.has_value());
  CHECK(linked->arch == "sm_90a");
  CHECK(!linked->bytes.empty());
  // The driver JIT-compiles the PTX when a launch loads it: no cubin now.
  CHECK_FALSE(
      makeCubin(*api, kKernelPtx, "sm_90a", CubinMaker::Driver).has_value());
  // No nvJitLink, or PTX it rejects: PTX only, as before.
  CHECK_FALSE(makeCubin(nullptr, kKernelPtx, "sm_90a", CubinMaker::NvJitLink)
                  .has_value());
  CHECK_FALSE(makeCubin(*api, ".version 8.0\n.target sm_80\nnot ptx\n",
                        "sm_90a", CubinMaker::NvJitLink)
                  .has_value());
}
