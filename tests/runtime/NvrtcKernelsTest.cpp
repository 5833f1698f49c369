// The NVRTC reference kernels compile for sm_80, sm_89 and sm_90a for
// every scheme, with NVIDIA's conversions (native cvt where the chip has it,
// NVIDIA's software path elsewhere), and nvJitLink makes cubins of them.

#include "runtime/nvrtc/ReferenceKernels.h"

#include <catch2/catch.hpp>

using namespace lowbit;
using namespace lowbit::runtime;

TEST_CASE("Every named scheme has a reference kernel", "[runtime][nvrtc]") {
  CHECK(referenceKernelSchemes() ==
        std::vector<std::string>{"fp8_e4m3", "fp8_e5m2", "mxfp8", "mxfp6_e2m3",
                                 "mxfp6_e3m2", "mxfp4", "nvfp4", "int4_g128",
                                 "int8", "int8_g64"});
  auto mxfp4 = referenceKernelSource("mxfp4", "bf16");
  REQUIRE(mxfp4.ok());
  CHECK(mxfp4->groupSize == 32);
  CHECK_FALSE(mxfp4->needsTensorAmax);
  CHECK(mxfp4->source.find("__nv_cvt_float_to_fp4") != std::string::npos);
  CHECK(quantizeThreads(*mxfp4, 3, 65) == 9);
  auto int8 = referenceKernelSource("int8", "f32");
  REQUIRE(int8.ok());
  CHECK(int8->needsTensorAmax);
  CHECK(quantizeThreads(*int8, 3, 65) == 195);
  CHECK(referenceKernelSource("mxfp4", "f64").error().code ==
        ErrorCode::InvalidArgument);
  CHECK_FALSE(referenceKernelSource("fp3", "f32").ok());
  CHECK(referenceNvrtcOptions("sm_90a")[0] == "--gpu-architecture=compute_90a");
}

TEST_CASE("The NVRTC reference kernels compile for sm_80, sm_89 and sm_90a",
          "[runtime][nvrtc]") {
  auto nvrtc = nvrtcLibrary();
  REQUIRE(nvrtc.ok());
  auto linker = nvJitLinkLibrary();
  REQUIRE(linker.ok());
  for (const std::string &scheme : referenceKernelSchemes()) {
    for (const char *chip : {"sm_80", "sm_89", "sm_90a"}) {
      DYNAMIC_SECTION(scheme << " " << chip) {
        auto source = referenceKernelSource(scheme, "f32");
        REQUIRE(source.ok());
        auto build = buildReferenceKernel(**nvrtc, *linker, *source, chip);
        INFO((build.ok() ? std::string() : build.error().message));
        REQUIRE(build.ok());
        CHECK(build->ptx.find(".entry lowbit_ref_quantize") !=
              std::string::npos);
        CHECK(build->ptx.find(".entry lowbit_ref_amax") != std::string::npos);
        CHECK(build->ptx.find(".entry lowbit_ref_dequantize") !=
              std::string::npos);
        CHECK(build->cubin.substr(0, 4) == "\x7f"
                                           "ELF");
        CHECK(build->quantizeResources.registers > 0);
        CHECK(build->quantizeResources.spillStoreBytes == 0);
        // Where the chip has the instruction, NVIDIA's header uses it.
        bool nativeFp8 = std::string(chip) != "sm_80";
        if (scheme == "fp8_e4m3" || scheme == "mxfp8")
          CHECK((build->ptx.find("cvt.rn.satfinite.e4m3x2.f32") !=
                 std::string::npos) == nativeFp8);
        if (scheme == "fp8_e5m2")
          CHECK((build->ptx.find("cvt.rn.satfinite.e5m2x2.f32") !=
                 std::string::npos) == nativeFp8);
        // No chip here has FP4/FP6 cvt (sm_100a and later do).
        if (scheme == "mxfp4" || scheme == "nvfp4")
          CHECK(build->ptx.find("e2m1x2") == std::string::npos);
      }
    }
  }
}

TEST_CASE("f16 and bf16 inputs compile too", "[runtime][nvrtc]") {
  auto nvrtc = nvrtcLibrary();
  REQUIRE(nvrtc.ok());
  for (const char *dtype : {"f16", "bf16"}) {
    for (const char *scheme : {"fp8_e4m3", "mxfp4", "nvfp4", "int4_g128"}) {
      DYNAMIC_SECTION(scheme << " from " << dtype) {
        auto source = referenceKernelSource(scheme, dtype);
        REQUIRE(source.ok());
        auto build = buildReferenceKernel(**nvrtc, nullptr, *source, "sm_90a");
        INFO((build.ok() ? std::string() : build.error().message));
        REQUIRE(build.ok());
        CHECK(build->cubin.empty()); // no linker given: PTX only
      }
    }
  }
}

TEST_CASE("An NVRTC error carries the compiler log", "[runtime][nvrtc]") {
  auto nvrtc = nvrtcLibrary();
  REQUIRE(nvrtc.ok());
  auto failed =
      compileWithNvrtc(**nvrtc, "__global__ void k() { nope(); }", "broken.cu",
                       {"--gpu-architecture=compute_90a"});
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.error().code == ErrorCode::CompileFailed);
  CHECK_THAT(failed.error().message, Catch::Matchers::Contains("broken.cu") &&
                                         Catch::Matchers::Contains("nope"));
}
