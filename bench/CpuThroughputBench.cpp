//===- CpuThroughputBench.cpp - CPU backend vs the reference quantizer ----===//
//
// Quantize throughput per named scheme on one thread: the JIT-compiled CPU
// kernel (kernel->run only: buffers are prepared outside the timing) next
// to the reference quantizer (format/Quantize.h, its own output allocation
// included, as a caller pays it), measured in the same run on the same
// input. GB/s = (input bytes + output bytes) / best time. The ratio is the
// number to quote: this machine is shared and noisy.
// Numbers only: never a test, never pass/fail on timing.
//
// usage: lowbit-bench-cpu [rows] [cols] [runs]
//
//===----------------------------------------------------------------------===//

#include "format/Quantize.h"
#include "tools/lowbit/JitBackend.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace lowbit;
using Clock = std::chrono::steady_clock;

namespace {

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int64_t outputBytes(const QuantizedTensor &tensor) {
  int64_t scaleBytes = scaleStorageBits(tensor.scheme.scale.type) / 8;
  return int64_t(tensor.codes.size()) +
         int64_t(tensor.scaleCodes.size()) * scaleBytes +
         int64_t(tensor.zeros.size()) +
         (tensor.scheme.scale.globalScale != GlobalScale::None ? 4 : 0);
}

} // namespace

int main(int argc, char **argv) {
  int64_t rows = argc > 1 ? std::atoll(argv[1]) : 4096;
  int64_t cols = argc > 2 ? std::atoll(argv[2]) : 4096;
  int runs = argc > 3 ? std::max(1, std::atoi(argv[3])) : 3;

  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> input(size_t(rows * cols));
  for (float &value : input)
    value = normal(rng);

  std::printf("quantize %lldx%lld f32, one thread, best of %d; GB/s = "
              "(input + output bytes) / time\n",
              (long long)rows, (long long)cols, runs);
  std::printf("%-12s %10s %10s %10s %10s %9s %8s\n", "scheme", "jit ms",
              "jit GB/s", "ref ms", "ref GB/s", "jit/ref", "compile");
  int status = 0;
  for (const Scheme &named : namedSchemes()) {
    std::string error;
    StaticScales given;
    if (named.scale.mode == ScaleMode::Static) {
      Scheme dynamic = named;
      dynamic.scale.mode = ScaleMode::Dynamic;
      auto calibration = quantize(dynamic, input, rows, cols, &error);
      if (!calibration)
        return 1;
      given.scaleCodes = calibration->scaleCodes;
      if (named.scale.zeroPoint)
        given.zeros = calibration->zeros;
      if (named.scale.globalScale != GlobalScale::None)
        given.globalScale = calibration->globalScale;
    }

    double jitBest = std::numeric_limits<double>::infinity();
    double compileMillis = 0;
    std::optional<QuantizedTensor> jitResult;
    for (int run = 0; run < runs; ++run) {
      cli::JitTiming timing;
      jitResult = cli::jitQuantize(named, ValueType::F32, input.data(), rows,
                                   cols, given, &error, &timing);
      if (!jitResult)
        break;
      if (run == 0)
        compileMillis = timing.compileMillis;
      jitBest = std::min(jitBest, timing.runMillis / 1e3);
    }
    if (!jitResult) {
      std::printf("%-12s cpu backend failed: %s\n", named.name.c_str(),
                  error.c_str());
      status = 1;
      continue;
    }

    double refBest = std::numeric_limits<double>::infinity();
    std::optional<QuantizedTensor> refResult;
    for (int run = 0; run < runs; ++run) {
      Clock::time_point start = Clock::now();
      refResult = quantize(named, input, rows, cols, given, &error);
      refBest = std::min(refBest, secondsSince(start));
    }
    if (!refResult)
      return 1;
    bool same = jitResult->codes == refResult->codes &&
                jitResult->scaleCodes == refResult->scaleCodes &&
                jitResult->zeros == refResult->zeros;
    double bytes = double(rows * cols * 4) + double(outputBytes(*refResult));
    std::printf("%-12s %10.1f %10.2f %10.1f %10.2f %8.2fx %6.0fms%s\n",
                named.name.c_str(), jitBest * 1e3, bytes / jitBest / 1e9,
                refBest * 1e3, bytes / refBest / 1e9, refBest / jitBest,
                compileMillis, same ? "" : "  (results differ!)");
  }
  cli::releaseJitKernels();
  return status;
}
