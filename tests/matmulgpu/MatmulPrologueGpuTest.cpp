//===- MatmulPrologueGpuTest.cpp - X behind prologues on the GPU ----------===//
//
// `PROLOGUE | matmul w= a=` on the GPU (docs/matmul-gpu.md, "Prologues"):
// the fused prologue | quantize kernel writes X's codes and scales into
// the workspace, whose size grows with M (docs/kernel-abi.md), and the
// W8A8 or the FP4 GEMM reads them. Each pair of activationPairEntries
// behind two chains, M in {1, 16, 17, 128}, a ragged N, in the emulator
// (sm_90a; the 8-bit mma's first chip or sm_120a's block-scaled mma on
// one chain): Y bit for bit the ordered reference's (the chain, the
// activations' quantizer, quantizedAccumulate) and within the float64
// bound.
//
//===----------------------------------------------------------------------===//

#include "MatmulKernelHarness.h"

#include "format/Prologue.h"
#include "format/SchemeText.h"
#include "lowering/GpuMatmulQuantized.h"
#include "matmul/MatmulBound.h"
#include "matmul/MatmulOrder.h"
#include "matmul/MatmulPrologues.h"
#include "matmul/MatmulSpec.h"
#include "matmul/QuantizedOrder.h"
#include "matmul/WeightSchemes.h"
#include "runtime/compiler/MatmulCompiler.h"
#include "target/Target.h"
#include "target/WorkspaceRows.h"
#include "tests/matmul/MatmulTestData.h"

#include <catch2/catch.hpp>

using namespace lowbit;
using namespace lowbit::matmul;
namespace mt = lowbit::matmul::test;

namespace {

struct ChainCase {
  const char *chain;
  size_t sides;
};

constexpr ChainCase kChains[] = {
    {"rmsnorm(eps=1e-6)", 1},
    {"smooth | rmsnorm(eps=1e-5) | hadamard(32)", 2},
};

MatmulSpec specOf(const ActivationPairEntry &pair, const ChainCase &chain,
                  const char *dtypes) {
  std::string text = std::string(chain.chain) + " | matmul w=" + pair.weights +
                     " a=" + pair.activations + " " + dtypes + " n=45 k=256";
  std::string error;
  std::optional<MatmulSpec> spec = parseMatmulSpec(text, &error);
  INFO(text << ": " << error);
  REQUIRE(spec);
  return *spec;
}

bool eightBit(const ActivationPairEntry &pair) {
  std::optional<Scheme> weights = parseSchemeText(pair.weights),
                        activations = parseSchemeText(pair.activations);
  REQUIRE(weights);
  REQUIRE(activations);
  return quantizedGemmRefusal(*weights, *activations).empty();
}

/// Y of the emulated program: X, the sides, W's buffers, the bias, Y, and
/// a workspace sized for this M (workspaceWordsFor) after them.
std::vector<uint8_t>
runWithSides(const emulator::EmulatedProgram &program, const MatmulSpec &spec,
             const QuantizedTensor &weights, std::vector<uint8_t> xBytes,
             std::vector<std::vector<uint8_t>> sides, int64_t m,
             std::vector<float> bias, std::string &error) {
  // X's codes live in the workspace: it grows with X, and only its
  // reduction words return to zero.
  REQUIRE(program.workspaceWordsFor(m, weights.cols) >
          program.workspaceWords());
  REQUIRE(program.workspaceZeroedWords() < program.workspaceWords());
  return mt::runKernel(
      program, {spec.scheme, spec.input, spec.output, spec.bias}, weights,
      std::move(xBytes), m, std::move(bias), error, std::move(sides));
}

} // namespace

/// The chips a pair runs on: sm_90a (FP4: the bf16 fallback), and sm_120a
/// for FP4 (the block-scaled mma) or the first chip with the 8-bit mma.
std::array<const char *, 2> targetsOf(const ActivationPairEntry &pair) {
  if (!eightBit(pair))
    return {"sm_90a", "sm_120a"};
  if (std::string_view(pair.activations).find("int8") != std::string::npos)
    return {"sm_90a", "sm_80"};
  return {"sm_90a", "sm_89"};
}

