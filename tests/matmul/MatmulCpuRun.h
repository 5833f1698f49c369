//===- MatmulCpuRun.h - Runs a matmul CPU kernel in the tests ----*- C++
//-*-===//
//
// The CPU kernel of a matmul spec, compiled or failed, and one run of it on
// a quantized weight set, X and a bias (the ABI of MatmulSignature.h),
// shared by the weight-only and the quantized-activation CPU tests.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TESTS_MATMUL_MATMULCPURUN_H
#define LOWBIT_TESTS_MATMUL_MATMULCPURUN_H

#include "matmul/MatmulWeights.h"
#include "runtime/compiler/MatmulCompiler.h"

#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

namespace lowbit::matmul::test {

struct RunResult {
  std::vector<uint8_t> y;
  std::string error;
};

/// Runs `kernel` on the weights, X, bias and the prologues' side tensors
/// (X's dtype, [K] each, ABI order); y is [m, n] of the output.
inline RunResult runKernel(compiler::MatmulCpuKernel &kernel,
                           const QuantizedTensor &weights,
                           std::vector<uint8_t> xBytes, int64_t m,
                           std::vector<float> bias,
                           std::vector<std::vector<uint8_t>> sides = {}) {
  const MatmulSpec &spec = kernel.spec();
  int64_t n = weights.rows, k = weights.cols;
  WeightBuffers buffers = weightBuffers(weights);
  RunResult result;
  result.y.assign(size_t(m * n * valueTypeBytes(spec.output)), 0xA5);
  std::vector<std::array<int64_t, 2>> shapes =
      compiler::matmulShapes(spec, {m, n, k});
  std::vector<void *> data = {xBytes.data()};
  for (std::vector<uint8_t> &side : sides)
    data.push_back(side.data());
  data.push_back(buffers.codes.data());
  data.push_back(buffers.scales.data());
  if (spec.scheme.scale.zeroPoint)
    data.push_back(buffers.zeros.data());
  if (spec.scheme.scale.globalScale != GlobalScale::None)
    data.push_back(buffers.global.data());
  if (spec.bias)
    data.push_back(bias.data());
  data.push_back(result.y.data());
  std::vector<compiler::HostBuffer> hostBuffers;
  for (size_t index = 0; index < data.size(); ++index)
    hostBuffers.push_back({data[index], shapes[index][0], shapes[index][1]});
  if (llvm::Error error = kernel.run(hostBuffers))
    result.error = llvm::toString(std::move(error));
  return result;
}

inline std::unique_ptr<compiler::MatmulCpuKernel>
compileOrFail(const MatmulSpec &spec) {
  auto kernel = compiler::compileMatmulForCpu(spec);
  if (!kernel)
    FAIL(printMatmulSpec(spec) << ": " << llvm::toString(kernel.takeError()));
  return std::move(*kernel);
}

} // namespace lowbit::matmul::test

#endif // LOWBIT_TESTS_MATMUL_MATMULCPURUN_H
