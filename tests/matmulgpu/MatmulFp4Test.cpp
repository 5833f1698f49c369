//===- MatmulFp4Test.cpp - The W4A4 FP4 GEMM in the GPU emulator ----------===//
//
// The FP4 GEMM of lowering/GpuMatmulFp4.h (docs/matmul-gpu.md, "FP4 x
// FP4"): the whole compiled module (X's quantize inside the GEMM, nvfp4's
// global through the workspace) run in the GPU emulator on sm_90a and
// sm_100a (the bf16 fallback) and sm_120a (the native block-scaled mma
// m16n8k64), bit for bit the ordered reference (matmul::
// orderedQuantizedMatmul) for nvfp4 x nvfp4 and mxfp4 x mxfp4 at M in {1,
// 16, 17, 128}, ragged N (a partial column tile) and K (a chunk cut inside
// a scale block), with the float64 bound; its launch plan; its PTX through
// ptxas on every chip, the block-scaled mma on sm_120a only.
//
//===----------------------------------------------------------------------===//

#include "MatmulKernelHarness.h"

#include "matmul/MatmulBound.h"
#include "matmul/MatmulSpec.h"
#include "matmul/QuantizedOrder.h"
#include "runtime/compiler/MatmulCompiler.h"
#include "tests/matmul/MatmulTestData.h"

#include <catch2/catch.hpp>

#include <array>

using namespace lowbit;
using namespace lowbit::matmul;
namespace mt = lowbit::matmul::test;

namespace {

constexpr std::array<const char *, 2> kPairs = {"nvfp4", "mxfp4"};
constexpr std::array<const char *, 3> kTargets = {"sm_90a", "sm_100a",
                                                  "sm_120a"};
/// The native path's instruction as LLVM prints it, per pair.
const char *blockScaledMma(std::string_view pair) {
  return pair == "nvfp4" ? "kind::mxf4nvf4.block_scale.scale_vec::4X"
                         : "kind::mxf4.block_scale.scale_vec::2X";
}
constexpr std::array<int64_t, 4> kRows = {1, 16, 17, 128};

MatmulSpec fp4Spec(const char *scheme, const char *dtypes) {
  std::string error;
  std::optional<MatmulSpec> spec = parseMatmulSpec(
      std::string("matmul w=") + scheme + " a=" + scheme + " " + dtypes,
      &error);
  INFO(error);
  REQUIRE(spec);
  return *spec;
}

/// The compiled module of `spec` on each of kTargets: Y bit for bit the
/// ordered reference at every M of `rows` and [n, k], the float64 bound
/// holding. Returns the outputs compared.
size_t checkSpec(const MatmulSpec &spec, std::span<const int64_t> rows,
                 int64_t n, int64_t k) {
  INFO(printMatmulSpec(spec) << " n=" << n << " k=" << k);
  std::string error;
  std::optional<QuantizedTensor> weights =
      quantize(spec.scheme, mt::weightLikeMatrix(n, k, uint64_t(n * 7 + k)), n,
               k, &error);
  INFO(error);
  REQUIRE(weights);
  std::vector<float> biasValues =
      spec.bias ? mt::biasVector(n, 5) : std::vector<float>();
  mt::KernelCase kernel{spec.scheme, spec.input, spec.output, spec.bias};
  size_t compared = 0;
  for (const char *targetName : kTargets) {
    INFO(targetName);
    std::optional<Target> target = parseTarget(targetName, &error);
    REQUIRE(target);
    // Each target's own module: sm_120a's FP4 GEMM is the native one.
    llvm::Expected<std::string> text = compiler::matmulGpuText(spec, &*target);
    if (!text)
      FAIL(llvm::toString(text.takeError()));
    CHECK((text->find("nvvm.mma.block_scale") != std::string::npos) ==
          (std::string_view(targetName) == "sm_120a"));
    std::unique_ptr<emulator::EmulatedProgram> program =
        mt::compileKernels(*text, targetName);
    for (int64_t m : rows) {
      INFO("m=" << m);
      std::vector<uint8_t> xBytes =
          mt::normalActivations(spec.input, m, k, uint64_t(m + 3 * k));
      std::optional<std::vector<uint8_t>> expected =
          orderedQuantizedMatmul(spec, *weights, xBytes, m, biasValues, &error);
      INFO(error);
      REQUIRE(expected);
      std::vector<uint8_t> actual = mt::runKernel(*program, kernel, *weights,
                                                  xBytes, m, biasValues, error);
      INFO(error);
      REQUIRE(error.empty());
      CHECK(actual == *expected);
      std::vector<PrologueOperands> sides;
      std::optional<QuantizedTensor> x = quantizeActivations(
          spec, widenActivations(spec.input, xBytes), m, k, sides, &error);
      REQUIRE(x);
      BoundCheck bound =
          checkQuantizedBound(*x, *weights, biasValues, actual, spec.output);
      INFO(bound.failure);
      CHECK(bound.holds);
      compared += expected->size() / size_t(valueTypeBytes(spec.output));
    }
  }
  return compared;
}

} // namespace

