// The CUDA driver, NVRTC and nvJitLink loaders. This machine has no GPU
// and no libcuda: the "no driver" and "no device" paths are the ones under
// test, with the real absence, the disable switch, an override path and
// the toolkit's stub libcuda (which loads but has no device).

#include "runtime/driver/CudaDriver.h"
#include "runtime/driver/NvJitLink.h"
#include "runtime/driver/Nvrtc.h"

#include <catch2/catch.hpp>

#include <filesystem>

using namespace lowbit;
using namespace lowbit::runtime;

namespace {

const char *const kStubLibcuda = "/usr/local/cuda/lib64/stubs/libcuda.so";

/// A kernel written by hand: y[i] = x[i] * factor, plus one that uses
/// shared memory, so the resource parsing sees both kinds.
const char *const kHandWrittenPtx = R"ptx(
.version 8.0
.target sm_80
.address_size 64

.visible .entry lowbit_scale(.param .u64 data, .param .u32 count,
                             .param .f32 factor)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [data];
  ld.param.u32 %r1, [count];
  ld.param.f32 %f1, [factor];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p1, %r5, %r1;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.u32 %rd3, %r5, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.global.f32 %f2, [%rd4];
  mul.rn.f32 %f3, %f2, %f1;
  st.global.f32 [%rd4], %f3;
DONE:
  ret;
}

.visible .entry lowbit_reverse_block(.param .u64 data)
{
  .shared .align 4 .b8 tile[1024];
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [data];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.global.u32 %r2, [%rd4];
  mov.u32 %r3, tile;
  shl.b32 %r4, %r1, 2;
  add.s32 %r5, %r3, %r4;
  st.shared.u32 [%r5], %r2;
  bar.sync 0;
  sub.s32 %r6, 1020, %r4;
  add.s32 %r7, %r3, %r6;
  ld.shared.u32 %r2, [%r7];
  st.global.u32 [%rd4], %r2;
  ret;
}
)ptx";

} // namespace

TEST_CASE("Without a driver, loading libcuda is a clear error value",
          "[runtime][driver]") {
  LibraryLoadOptions missing;
  missing.overridePath = "/nonexistent/libcuda.so.1";
  auto driver = loadCudaDriver(missing);
  REQUIRE_FALSE(driver.ok());
  CHECK(driver.error().code == ErrorCode::LibraryNotFound);
  CHECK_THAT(driver.error().message,
             Catch::Matchers::Contains(
                 "libcuda.so.1 not found: no NVIDIA driver on this machine; "
                 "the CPU backend and PTX output still work") &&
                 Catch::Matchers::Contains("/nonexistent/libcuda.so.1"));

  LibraryLoadOptions disabled;
  disabled.disabled = true;
  auto disabledDriver = loadCudaDriver(disabled);
  REQUIRE_FALSE(disabledDriver.ok());
  CHECK_THAT(disabledDriver.error().message,
             Catch::Matchers::Contains("LOWBIT_DISABLE_CUDA"));
}

TEST_CASE("The process-wide driver reports this machine's real state",
          "[runtime][driver]") {
  auto driver = cudaDriver();
  if (driver.ok()) {
    // A machine with a driver: what the loader bound must be usable, and
    // the driver must answer the version query (it needs no device).
    const CudaDriverApi &api = **driver;
    CHECK_FALSE(api.libraryPath.empty());
    REQUIRE(api.cuInit != nullptr);
    REQUIRE(api.cuDriverGetVersion != nullptr);
    CHECK(api.cuModuleLoadData != nullptr);
    CHECK(api.cuLaunchKernel != nullptr);
    int version = 0;
    CHECK(api.cuDriverGetVersion(&version) == kCudaSuccess);
    CHECK(version >= 12000);
    // Asked again, the same loaded library (remembered, no second dlopen).
    auto again = cudaDriver();
    REQUIRE(again.ok());
    CHECK(*again == *driver);
    return;
  }
  // This build machine has no NVIDIA driver.
  CHECK(driver.error().code == ErrorCode::LibraryNotFound);
  CHECK_THAT(driver.error().message,
             Catch::Matchers::Contains(std::string(kNoDriverMessage)));
  // Asked again, the same answer (remembered, no second dlopen).
  CHECK(cudaDriver().error().message == driver.error().message);
}

TEST_CASE("A driver without a device is NoDevice, not a crash",
          "[runtime][driver]") {
  if (!std::filesystem::exists(kStubLibcuda)) {
    WARN("no stub libcuda at " << kStubLibcuda);
    return;
  }
  LibraryLoadOptions stub;
  stub.overridePath = kStubLibcuda;
  auto driver = loadCudaDriver(stub);
  REQUIRE(driver.ok()); // every symbol lowbit needs is bound
  auto context = CudaContext::open(**driver, 0);
  REQUIRE_FALSE(context.ok());
  CHECK(context.error().code == ErrorCode::NoDevice);
  CHECK_THAT(context.error().message,
             Catch::Matchers::Contains("no CUDA device") &&
                 Catch::Matchers::Contains("cuInit"));
}

