//===- MatmulGemvTest.cpp - The matmul's GEMV in the GPU emulator ---------===//
//
// The GEMV of lowering/GpuMatmulGemv.h (docs/matmul-gpu.md) over the
// matmul ABI's 2-D buffers, lowered by the GPU tail and run in the GPU
// emulator on sm_80, sm_90a and sm_100a: Y bit for bit the ordered
// reference (matmul::orderedMatmul) for every weight scheme of issue 27,
// M in {1, 3, 16, 17, 64}, a ragged [N, K] (the per-byte code path and a
// chunk cut by K) and an aligned one (16-byte code loads). Its PTX
// assembles with ptxas on every chip lowbit supports. The sweep adds every
// dtype pair on every target and a K past 1024 (chunks wrap around the 32
// slices).
//
//===----------------------------------------------------------------------===//

#include "MatmulKernelHarness.h"

#include "lowering/GpuMatmulGemv.h"
#include "tests/matmul/MatmulTestData.h"

#include <catch2/catch.hpp>

#include <array>

using namespace lowbit;
using namespace lowbit::matmul;
namespace mt = lowbit::matmul::test;
using namespace lowbit::matmul::test;

namespace {

constexpr ValueType kDtypes[] = {ValueType::F32, ValueType::F16,
                                 ValueType::BF16};
/// One M per row bucket (1, 2-4, 5-16) and two past 16 (an f32 X's
/// passes; the kernel alone serves every M).
constexpr int64_t kRows[] = {1, 3, 5, 16, 17, 64};
constexpr std::array<const char *, 3> kEmulatedTargets = {"sm_80", "sm_90a",
                                                          "sm_100a"};

/// Every M of kRows through one emulated kernel per target, bit-exact to
/// the ordered reference, for each [n, k] of `shapes`.
void checkGemv(const mt::WeightSchemeCase &weightCase, ValueType input,
               ValueType output, bool bias,
               std::span<const std::array<int64_t, 2>> shapes,
               std::span<const char *const> targets) {
  KernelCase gemv{mt::schemeOf(weightCase), input, output, bias};
  INFO(weightCase.label << " from=" << valueTypeName(input) << " to="
                        << valueTypeName(output) << (bias ? " bias" : ""));
  std::string text = kernelModuleText({&gemv, 1}, emitMatmulGemv);
  for (const char *targetName : targets) {
    INFO(targetName);
    std::unique_ptr<emulator::EmulatedProgram> program =
        compileKernels(text, targetName);
    size_t compared = 0;
    for (auto [n, k] : shapes) {
      INFO("n=" << n << " k=" << k);
      std::string error;
      std::optional<QuantizedTensor> weights = quantize(
          gemv.scheme, mt::weightLikeMatrix(n, k, uint64_t(n * 31 + k)), n, k,
          &error);
      INFO(error);
      REQUIRE(weights);
      std::vector<float> biasValues =
          bias ? mt::biasVector(n, 7) : std::vector<float>();
      for (int64_t m : kRows) {
        INFO("m=" << m);
        std::vector<uint8_t> xBytes =
            mt::normalActivations(input, m, k, uint64_t(m));
        std::optional<std::vector<uint8_t>> expected = orderedMatmul(
            *weights, input, xBytes, m, biasValues, output, &error);
        REQUIRE(expected);
        std::vector<uint8_t> actual =
            runKernel(*program, gemv, *weights, xBytes, m, biasValues, error);
        INFO(error);
        REQUIRE(error.empty());
        CHECK(actual == *expected);
        compared += expected->size() / size_t(valueTypeBytes(output));
      }
    }
    std::printf("matmul-gpu: %-20s %-7s gemv: %zu outputs bit-exact\n",
                weightCase.label, targetName, compared);
  }
}

/// A ragged shape (13 x 200: rows of 100 or 200 code bytes take the
/// per-byte path, the last chunk is cut at 8) and an aligned one (16-byte
/// code loads; K a whole number of chunks).
constexpr std::array<std::array<int64_t, 2>, 2> kShapes = {
    {{13, 200}, {9, 256}}};

} // namespace

