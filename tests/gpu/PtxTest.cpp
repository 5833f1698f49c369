//===- PtxTest.cpp - Target validation, native cvt table, PTX assembles ---===//
//
// Everything runs in process: a request that made LLVM abort (a PTX version
// too old for the chip, an instruction the chip lacks) would kill this test
// binary, so each refusal here doubles as a "does not abort" test.
//
//===----------------------------------------------------------------------===//

#include "CpuJit.h"
#include "GpuTestSupport.h"

#include "format/Format.h"
#include "target/NativeConversionTable.h"
#include "target/Target.h"

#include "TestTarget.h"

#include <catch2/catch.hpp>

#include <cstdio>

using namespace lowbit;
using namespace lowbit::test;

namespace {

bool nativeEncode(const std::string &target, const std::string &format,
                  Rounding rounding = Rounding::NearestEven,
                  bool saturate = true) {
  return findNativeConversion(targetOf(target), *lookupFormat(format),
                              ConversionDirection::Encode, rounding,
                              saturate) != nullptr;
}

bool nativeDecode(const std::string &target, const std::string &format) {
  return findNativeConversion(targetOf(target), *lookupFormat(format),
                              ConversionDirection::Decode,
                              Rounding::NearestEven, true) != nullptr;
}

/// The text of kernel `name` in a PTX module.
std::string kernelText(const std::string &ptx, const std::string &name) {
  size_t begin = ptx.find(".entry " + name + "(");
  if (begin == std::string::npos)
    return {};
  size_t end = ptx.find(".entry ", begin + 1);
  return ptx.substr(begin, end == std::string::npos ? end : end - begin);
}

const char *roundingName(Rounding rounding) {
  return rounding == Rounding::NearestEven  ? "rn"
         : rounding == Rounding::TowardZero ? "rz"
                                            : "rp";
}

} // namespace

TEST_CASE("targets parse and validate before codegen", "[target]") {
  std::string error;
  CHECK(parseTarget("cpu", &error)->isCpu());
  CHECK(targetOf("sm_90a").ptxVersion == 81);
  CHECK(targetOf("sm_80").ptxVersion == 70);
  CHECK(targetOf("sm_100a").ptxVersion == 86);
  CHECK(targetOf("sm_89+ptx78").ptxVersion == 78);
  CHECK(targetOf("sm_89:ptx81").ptxVersion == 81);

  CHECK_FALSE(parseTarget("sm_91", &error));
  CHECK_THAT(error, Catch::Contains("unknown target 'sm_91'"));
  CHECK_FALSE(parseTarget("sm_90a+ptxAB", &error));
  CHECK_THAT(error, Catch::Contains("malformed PTX version"));

  CHECK_FALSE(validateTarget(targetOf("sm_90a+ptx60"), &error));
  CHECK(error == "sm_90a needs PTX >= 8.0; asked for 6.0");
  CHECK_FALSE(validateTarget(targetOf("sm_100a+ptx85"), &error));
  CHECK(error == "sm_100a needs PTX >= 8.6; asked for 8.5");
  CHECK_FALSE(validateTarget(targetOf("sm_80+ptx95"), &error));
  CHECK_THAT(error, Catch::Contains("newer than LLVM 22 can emit"));
  CHECK_FALSE(validateTarget("sm_42", 0, &error));
  CHECK_THAT(error, Catch::Contains("unknown chip 'sm_42'"));
  for (const ChipInfo &chip : knownChips())
    CHECK(validateTarget(chip.name, 0, &error));
}

