//===- MatmulCpuBench.cpp - The matmul's CPU kernel, timed ----------------===//
//
// lowbit-bench-matmul M N K REPS: for each weight family, the CPU kernel of
// `matmul SCHEME from=f32` (docs/matmul.md) on a weight-like [N, K] and a
// normal X [M, K]: the median of REPS runs, in ms, one line per scheme
// ("SCHEME ms"). bench/matmul_bench.py runs it next to numpy's f32 matmul
// on the dequantized weights, in the same run, and prints the ratio.
//
//===----------------------------------------------------------------------===//

#include "bench/BenchTiming.h"
#include "format/SchemeText.h"
#include "matmul/MatmulWeights.h"
#include "runtime/compiler/MatmulCompiler.h"
#include "tools/lowbit/MatmulData.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace lowbit;

int main(int argc, char **argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: lowbit-bench-matmul M N K REPS\n");
    return 2;
  }
  int64_t m = std::atoll(argv[1]), n = std::atoll(argv[2]),
          k = std::atoll(argv[3]), reps = std::atoll(argv[4]);
  if (m < 1 || n < 1 || k < 1 || reps < 1) {
    std::fprintf(stderr, "M, N, K and REPS are positive integers\n");
    return 2;
  }
  std::vector<float> weights = cli::weightLikeMatrix(n, k, 1);
  std::vector<uint8_t> x = cli::normalActivations(ValueType::F32, m, k, 2);
  std::vector<uint8_t> y(size_t(m * n * 4));
  for (const char *text : {"int4_g128", "int8_g64", "fp8_e4m3", "mxfp4",
                           "nvfp4"}) {
    std::string error;
    matmul::MatmulSpec spec;
    spec.scheme = *parseSchemeText(text, &error);
    std::optional<QuantizedTensor> tensor =
        quantize(spec.scheme, weights, n, k, &error);
    auto kernel = compiler::compileMatmulForCpu(spec);
    if (!tensor || !kernel) {
      std::fprintf(stderr, "%s: %s\n", text,
                   tensor ? llvm::toString(kernel.takeError()).c_str()
                          : error.c_str());
      return 1;
    }
    matmul::WeightBuffers buffers = matmul::weightBuffers(*tensor);
    std::vector<std::array<int64_t, 2>> shapes =
        compiler::matmulShapes(spec, {m, n, k});
    std::vector<void *> data = {x.data(), buffers.codes.data(),
                                buffers.scales.data()};
    if (spec.scheme.scale.zeroPoint)
      data.push_back(buffers.zeros.data());
    if (spec.scheme.scale.globalScale != GlobalScale::None)
      data.push_back(buffers.global.data());
    data.push_back(y.data());
    std::vector<compiler::HostBuffer> hostBuffers;
    for (size_t index = 0; index < data.size(); ++index)
      hostBuffers.push_back({data[index], shapes[index][0], shapes[index][1]});
    std::vector<double> millis;
    for (int64_t rep = 0; rep < reps; ++rep) {
      auto start = bench::Clock::now();
      if (llvm::Error failed = (*kernel)->run(hostBuffers)) {
        std::fprintf(stderr, "%s: %s\n", text,
                     llvm::toString(std::move(failed)).c_str());
        return 1;
      }
      millis.push_back(bench::millisSince(start));
    }
    std::printf("%s %.3f\n", text, bench::median(millis));
  }
  return 0;
}