TEST_CASE("the GEMV is bit-exact to the order for every "
          "weight scheme on sm_80, sm_90a and sm_100a",
          "[matmul-gpu][emulator]") {
  // X and Y dtypes rotate over the schemes and the bias alternates, as in
  // the CPU test; the sweep runs every pair.
  size_t index = 0;
  for (const mt::WeightSchemeCase &weightCase : mt::weightSchemeCases()) {
    checkGemv(weightCase, kDtypes[index % 3], kDtypes[(index / 3 + index) % 3],
              index % 2 == 1, kShapes, kEmulatedTargets);
    ++index;
  }
}

TEST_CASE("the GEMV reads swizzled 128x4 scales, bit-exact",
          "[matmul-gpu][emulator]") {
  for (const mt::WeightSchemeCase &weightCase : mt::swizzledSchemeCases())
    checkGemv(weightCase, ValueType::BF16, ValueType::F32, /*bias=*/true,
              kShapes, kEmulatedTargets);
}

/// Integer codes with a half-precision scale, dequantized two at a time in
/// X's dtype (docs/matmul-gpu.md, "Dequantization in registers"): f16 X
/// with f16 scales (nibbles and bytes, signed, unsigned and asymmetric,
/// groups of 8, 32 and 128 and per channel), bf16 X with bf16 scales and
/// with f16 scales (the split scale), each bit-exact to the order.
TEST_CASE("the GEMV's packed integer dequantization is bit-exact",
          "[matmul-gpu][emulator]") {
  static const mt::WeightSchemeCase kIntegerCases[] = {
      {"int4_g128 asym", "int4_g128"},
      {"int4_g128 sym",
       "scheme(format=int4,scale=group(128;axis=1),tail=true,type=f16,"
       "rule=absmax,packing=nibble)"},
      {"uint4 asym g8 f16",
       "scheme(format=uint4,scale=group(8;axis=1),tail=true,type=f16,"
       "rule=minmax,zero_point=true,packing=nibble)"},
      {"int4 g16 bf16",
       "scheme(format=int4,scale=group(16;axis=1),tail=true,type=bf16,"
       "rule=absmax,packing=nibble)"},
      {"int8 g32 f16",
       "scheme(format=int8,scale=group(32;axis=1),tail=true,type=f16,"
       "rule=absmax)"},
      {"uint8 asym per channel f16",
       "scheme(format=uint8,scale=per_channel(axis=0),type=f16,rule=minmax,"
       "zero_point=true)"},
  };
  for (const mt::WeightSchemeCase &weightCase : kIntegerCases)
    for (ValueType input : {ValueType::F16, ValueType::BF16})
      checkGemv(weightCase, input, ValueType::F32, /*bias=*/false, kShapes,
                kEmulatedTargets);
}

TEST_CASE("the GEMV's PTX assembles on every chip", "[matmul-gpu][ptx]") {
  // One module with every scheme's kernel (X and Y rotating): one
  // compile and one ptxas run per chip.
  std::vector<KernelCase> cases = rotatedCases(kDtypes, kDtypes);
  // Every scheme's kernel, each with its fma chain.
  checkKernelsAssemble(cases, emitMatmulGemv, {"fma.rn.f32"});
}

TEST_CASE("sweep: every scheme, dtype pair and target, K past "
          "1024",
          "[.sweep][matmul-gpu]") {
  static constexpr std::array<std::array<int64_t, 2>, 3> kSweepShapes = {
      {{13, 200}, {9, 256}, {67, 2113}}};
  for (const mt::WeightSchemeCase &weightCase : mt::weightSchemeCases())
    for (ValueType input : kDtypes)
      for (ValueType output : kDtypes)
        checkGemv(weightCase, input, output, /*bias=*/true, kSweepShapes,
                  kEmulatedTargets);
}
