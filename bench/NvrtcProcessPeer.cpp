//===- NvrtcProcessPeer.cpp - One NVRTC compile, as a whole process -------===//
//
// The peer of a cached `lowbit compile` measured as a whole process
// (bench/frontend_bench.py): load NVRTC, compile one scheme's reference
// kernel (runtime/nvrtc) to PTX, print its size, exit. What an engine that
// compiles with NVRTC pays per process for the same kernel.
//
// Usage: lowbit-bench-nvrtc-process [SCHEME [CHIP]]   (mxfp4, sm_90a)
//
//===----------------------------------------------------------------------===//

#include "runtime/driver/Nvrtc.h"
#include "runtime/nvrtc/ReferenceKernels.h"

#include <cstdio>
#include <string>

int main(int argc, char **argv) {
  using namespace lowbit::runtime;
  std::string scheme = argc > 1 ? argv[1] : "mxfp4";
  std::string chip = argc > 2 ? argv[2] : "sm_90a";
  auto nvrtc = nvrtcLibrary();
  if (!nvrtc) {
    std::fprintf(stderr, "%s\n", nvrtc.error().message.c_str());
    return 1;
  }
  auto source = referenceKernelSource(scheme, "f32");
  if (!source) {
    std::fprintf(stderr, "%s\n", source.error().message.c_str());
    return 1;
  }
  auto ptx = compileWithNvrtc(**nvrtc, source->source, scheme + ".cu",
                              referenceNvrtcOptions(chip));
  if (!ptx) {
    std::fprintf(stderr, "%s\n", ptx.error().message.c_str());
    return 1;
  }
  std::printf("%zu bytes of PTX\n", ptx->ptx.size());
  return 0;
}
