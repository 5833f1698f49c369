//===- LaunchBench.cpp - Host cost of Kernel::launch and a memory-hit get
//---===//
//
// Issue 11's launch-path numbers: the median over 10^5 calls of
//   - Jit::get() of a spec already got (a memory hit),
//   - Kernel::launch() of a GPU kernel against a libcuda stand-in
//     (tests/jit/CudaDriverStub.c: cuLaunchKernel copies the parameters and
//     returns), so the time is lowbit's host work per launch,
//   - the same with a workspace (forced to 64 words),
//   - Kernel::run() of a CPU kernel on a 1x32 tensor (host work plus a tiny
//     kernel).
// Usage: lowbit-bench-launch [calls]
//
//===----------------------------------------------------------------------===//

#include "bench/BenchTiming.h"
#include "lowbit/Jit.h"
#include "runtime/jit/WorkspaceWords.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

using namespace lowbit;
using namespace lowbit::bench;

namespace {

/// The median of `calls` single-call timings of `work`, in ns.
double medianNanos(size_t calls, const std::function<bool()> &work) {
  std::vector<double> times;
  times.reserve(calls);
  for (size_t i = 0; i < calls / 100 + 1; ++i) // warm-up
    if (!work())
      return -1;
  for (size_t i = 0; i < calls; ++i) {
    Clock::time_point start = Clock::now();
    bool ok = work();
    times.push_back(nanosSince(start));
    if (!ok)
      return -1;
  }
  return median(times);
}

void report(const char *what, double nanos) {
  if (nanos < 0)
    std::printf("%-58s FAILED\n", what);
  else
    std::printf("%-58s %8.0f ns\n", what, nanos);
}

} // namespace

int main(int argc, char **argv) {
  size_t calls = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 100000;
  // The stub is the driver (loaded once per process, so set first); PTX-only
  // entries, which it reads.
  setenv("LOWBIT_LIBCUDA", LOWBIT_CUDA_STUB, 1);
  setenv("LOWBIT_LIBNVJITLINK", "/nonexistent/libnvJitLink.so", 1);
  if (void *stub = dlopen(LOWBIT_CUDA_STUB, RTLD_NOW | RTLD_LOCAL))
    if (auto record =
            reinterpret_cast<void (*)(int)>(dlsym(stub, "stub_set_record")))
      record(0);

  JitOptions options;
  options.cacheMode = runtime::CacheMode::Off;
  auto jit = Jit::create(options);
  if (!jit) {
    std::fprintf(stderr, "%s\n", jit.error().message.c_str());
    return 1;
  }
  std::string error;
  Target gpu = *parseTarget("sm_90a", &error);
  std::printf("lowbit-bench-launch: median of %zu calls\n", calls);

  for (const char *spec :
       {"quantize mxfp4 dynamic", "quantize fp8_e4m3 dynamic"}) {
    auto kernel = (*jit)->get(spec, gpu);
    if (!kernel) {
      std::fprintf(stderr, "%s\n", kernel.error().message.c_str());
      return 1;
    }
    std::string label = std::string("get() memory hit  '") + spec + "'";
    report(label.c_str(),
           medianNanos(calls, [&] { return (*jit)->get(spec, gpu).ok(); }));
    std::vector<uint64_t> buffers;
    for (size_t i = 0; i < kernel->bufferCount(); ++i)
      buffers.push_back(0x7000000 + 0x100000 * i);
    void *stream = reinterpret_cast<void *>(0x51);
    label = std::string("launch() 4096x4096 '") + spec + "'";
    report(label.c_str(), medianNanos(calls, [&] {
             return kernel->launch(stream, buffers, 4096, 4096).ok();
           }));
  }

  jit::overrideWorkspaceWordsForTesting(64);
  auto withWorkspace = (*jit)->get("quantize mxfp8 dynamic", gpu);
  jit::overrideWorkspaceWordsForTesting(std::nullopt);
  if (!withWorkspace || withWorkspace->workspaceWords() != 64)
    return 1;
  std::vector<uint64_t> buffers;
  for (size_t i = 0; i < withWorkspace->bufferCount(); ++i)
    buffers.push_back(0x7000000 + 0x100000 * i);
  report("launch() 4096x4096 'quantize mxfp8 dynamic' + workspace",
         medianNanos(calls, [&] {
           return withWorkspace
               ->launch(reinterpret_cast<void *>(0x52), buffers, 4096, 4096)
               .ok();
         }));

  auto cpu = (*jit)->get("quantize mxfp4 dynamic", Target{});
  if (!cpu)
    return 1;
  std::vector<float> input(32, 1.5f);
  std::vector<uint8_t> codes(16), scales(1);
  std::vector<void *> host = {input.data(), codes.data(), scales.data()};
  report("get() memory hit  'quantize mxfp4 dynamic' cpu",
         medianNanos(calls, [&] {
           return (*jit)->get("quantize mxfp4 dynamic", Target{}).ok();
         }));
  report("run() 1x32 'quantize mxfp4 dynamic' cpu (host + kernel)",
         medianNanos(calls, [&] { return cpu->run(host, 1, 32).ok(); }));
  return 0;
}
