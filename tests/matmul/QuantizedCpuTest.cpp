// The CPU tail of the quantized-activation matmul against the ordered
// reference, bit for bit (docs/matmul.md, "Quantized activations"): every
// pair of issue 28 (fp8 x fp8 in its three scale layouts, int8 x int8 per
// token x per channel, nvfp4 x nvfp4, mxfp4 x mxfp4) at M in {1, 16, 17,
// 128}, ragged N and K, with the float64 bound. The sweep runs every X and
// Y dtype at N = 67, K = 2113.
#include "matmul/MatmulBound.h"
#include "matmul/MatmulOrder.h"
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
constexpr int64_t kRows[] = {1, 16, 17, 128};

MatmulSpec pairSpec(const ActivationPairEntry &pair, ValueType input,
                    ValueType output, bool bias) {
  std::string error;
  std::optional<MatmulSpec> spec = parseMatmulSpec(
      std::string("matmul w=") + pair.weights + " a=" + pair.activations,
      &error);
  INFO(error);
  REQUIRE(spec);
  spec->input = input;
  spec->output = output;
  spec->bias = bias;
  return *spec;
}

/// Every M of kRows through one kernel: bit-exact to the reference and
/// within the float64 bound.
void checkPair(const ActivationPairEntry &pair, ValueType input,
               ValueType output, bool bias, int64_t n, int64_t k) {
  MatmulSpec spec = pairSpec(pair, input, output, bias);
  INFO(pair.label << ": " << printMatmulSpec(spec) << " n=" << n << " k=" << k);
  std::unique_ptr<compiler::MatmulCpuKernel> kernel = compileOrFail(spec);
  std::string error;
  std::optional<QuantizedTensor> weights = quantize(
      spec.scheme, test::weightLikeMatrix(n, k, uint64_t(n + k)), n, k, &error);
  INFO(error);
  REQUIRE(weights);
  std::vector<float> biasValues =
      bias ? test::biasVector(n, 11) : std::vector<float>();
  for (int64_t m : kRows) {
    INFO("m=" << m);
    std::vector<uint8_t> xBytes =
        test::normalActivations(input, m, k, uint64_t(m + 100));
    std::optional<std::vector<uint8_t>> expected =
        orderedQuantizedMatmul(spec, *weights, xBytes, m, biasValues, &error);
    REQUIRE(expected);
    RunResult actual = runKernel(*kernel, *weights, xBytes, m, biasValues);
    INFO(actual.error);
    REQUIRE(actual.error.empty());
    CHECK(actual.y == *expected);
    std::vector<PrologueOperands> sides;
    std::optional<QuantizedTensor> x = quantizeActivations(
        spec, widenActivations(input, xBytes), m, k, sides, &error);
    REQUIRE(x);
    BoundCheck bound =
        checkQuantizedBound(*x, *weights, biasValues, actual.y, output);
    INFO(bound.failure);
    CHECK(bound.holds);
  }
}

} // namespace

TEST_CASE("quantized matmul cpu: every pair is bit-exact to the order") {
  // K = 300: a short last block of 128 and a short last group of 16 and
  // 32; X and Y dtypes rotate over the pairs, the bias alternates.
  size_t index = 0;
  for (const ActivationPairEntry &pair : activationPairEntries()) {
    checkPair(pair, kDtypes[(index + 2) % 3], kDtypes[index % 3],
              index % 2 == 0, /*n=*/13, /*k=*/300);
    ++index;
  }
}

TEST_CASE("quantized matmul cpu: a static spec") {
  MatmulSpec spec =
      *parseMatmulSpec("matmul w=nvfp4 a=nvfp4 from=bf16 to=f32 bias n=5 k=40");
  std::unique_ptr<compiler::MatmulCpuKernel> kernel = compileOrFail(spec);
  std::string error;
  QuantizedTensor weights =
      *quantize(spec.scheme, test::weightLikeMatrix(5, 40, 3), 5, 40, &error);
  std::vector<float> bias = test::biasVector(5, 4);
  std::vector<uint8_t> xBytes =
      test::normalActivations(ValueType::BF16, 17, 40, 5);
  RunResult actual = runKernel(*kernel, weights, xBytes, 17, bias);
  INFO(actual.error);
  REQUIRE(actual.error.empty());
  CHECK(actual.y ==
        *orderedQuantizedMatmul(spec, weights, xBytes, 17, bias, &error));
}

TEST_CASE("quantized matmul cpu: a pair without a GPU kernel") {
  // The 8-bit pairs and W4A4 have one (tests/matmulgpu); fp8 weights
  // against FP4 activations mix the two kernels' operands.
  MatmulSpec spec = *parseMatmulSpec("matmul w=fp8_e4m3 a=mxfp4 from=bf16");
  auto gpu = compiler::matmulGpuText(spec);
  REQUIRE_FALSE(static_cast<bool>(gpu));
  std::string message = llvm::toString(gpu.takeError());
  INFO(message);
  CHECK(message.starts_with("'matmul w=fp8_e4m3 a=mxfp4 "));
  CHECK(message.find("quantizes its activations, and lowbit's GPU kernel "
                     "for quantized activations cannot run it") !=
        std::string::npos);
}

TEST_CASE("quantized matmul cpu sweep: every pair and dtype pair, K past 1024",
          "[.sweep]") {
  for (const ActivationPairEntry &pair : activationPairEntries())
    for (ValueType input : kDtypes)
      for (ValueType output : kDtypes)
        checkPair(pair, input, output, /*bias=*/true, /*n=*/67, /*k=*/2113);
}
