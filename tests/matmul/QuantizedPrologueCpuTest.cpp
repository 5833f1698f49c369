// The quantized-activation matmul behind prologues on the CPU tail
// (docs/matmul.md, "Quantized activations"): `PROLOGUE | ... | matmul
// w= a=` against the ordered reference (quantizeActivations: the chain,
// then the activations' quantizer; then quantizedAccumulate), bit for bit,
// for every pair of issue 28 and the chains the kernels take (rmsnorm,
// smooth, hadamard, map, a chain of three, two rmsnorms), X and Y dtypes
// rotating, with the side tensors as the ABI orders them.
#include "matmul/MatmulBound.h"
#include "matmul/MatmulOrder.h"
#include "matmul/MatmulPrologues.h"
#include "matmul/QuantizedOrder.h"
#include "tests/matmul/MatmulCpuRun.h"
#include "tests/matmul/MatmulTestData.h"

#include <catch2/catch.hpp>

using namespace lowbit;
using namespace lowbit::matmul;
using test::compileOrFail;
using test::runKernel;
using test::RunResult;

namespace {

constexpr ValueType kDtypes[] = {ValueType::F32, ValueType::F16,
                                 ValueType::BF16};

/// The chains, each with the weight parameter names it reads.
struct ChainCase {
  const char *chain;
  std::vector<std::string> sides;
};

const std::vector<ChainCase> &chainCases() {
  static const std::vector<ChainCase> cases = {
      {"rmsnorm(eps=1e-6)", {"weight"}},
      {"smooth", {"smooth"}},
      {"hadamard(128)", {}},
      {"map(x * 0.5 + max(x, -1))", {}},
      {"smooth | rmsnorm(eps=1e-5) | hadamard(32)", {"smooth", "weight"}},
      {"rmsnorm | hadamard(row) | rmsnorm", {"weight", "weight2"}},
  };
  return cases;
}

/// The reference: X widened, the chain and the quantizer, the order's
/// accumulation, Y rounded.
std::vector<uint8_t> reference(const MatmulSpec &spec,
                               const QuantizedTensor &weights,
                               const std::vector<uint8_t> &xBytes, int64_t m,
                               const std::vector<std::vector<uint8_t>> &sides,
                               const std::vector<float> &bias,
                               std::optional<QuantizedTensor> *x) {
  std::vector<std::vector<float>> widened;
  for (const std::vector<uint8_t> &side : sides)
    widened.push_back(widenActivations(spec.input, side));
  std::string error;
  *x = quantizeActivations(
      spec, widenActivations(spec.input, xBytes), m, weights.cols,
      bindPrologueOperands(spec.prologues, widened), &error);
  INFO(error);
  REQUIRE(*x);
  return roundOutput(spec.output, quantizedAccumulate(**x, weights, bias));
}

void checkChain(const ActivationPairEntry &pair, const ChainCase &chain,
                ValueType input, ValueType output, bool bias) {
  const int64_t n = 13, k = 256;
  std::string error;
  std::optional<MatmulSpec> spec =
      parseMatmulSpec(std::string(chain.chain) + " | matmul w=" + pair.weights +
                          " a=" + pair.activations + " n=" + std::to_string(n) +
                          " k=" + std::to_string(k),
                      &error);
  INFO(error);
  REQUIRE(spec);
  spec->input = input;
  spec->output = output;
  spec->bias = bias;
  INFO(pair.label << ": " << printMatmulSpec(*spec));
  CHECK(matmulSideInputNames(spec->prologues) == chain.sides);
  std::unique_ptr<compiler::MatmulCpuKernel> kernel = compileOrFail(*spec);
  std::optional<QuantizedTensor> weights =
      quantize(spec->scheme, test::weightLikeMatrix(n, k, uint64_t(n + k)), n,
               k, &error);
  REQUIRE(weights);
  std::vector<float> biasValues =
      bias ? test::biasVector(n, 11) : std::vector<float>();
  std::vector<std::vector<uint8_t>> sides;
  for (size_t i = 0; i < chain.sides.size(); ++i)
    sides.push_back(test::normalActivations(input, 1, k, 40 + i));
  for (int64_t m : {1, 17}) {
    INFO("m=" << m);
    std::vector<uint8_t> xBytes =
        test::normalActivations(input, m, k, uint64_t(m + 100));
    std::optional<QuantizedTensor> x;
    std::vector<uint8_t> expected =
        reference(*spec, *weights, xBytes, m, sides, biasValues, &x);
    RunResult actual =
        runKernel(*kernel, *weights, xBytes, m, biasValues, sides);
    INFO(actual.error);
    REQUIRE(actual.error.empty());
    CHECK(actual.y == expected);
    BoundCheck bound =
        checkQuantizedBound(*x, *weights, biasValues, actual.y, output);
    INFO(bound.failure);
    CHECK(bound.holds);
  }
}

} // namespace

