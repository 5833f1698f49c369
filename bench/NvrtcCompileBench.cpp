//===- NvrtcCompileBench.cpp - The compile-time peer: NVRTC + nvJitLink ---===//
//
// How long an engine without lowbit waits for a quantize kernel: NVRTC
// (CUDA C++ with cuda_fp8.h/cuda_fp4.h -> PTX) plus nvJitLink (PTX ->
// cubin), per scheme, for the first compile in the process and warm.
// lowbit's JIT must beat these numbers. Numbers only; never a test.
//
//===----------------------------------------------------------------------===//

#include "runtime/nvrtc/ReferenceKernels.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

using namespace lowbit;
using namespace lowbit::runtime;

namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  std::string chip = argc > 1 ? argv[1] : "sm_90a";
  int warmRuns = argc > 2 ? std::atoi(argv[2]) : 5;
  auto nvrtc = nvrtcLibrary();
  auto linker = nvJitLinkLibrary();
  if (!nvrtc || !linker) {
    std::fprintf(stderr, "%s\n",
                 (!nvrtc ? nvrtc.error() : linker.error()).message.c_str());
    return 1;
  }
  int major = 0, minor = 0;
  (*nvrtc)->nvrtcVersion(&major, &minor);
  std::printf("NVRTC %d.%d reference kernels for %s (f32 input); "
              "warm = median of %d\n",
              major, minor, chip.c_str(), warmRuns);
  std::printf("%-12s %12s %12s %12s %12s %6s\n", "scheme", "nvrtc 1st ms",
              "nvrtc warm", "link 1st ms", "link warm", "regs");
  for (const std::string &scheme : referenceKernelSchemes()) {
    auto source = referenceKernelSource(scheme, "f32");
    if (!source)
      return 1;
    std::vector<double> nvrtcMillis, linkMillis;
    int registers = -1;
    for (int run = 0; run <= warmRuns; ++run) {
      auto build = buildReferenceKernel(**nvrtc, *linker, *source, chip);
      if (!build) {
        std::fprintf(stderr, "%s: %s\n", scheme.c_str(),
                     build.error().message.c_str());
        return 1;
      }
      nvrtcMillis.push_back(build->nvrtcMillis);
      linkMillis.push_back(build->linkMillis);
      registers = build->quantizeResources.registers;
    }
    double firstNvrtc = nvrtcMillis.front(), firstLink = linkMillis.front();
    nvrtcMillis.erase(nvrtcMillis.begin());
    linkMillis.erase(linkMillis.begin());
    std::printf("%-12s %12.1f %12.1f %12.1f %12.1f %6d\n", scheme.c_str(),
                firstNvrtc, median(nvrtcMillis), firstLink, median(linkMillis),
                registers);
  }
  return 0;
}