TEST_CASE("the native conversion table per chip", "[native]") {
  // FP8 from f32: sm_89 with PTX 8.1, sm_90 and newer.
  CHECK_FALSE(nativeEncode("sm_80", "e4m3"));
  CHECK_FALSE(nativeEncode("sm_86", "e5m2"));
  CHECK(nativeEncode("sm_89", "e4m3"));
  CHECK_FALSE(nativeEncode("sm_89+ptx78", "e4m3")); // codec, no abort
  CHECK(nativeEncode("sm_90a", "e4m3"));
  CHECK(nativeEncode("sm_90", "e5m2"));
  CHECK(nativeEncode("sm_100", "e4m3"));
  CHECK(nativeEncode("sm_120a", "ue4m3"));
  // .satfinite only; rz/rp do not exist for FP8.
  CHECK_FALSE(nativeEncode("sm_90a", "e4m3", Rounding::NearestEven, false));
  CHECK_FALSE(nativeEncode("sm_90a", "e4m3", Rounding::TowardZero));
  // FP4/FP6/E8M0: the accelerated feature sets of sm_100+ only.
  for (const char *format : {"e2m1", "e2m3", "e3m2"}) {
    INFO(format);
    CHECK_FALSE(nativeEncode("sm_89", format));
    CHECK_FALSE(nativeEncode("sm_90a", format)); // H100/H200: none
    CHECK_FALSE(nativeEncode("sm_100", format)); // plain sm_100: none
    CHECK_FALSE(nativeEncode("sm_120", format));
    CHECK(nativeEncode("sm_100a", format));
    CHECK(nativeEncode("sm_103a", format));
    CHECK(nativeEncode("sm_120a", format));
    CHECK(nativeEncode("sm_100f", format));
    CHECK_FALSE(nativeEncode("sm_100a", format, Rounding::TowardZero));
  }
  CHECK(nativeEncode("sm_100a", "e8m0", Rounding::TowardZero));
  CHECK(nativeEncode("sm_100a", "e8m0", Rounding::TowardPosInf));
  CHECK_FALSE(nativeEncode("sm_100a", "e8m0", Rounding::NearestEven));
  CHECK_FALSE(nativeEncode("sm_100a", "e8m0", Rounding::TowardZero, false));
  CHECK_FALSE(nativeEncode("sm_90a", "e8m0", Rounding::TowardZero));
  CHECK_FALSE(nativeEncode("sm_100", "e8m0", Rounding::TowardPosInf));
  // Integers, f16/bf16 and parametric formats always use the codec.
  for (const char *format : {"int8", "int4", "uint4", "f16", "bf16", "e3m4"})
    CHECK_FALSE(nativeEncode("sm_120a", format));
  // Decodes.
  CHECK(nativeDecode("sm_89", "e4m3"));
  CHECK_FALSE(nativeDecode("sm_80", "e5m2"));
  CHECK(nativeDecode("sm_100a", "e2m1"));
  CHECK_FALSE(nativeDecode("sm_90a", "e2m1"));
  CHECK_FALSE(nativeDecode("sm_120a", "e8m0"));
}

TEST_CASE("refused GPU requests return errors instead of aborting",
          "[target][refusal]") {
  std::string module = encodeFunction("enc", "e4m3", true, "rn");
  std::string result;
  // A PTX version too old for the chip: LLVM would abort.
  CHECK_FALSE(compileToPtx(module, "sm_90a+ptx60", result));
  CHECK(result == "sm_90a needs PTX >= 8.0; asked for 6.0");
  CHECK_FALSE(compileToPtx(module, "sm_120a+ptx86", result));
  CHECK(result == "sm_120a needs PTX >= 8.7; asked for 8.6");
  // Unknown chips.
  CHECK_FALSE(compileToPtx(module, "sm_99", result));
  CHECK_THAT(result, Catch::Contains("unknown target 'sm_99'"));
  // The CPU is not a PTX target.
  CHECK_FALSE(compileToPtx(module, "cpu", result));
  CHECK_THAT(result, Catch::Contains("needs an NVIDIA target"));

  // FP8 cvt on sm_89 without PTX 8.1 (LLVM would abort): the codec instead.
  REQUIRE(compileToPtx(module, "sm_89+ptx78", result));
  CHECK(result.find("e4m3x2") == std::string::npos);
  // e2m1 on sm_90a and on plain sm_100 (LLVM would abort): the codec.
  std::string fp4 =
      encodeFunction("enc", "e2m1", true, "rn") + decodeFunction("dec", "e2m1");
  for (const char *target : {"sm_90a", "sm_100", "sm_89"}) {
    INFO(target);
    REQUIRE(compileToPtx(fp4, target, result));
    CHECK(result.find("e2m1x2") == std::string::npos);
  }
  REQUIRE(compileToPtx(fp4, "sm_100a", result));
  CHECK(result.find("cvt.rn.satfinite.e2m1x2.f32") != std::string::npos);
  // e8m0 rz on sm_90a (LLVM would abort): the codec.
  REQUIRE(compileToPtx(encodeFunction("enc", "e8m0", true, "rz"), "sm_90a",
                       result));
  CHECK(result.find("ue8m0x2") == std::string::npos);
}