TEST_CASE("the FP4 GEMM is bit-exact to the order: nvfp4 x nvfp4 and mxfp4 "
          "x mxfp4, native on sm_120a, the fallback on sm_90a and sm_100a",
          "[matmul-gpu][emulator]") {
  // N = 37: a partial column tile. K = 88: the fallback's last 32-chunk
  // holds one whole nvfp4 block and one cut at 8, one mxfp4 block cut at
  // 24; the native 64-chunk 1 holds nvfp4 blocks whole, cut at 8 and two
  // past K, an mxfp4 block cut at 24 and one past K. K = 72: a block cut
  // at 8 and (native) the rest of the chunk past K.
  for (const char *pair : kPairs)
    for (const char *dtypes : {"from=bf16 to=bf16 bias", "from=f32 to=f32",
                               "from=f16 to=f16 bias"}) {
      size_t compared =
          checkSpec(fp4Spec(pair, dtypes), kRows, 37, 88) +
          checkSpec(fp4Spec(pair, dtypes), {&kRows[2], 1}, 21, 72);
      std::printf("matmul-gpu: %s x %s %-22s fp4 gemm: %zu outputs "
                  "bit-exact\n",
                  pair, pair, dtypes, compared);
    }
}

TEST_CASE("the FP4 GEMM's launch plan: nvfp4 adds X's amax and the "
          "workspace reset around the GEMM",
          "[matmul-gpu][emulator]") {
  std::string error;
  for (const char *arch : {"sm_90a", "sm_120a"}) {
    std::optional<Target> target = parseTarget(arch, &error);
    REQUIRE(target);
    for (const char *pair : kPairs) {
      INFO(pair << " " << arch);
      llvm::Expected<compiler::GpuCompilation> compiled =
          compiler::compileMatmulToPtx(fp4Spec(pair, "from=bf16"), *target);
      if (!compiled)
        FAIL(llvm::toString(compiled.takeError()));
      INFO(compiled->plan.serialize());
      REQUIRE(compiled->plan.unsupported.empty());
      bool nvfp4 = std::string_view(pair) == "nvfp4";
      CHECK(compiled->plan.steps.size() == (nvfp4 ? 3u : 1u));
    }
  }
}

TEST_CASE("the FP4 GEMM's PTX assembles on every chip: the block-scaled "
          "mma on sm_120a, the bf16 fallback elsewhere",
          "[matmul-gpu][ptx]") {
  for (const char *pair : kPairs)
    for (const char *arch :
         {"sm_80", "sm_89", "sm_90a", "sm_100a", "sm_120a"}) {
      INFO(pair << " " << arch);
      std::string error;
      std::optional<Target> target = parseTarget(arch, &error);
      REQUIRE(target);
      llvm::Expected<compiler::GpuCompilation> compiled =
          compiler::compileMatmulToPtx(fp4Spec(pair, "from=bf16 to=f16 bias"),
                                       *target);
      if (!compiled)
        FAIL(llvm::toString(compiled.takeError()));
      bool native = std::string_view(arch) == "sm_120a";
      const std::string &ptx = compiled->ptx;
      CHECK((ptx.find("mma.sync.aligned.m16n8k64.row.col.") !=
             std::string::npos) == native);
      CHECK((ptx.find(blockScaledMma(pair)) != std::string::npos) == native);
      for (const char *instruction :
           {"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
            "ldmatrix.sync.aligned.m8n8.x4.shared.b16"}) {
        INFO(instruction);
        CHECK((ptx.find(instruction) != std::string::npos) == !native);
      }
      lowbit::test::checkAssembles(ptx, arch);
    }
}

TEST_CASE("sweep: the FP4 GEMM at larger M and K, every dtype pair",
          "[.sweep][matmul-gpu]") {
  constexpr std::array<int64_t, 3> kSweepRows = {64, 128, 200};
  for (const char *pair : kPairs)
    for (const char *input : {"bf16", "f16", "f32"})
      for (const char *output : {"bf16", "f16", "f32"})
        checkSpec(fp4Spec(pair, (std::string("from=") + input +
                                 " to=" + output + " bias")
                                    .c_str()),
                  kSweepRows, 67, 2113);
}
