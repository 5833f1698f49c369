// The CPU tail of lowbit.matmul against the ordered reference, bit for bit
// (docs/matmul.md): every weight scheme of issue 27, X and Y in f32, f16
// and bf16, M in {1, 3, 16, 17, 64}, ragged N and K. The sweep adds every
// dtype pair and a K past 1024 (chunks wrap around the 32 slices).
#include "matmul/MatmulBound.h"
#include "matmul/MatmulOrder.h"
#include "matmul/MatmulWeights.h"
#include "runtime/compiler/MatmulCompiler.h"
#include "tests/matmul/MatmulCpuRun.h"
#include "tests/matmul/MatmulTestData.h"

#include <catch2/catch.hpp>

#include <cstring>

using namespace lowbit;
using namespace lowbit::matmul;
using test::compileOrFail;
using test::RunResult;
using test::runKernel;

namespace {

constexpr ValueType kDtypes[] = {ValueType::F32, ValueType::F16,
                                 ValueType::BF16};
constexpr int64_t kRows[] = {1, 3, 16, 17, 64};

/// Every M of kRows through one kernel: bit-exact to the reference, and
/// within the float64 bound.
void checkScheme(const test::WeightSchemeCase &weightCase, ValueType input,
                 ValueType output, bool bias, int64_t n, int64_t k) {
  MatmulSpec spec;
  spec.scheme = test::schemeOf(weightCase);
  spec.input = input;
  spec.output = output;
  spec.bias = bias;
  std::string text = printMatmulSpec(spec);
  INFO(weightCase.label << ": " << text << " n=" << n << " k=" << k);
  std::unique_ptr<compiler::MatmulCpuKernel> kernel = compileOrFail(spec);
  std::string error;
  std::optional<QuantizedTensor> weights = quantize(
      spec.scheme, test::weightLikeMatrix(n, k, uint64_t(n * 31 + k)), n, k,
      &error);
  INFO(error);
  REQUIRE(weights);
  std::vector<float> biasValues =
      bias ? test::biasVector(n, 7) : std::vector<float>();
  std::optional<std::vector<float>> w = orderedWeights(*weights, input, &error);
  REQUIRE(w);
  for (int64_t m : kRows) {
    INFO("m=" << m);
    std::vector<uint8_t> xBytes =
        test::normalActivations(input, m, k, uint64_t(m));
    std::optional<std::vector<uint8_t>> expected = orderedMatmul(
        *weights, input, xBytes, m, biasValues, output, &error);
    REQUIRE(expected);
    RunResult actual = runKernel(*kernel, *weights, xBytes, m, biasValues);
    INFO(actual.error);
    REQUIRE(actual.error.empty());
    CHECK(actual.y == *expected);
    BoundCheck bound = checkFloat64Bound(widenActivations(input, xBytes), *w,
                                         biasValues, actual.y, output, m, n, k);
    INFO(bound.failure);
    CHECK(bound.holds);
  }
}

} // namespace

TEST_CASE("matmul cpu: every weight scheme is bit-exact to the order") {
  // X and Y dtypes rotate over the schemes (and the bias alternates), so
  // every dtype meets every packing; the sweep runs every pair.
  size_t index = 0;
  for (const test::WeightSchemeCase &weightCase : test::weightSchemeCases()) {
    ValueType input = kDtypes[index % 3];
    ValueType output = kDtypes[(index / 3 + index) % 3];
    checkScheme(weightCase, input, output, index % 2 == 1, /*n=*/13,
                /*k=*/200);
    ++index;
  }
}

TEST_CASE("matmul cpu: a static spec and K of one chunk") {
  MatmulSpec spec = *parseMatmulSpec("matmul mxfp4 from=bf16 to=f32 bias "
                                     "n=5 k=33");
  std::unique_ptr<compiler::MatmulCpuKernel> kernel = compileOrFail(spec);
  std::string error;
  QuantizedTensor weights =
      *quantize(spec.scheme, test::weightLikeMatrix(5, 33, 3), 5, 33, &error);
  std::vector<float> bias = test::biasVector(5, 4);
  std::vector<uint8_t> xBytes =
      test::normalActivations(ValueType::BF16, 17, 33, 5);
  RunResult actual = runKernel(*kernel, weights, xBytes, 17, bias);
  INFO(actual.error);
  REQUIRE(actual.error.empty());
  CHECK(actual.y == *orderedMatmul(weights, ValueType::BF16, xBytes, 17, bias,
                                   ValueType::F32, &error));
}

TEST_CASE("matmul cpu: the kernel refuses buffers that disagree") {
  MatmulSpec spec = *parseMatmulSpec("matmul int8_g64 from=f32 n=4 k=64");
  std::unique_ptr<compiler::MatmulCpuKernel> kernel = compileOrFail(spec);
  std::string error;
  QuantizedTensor weights =
      *quantize(spec.scheme, test::weightLikeMatrix(4, 64, 1), 4, 64, &error);
  WeightBuffers buffers = weightBuffers(weights);
  std::vector<float> x(3 * 63), y(3 * 4);
  std::vector<compiler::HostBuffer> hostBuffers = {
      {x.data(), 3, 63},
      {buffers.codes.data(), 4, 64},
      {buffers.scales.data(), 4, 1},
      {y.data(), 3, 4}};
  llvm::Error refused = kernel->run(hostBuffers);
  bool failedRun = static_cast<bool>(refused);
  REQUIRE(failedRun);
  CHECK(llvm::toString(std::move(refused)) ==
        "x has K = 63 columns; the spec's weights have k=64");
  hostBuffers[0].cols = 64;
  hostBuffers[2].cols = 2;
  refused = kernel->run(hostBuffers);
  failedRun = static_cast<bool>(refused);
  REQUIRE(failedRun);
  CHECK(llvm::toString(std::move(refused)) ==
        "scales is [4, 2]; x [M, K] = [3, 64] and y's N = 4 make it [4, 1]");
}

TEST_CASE("matmul cpu: a scheme that is not a weight scheme is no kernel") {
  MatmulSpec spec;
  spec.scheme = *parseSchemeText("scheme(format=int8,scale=per_channel(axis=1))");
  auto kernel = compiler::compileMatmulForCpu(spec);
  bool compiled = static_cast<bool>(kernel);
  REQUIRE_FALSE(compiled);
  CHECK(llvm::toString(kernel.takeError())
            .starts_with("the matmul's scheme is not a weight scheme: "
                         "per_channel(axis=1)"));
}

TEST_CASE("matmul cpu sweep: every scheme and dtype pair, K past 1024",
          "[.sweep]") {
  for (const test::WeightSchemeCase &weightCase : test::weightSchemeCases())
    for (ValueType input : kDtypes)
      for (ValueType output : kDtypes)
        checkScheme(weightCase, input, output, /*bias=*/true, /*n=*/67,
                    /*k=*/2113);
}