TEST_CASE("quantized matmul cpu: prologues in front of X's quantize are "
          "bit-exact to the order") {
  size_t index = 0;
  for (const ActivationPairEntry &pair : activationPairEntries())
    for (const ChainCase &chain : chainCases()) {
      checkChain(pair, chain, kDtypes[(index + 1) % 3], kDtypes[index % 3],
                 index % 2 == 0);
      ++index;
    }
}

TEST_CASE("quantized matmul cpu: a dynamic K with an elementwise chain") {
  // rmsnorm and smooth need no static K (hadamard does).
  MatmulSpec spec = *parseMatmulSpec(
      "smooth | rmsnorm | matmul w=fp8_e4m3 a=fp8_e4m3 from=bf16 bias");
  std::unique_ptr<compiler::MatmulCpuKernel> kernel = compileOrFail(spec);
  std::string error;
  QuantizedTensor weights =
      *quantize(spec.scheme, test::weightLikeMatrix(9, 100, 3), 9, 100, &error);
  std::vector<float> bias = test::biasVector(9, 4);
  std::vector<std::vector<uint8_t>> sides = {
      test::normalActivations(ValueType::BF16, 1, 100, 7),
      test::normalActivations(ValueType::BF16, 1, 100, 8)};
  std::vector<uint8_t> xBytes =
      test::normalActivations(ValueType::BF16, 5, 100, 5);
  std::optional<QuantizedTensor> x;
  std::vector<uint8_t> expected =
      reference(spec, weights, xBytes, 5, sides, bias, &x);
  RunResult actual = runKernel(*kernel, weights, xBytes, 5, bias, sides);
  INFO(actual.error);
  REQUIRE(actual.error.empty());
  CHECK(actual.y == expected);
  // A missing side tensor is refused by the kernel's checks.
  RunResult missing = runKernel(*kernel, weights, xBytes, 5, bias, {sides[0]});
  CHECK_FALSE(missing.error.empty());
}

TEST_CASE("quantized matmul: prologues the kernels refuse, with the reason") {
  auto refusal = [](const char *text) {
    MatmulSpec spec = *parseMatmulSpec(text);
    auto cpu = compiler::compileMatmulForCpu(spec);
    REQUIRE_FALSE(static_cast<bool>(cpu));
    return llvm::toString(cpu.takeError());
  };
  CHECK(refusal("silu_mul | matmul w=fp8_e4m3 a=fp8_e4m3 n=8 k=64")
            .starts_with("the matmul's prologues: silu_mul halves X's width"));
  CHECK(refusal("add_rmsnorm | matmul w=fp8_e4m3 a=fp8_e4m3 n=8 k=64")
            .find("writes the updated residual") != std::string::npos);
  // The GPU runs rmsnorm in front (a front quantize kernel writing X's
  // codes into a workspace that grows with X: docs/matmul-gpu.md,
  // "Prologues"); the emulator's results are in tests/matmulgpu.
  MatmulSpec spec = *parseMatmulSpec(
      "rmsnorm | matmul w=fp8_e4m3 a=fp8_e4m3 from=bf16 n=8 k=64");
  auto gpu = compiler::matmulGpuText(spec);
  if (!gpu)
    FAIL(llvm::toString(gpu.takeError()));
  CHECK(gpu->find("lowbit.workspace_rows") != std::string::npos);
}