TEST_CASE("the quantized GEMMs behind prologues are bit-exact to the "
          "quantized order in the emulator",
          "[matmul-gpu][emulator][w8a8][w4a4][prologue]") {
  const char *dtypes[] = {"from=bf16 to=bf16 bias", "from=f16 to=f32",
                          "from=f32 to=f16 bias"};
  // N and K as the specs state them (hadamard's blocks need a static K).
  const int64_t n = 45, k = 256;
  size_t index = 0, pairs = 0;
  for (const ActivationPairEntry &pair : activationPairEntries()) {
    ++pairs;
    for (const ChainCase &chain : kChains) {
      MatmulSpec spec = specOf(pair, chain, dtypes[index++ % 3]);
      INFO(printMatmulSpec(spec));
      // The second chip on the first chain only: the test stays short.
      for (const char *targetName : targetsOf(pair)) {
        if (&chain != &kChains[0] && targetName != targetsOf(pair)[0])
          continue;
        INFO(targetName);
        std::string error;
        std::optional<Target> target = parseTarget(targetName, &error);
        REQUIRE(target);
        llvm::Expected<std::string> text =
            compiler::matmulGpuText(spec, &*target);
        if (!text)
          FAIL(llvm::toString(text.takeError()));
        std::unique_ptr<emulator::EmulatedProgram> program =
            mt::compileKernels(*text, targetName);
        std::optional<QuantizedTensor> weights =
            quantize(spec.scheme, mt::weightLikeMatrix(n, k, uint64_t(n + k)),
                     n, k, &error);
        REQUIRE(weights);
        std::vector<float> bias =
            spec.bias ? mt::biasVector(n, 3) : std::vector<float>();
        std::vector<std::vector<uint8_t>> sides;
        for (size_t i = 0; i < chain.sides; ++i)
          sides.push_back(mt::normalActivations(spec.input, 1, k, 50 + i));
        size_t outputs = 0, differ = 0;
        for (int64_t m : {1, 16, 17, 128}) {
          INFO("m=" << m);
          std::vector<uint8_t> xBytes =
              mt::normalActivations(spec.input, m, k, uint64_t(m + 7));
          std::vector<std::vector<float>> widened;
          for (const std::vector<uint8_t> &side : sides)
            widened.push_back(widenActivations(spec.input, side));
          std::optional<QuantizedTensor> x = quantizeActivations(
              spec, widenActivations(spec.input, xBytes), m, k,
              bindPrologueOperands(spec.prologues, widened), &error);
          INFO(error);
          REQUIRE(x);
          std::vector<uint8_t> expected =
              roundOutput(spec.output, quantizedAccumulate(*x, *weights, bias));
          std::vector<uint8_t> actual = runWithSides(
              *program, spec, *weights, xBytes, sides, m, bias, error);
          INFO(error);
          REQUIRE(error.empty());
          CHECK(actual == expected);
          size_t width = size_t(valueTypeBytes(spec.output));
          for (size_t at = 0; at + width <= expected.size(); at += width) {
            ++outputs;
            differ +=
                !std::equal(expected.begin() + at,
                            expected.begin() + at + width, actual.begin() + at);
          }
          BoundCheck bound =
              checkQuantizedBound(*x, *weights, bias, actual, spec.output);
          INFO(bound.failure);
          CHECK(bound.holds);
        }
        std::printf("matmul-gpu: %-28s %-7s behind %-42s %zu outputs, %zu "
                    "differ\n",
                    pair.label, targetName, chain.chain, outputs, differ);
      }
    }
  }
  CHECK(pairs == 6);
}

TEST_CASE("a workspace that grows with X is sized by one helper",
          "[matmul-gpu][workspace]") {
  using workspace_abi::RowWords;
  using workspace_abi::wordsFor;
  CHECK(wordsFor(4, RowWords{}, 1000, 1000) == 4);
  CHECK(wordsFor(12, RowWords{1, 8}, 17, 200) == 12 + 17 * 51);
  CHECK(wordsFor(12, RowWords{1, 9}, 1, 7) == 12 + 1 + 2);
  CHECK(wordsFor(12, RowWords{0, 8}, 0, 256) == 12);
  CHECK(wordsFor(0, RowWords{1, 8}, int64_t(1) << 40, 256) == -1);
  CHECK(wordsFor(0, RowWords{1, 8}, -1, 256) == -1);
}