TEST_CASE("a reduction becomes init + atomic kernels; host stores move to "
          "the device",
          "[ptx][reduction]") {
  // The shape lowbit-to-loops emits for a dynamic per-tensor amax, followed
  // by host glue that stores the result.
  std::string reduction = R"mlir(
func.func @amax(%in: memref<?xf32>, %out: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %n = memref.dim %in, %c0 : memref<?xf32>
  %m = scf.parallel (%i) = (%c0) to (%n) step (%c1) init (%zero) -> f32 {
    %x = memref.load %in[%i] : memref<?xf32>
    scf.reduce(%x : f32) {
    ^bb0(%a: f32, %b: f32):
      %r = arith.maximumf %a, %b : f32
      scf.reduce.return %r : f32
    }
  }
  %half = arith.constant 0.5 : f32
  %scaled = arith.mulf %m, %half : f32
  memref.store %scaled, %out[%c0] : memref<1xf32>
  return
}
)mlir";
  std::string ptx;
  REQUIRE(compileToPtx(reduction, "sm_90a", ptx));
  // Three kernels: init the global, fold with compare-and-swap, store.
  CHECK(ptx.find(".global .align 4 .b8 lowbit_reduction_0[4];") !=
        std::string::npos);
  CHECK(ptx.find("atom.") != std::string::npos);
  CHECK(ptx.find(".cas.b32") != std::string::npos);
  CHECK(ptx.find(".entry amax_kernel_1(") != std::string::npos);
  std::string log;
  if (!ptxasPath().empty()) {
    INFO(log);
    CHECK(ptxAssembles(ptx, "sm_90a", log));
  }
}

TEST_CASE("every conversion's PTX assembles, native exactly where the "
          "table says",
          "[ptx]") {
  struct Kernel {
    std::string name, format;
    ConversionDirection direction;
    bool saturate;
    Rounding rounding;
  };
  std::vector<Kernel> kernels;
  std::string module;
  for (const Format &format : namedFormats()) {
    std::string formatName = format.name();
    for (bool saturate : {true, false})
      for (Rounding rounding : {Rounding::NearestEven, Rounding::TowardZero,
                                Rounding::TowardPosInf}) {
        std::string name = "enc_" + formatName + (saturate ? "_sat_" : "_") +
                           roundingName(rounding);
        module +=
            encodeFunction(name, formatName, saturate, roundingName(rounding));
        kernels.push_back({name + "_kernel", formatName,
                           ConversionDirection::Encode, saturate, rounding});
      }
    module += decodeFunction("dec_" + formatName, formatName);
    kernels.push_back({"dec_" + formatName + "_kernel", formatName,
                       ConversionDirection::Decode, true,
                       Rounding::NearestEven});
  }

  // The CUDA toolkit is part of the build environment (README); a missing
  // ptxas must fail here, not pass with nothing assembled.
  bool havePtxas = !ptxasPath().empty();
  INFO("ptxas not found (CUDA_HOME/bin/ptxas); the CUDA toolkit is required");
  REQUIRE(havePtxas);
  for (const char *arch : {"sm_80", "sm_89", "sm_90a", "sm_100a", "sm_120a"}) {
    INFO(arch);
    std::string ptx;
    REQUIRE(compileToPtx(module, arch, ptx));
    Target target = targetOf(arch);
    size_t nativeCount = 0;
    for (const Kernel &kernel : kernels) {
      INFO(kernel.name);
      std::string text = kernelText(ptx, kernel.name);
      REQUIRE(!text.empty());
      const NativeConversion *row = findNativeConversion(
          target, *lookupFormat(kernel.format), kernel.direction,
          kernel.rounding, kernel.saturate);
      if (row) {
        ++nativeCount;
        CHECK(text.find(std::string(row->ptxMnemonic)) != std::string::npos);
      } else {
        // No packed narrow-format cvt at all: the codec's integer code.
        CHECK(text.find("x2.f32") == std::string::npos);
        CHECK(text.find("cvt.rn.f16x2.") == std::string::npos);
      }
    }
    std::string log;
    bool assembles = !havePtxas || ptxAssembles(ptx, arch, log);
    std::printf("ptx: %s: %zu kernels (%zu native cvt), %zu bytes of PTX, "
                "ptxas %s\n",
                arch, kernels.size(), nativeCount, ptx.size(),
                !havePtxas  ? "skipped"
                : assembles ? "ok"
                            : "FAILED");
    INFO(log);
    CHECK(assembles);
  }
}