TEST_CASE("NVRTC and nvJitLink load lazily from the toolkit",
          "[runtime][driver]") {
  auto nvrtc = nvrtcLibrary();
  REQUIRE(nvrtc.ok());
  int major = 0, minor = 0;
  REQUIRE((*nvrtc)->nvrtcVersion(&major, &minor) == 0);
  CHECK(major >= 12);
  REQUIRE(nvJitLinkLibrary().ok());

  LibraryLoadOptions missing;
  missing.overridePath = "/nonexistent/libnvJitLink.so";
  auto absent = loadNvJitLink(missing);
  REQUIRE_FALSE(absent.ok());
  CHECK(absent.error().code == ErrorCode::LibraryNotFound);
  CHECK_THAT(absent.error().message,
             Catch::Matchers::Contains("PTX output still works"));
  LibraryLoadOptions disabled;
  disabled.disabled = true;
  CHECK_FALSE(loadNvrtc(disabled).ok());
}

TEST_CASE("nvJitLink turns hand-written PTX into a cubin per chip",
          "[runtime][nvjitlink]") {
  for (const char *arch : {"sm_80", "sm_89", "sm_90a"}) {
    DYNAMIC_SECTION(arch) {
      LinkOptions options;
      options.lineInfo = true;
      auto cubin = linkPtx(kHandWrittenPtx, arch, options);
      REQUIRE(cubin.ok());
      // An ELF file.
      REQUIRE(cubin->bytes.size() > 64);
      CHECK(cubin->bytes.substr(0, 4) == "\x7f"
                                         "ELF");
      CHECK(cubin->arch == arch);
      REQUIRE(cubin->allKernels.size() == 2);
      const KernelResources *scale = nullptr, *reverse = nullptr;
      for (const KernelResources &kernel : cubin->allKernels) {
        if (kernel.function == "lowbit_scale")
          scale = &kernel;
        if (kernel.function == "lowbit_reverse_block")
          reverse = &kernel;
      }
      REQUIRE(scale);
      REQUIRE(reverse);
      CHECK(scale->registers > 0);
      CHECK(scale->registers < 32);
      CHECK(scale->spillStoreBytes == 0);
      CHECK(scale->spillLoadBytes == 0);
      CHECK(scale->stackBytes == 0);
      CHECK(scale->sharedBytes == 0);
      // The tile, plus on sm_90 the 1 KiB the system reserves.
      CHECK(reverse->sharedBytes ==
            (std::string(arch) == "sm_90a" ? 2048 : 1024));
      CHECK(cubin->linkMillis > 0);
    }
  }
}

TEST_CASE("nvJitLink errors carry its log", "[runtime][nvjitlink]") {
  auto broken = linkPtx(".version 8.0\n.target sm_80\n.address_size 64\n"
                        ".visible .entry f() { bogus.instruction; }\n",
                        "sm_90a");
  REQUIRE_FALSE(broken.ok());
  CHECK(broken.error().code == ErrorCode::LinkFailed);
  CHECK_THAT(broken.error().message, Catch::Matchers::Contains("bogus"));
  auto badArch = linkPtx(kHandWrittenPtx, "compute_90");
  REQUIRE_FALSE(badArch.ok());
  CHECK(badArch.error().code == ErrorCode::InvalidArgument);
}

TEST_CASE("ptxas's verbose log is parsed into resources",
          "[runtime][nvjitlink]") {
  auto kernels = parsePtxasInfoLog(
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
      "ptxas info    : Function properties for k\n"
      "    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem, "
      "368 bytes cmem[0]\n");
  REQUIRE(kernels.size() == 1);
  CHECK(kernels[0].function == "k");
  // nvJitLink's summary after linking updates the same record.
  auto linked = parsePtxasInfoLog(
      "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
      "ptxas info    : Used 40 registers, used 1 barriers, 1024 bytes smem\n"
      "ptxas info    : Compiling entry function 'j' for 'sm_90a'\n"
      "ptxas info    : Used 8 registers, used 0 barriers\n"
      "info    : Function properties for 'k':\n"
      "info    : used 40 registers, used 1 barriers, 0 stack, 2048 bytes "
      "smem, 536 bytes cmem[0], 0 bytes lmem\n"
      "info    : Function properties for 'j':\n"
      "info    : used 8 registers, 0 stack, 0 bytes smem\n");
  REQUIRE(linked.size() == 2);
  CHECK(linked[0].sharedBytes == 2048);
  CHECK(linked[0].constantBytes == 536);
  CHECK(linked[1].sharedBytes == 0);
  CHECK(kernels[0].registers == 40);
  CHECK(kernels[0].stackBytes == 16);
  CHECK(kernels[0].spillStoreBytes == 8);
  CHECK(kernels[0].spillLoadBytes == 4);
  CHECK(kernels[0].sharedBytes == 2048);
  CHECK(kernels[0].constantBytes == 368);
}
