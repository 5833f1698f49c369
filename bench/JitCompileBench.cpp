//===- JitCompileBench.cpp - lowbit::Jit: spec -> cubin, and its caches ---===//
//
// What a caller of lowbit::Jit waits for, per kernel, on one chip:
//   cold     - the first get() of the kernel in the process, into an empty
//              temporary disk cache: spec -> PTX -> cubin (nvJitLink when
//              available), with the process's first-compile costs (dialect
//              registration, LLVM target initialization) on the first row;
//   warm     - the same spec compiled again by a new Jit whose cache is off
//              (CacheMode::Off), so nothing is found and the process is
//              already warm; median of `runs`;
//   mem hit  - get() of a kernel already in the Jit's memory cache; median
//              of 1000 calls, in microseconds (the whole get: spec
//              printing, key, lookup, payload decode);
//   disk hit - the first get() of a new Jit on the same cache directory:
//              read, validate and decode the disk entry, in microseconds;
//   NVRTC    - the scheme's CUDA C++ reference kernel (runtime/nvrtc) by
//              NVRTC to PTX, then nvJitLink to a cubin, in the same run:
//              the first build, and the median of `runs` later builds.
// ratio = NVRTC+link (later) / lowbit warm: above 1, lowbit is faster.
//
// Not measured: the launch path's own key computation and memory lookup
// (Kernel::launch computes the key from its arguments), because the public
// API reaches it only through launch(), which needs a CUDA driver and a
// GPU; lowbit-bench-cache measures KernelCache's key + lookupMemory alone.
//
// Numbers only: never a test, never pass/fail on timing.
//
// usage: lowbit-bench-jit [chip] [runs]
//
//===----------------------------------------------------------------------===//

#include "lowbit/Jit.h"
#include "runtime/driver/NvJitLink.h"
#include "runtime/driver/Nvrtc.h"
#include "runtime/nvrtc/ReferenceKernels.h"

#include "BenchTiming.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

using namespace lowbit;
using namespace lowbit::bench;

namespace {

struct Case {
  const char *label;
  const char *spec;   ///< lowbit's kernel spec text
  const char *scheme; ///< the NVRTC reference kernel's scheme
};

std::string firstLine(const std::string &text) {
  return text.substr(0, text.find('\n'));
}

} // namespace

int main(int argc, char **argv) {
  std::string chip = argc > 1 ? argv[1] : "sm_90a";
  int runs = argc > 2 ? std::max(1, std::atoi(argv[2])) : 3;
  std::string error;
  std::optional<Target> target = parseTarget(chip, &error);
  if (!target || !validateTarget(*target, &error) || !target->isNvidia()) {
    std::fprintf(stderr, "bad chip '%s': %s\n", chip.c_str(), error.c_str());
    return 1;
  }
  const Case cases[] = {
      {"mxfp4 dynamic", "quantize mxfp4 from=f32 scale=dynamic", "mxfp4"},
      {"fp8_e4m3 static", "quantize fp8_e4m3 from=f32 scale=static",
       "fp8_e4m3"},
      {"nvfp4 dynamic", "quantize nvfp4 from=f32 scale=dynamic", "nvfp4"},
  };

  std::string cacheDirectory =
      (std::filesystem::temp_directory_path() / "lowbit-bench-jit-XXXXXX")
          .string();
  if (!mkdtemp(cacheDirectory.data())) {
    std::fprintf(stderr, "cannot create a temporary cache directory\n");
    return 1;
  }
  JitOptions options;
  options.cacheDirectory = cacheDirectory;
  options.cacheMode = runtime::CacheMode::ReadWrite;
  options.target = *target;
  auto jit = Jit::create(options);
  if (!jit) {
    std::fprintf(stderr, "Jit::create: %s\n", jit.error().message.c_str());
    return 1;
  }

  auto nvrtc = runtime::nvrtcLibrary();
  auto linker = runtime::nvJitLinkLibrary();
  std::printf("lowbit::Jit spec -> %s for %s (%s), f32 input; warm and "
              "NVRTC = median of %d;\nnvrtc = NVRTC + nvJitLink on the "
              "reference kernel; warm = new Jit, cache off\n",
              linker ? "PTX + cubin (nvJitLink)" : "PTX (no nvJitLink)",
              chip.c_str(), target->str().c_str(), runs);
  if (!nvrtc)
    std::printf("NVRTC: not available (%s)\n", nvrtc.error().message.c_str());
  std::printf("%-16s %8s %8s %10s %11s %10s %10s %10s\n", "kernel", "cold ms",
              "warm ms", "mem-hit us", "disk-hit us", "nvrtc1 ms", "nvrtc ms",
              "nvrtc/warm");

  for (const Case &c : cases) {
    // Cold: first get of this kernel in the process, empty cache.
    Clock::time_point start = Clock::now();
    Expected<Kernel> kernel = (*jit)->get(c.spec, *target);
    double cold = millisSince(start);
    if (!kernel) {
      std::printf("%-16s refused: %s\n", c.label,
                  firstLine(kernel.error().message).c_str());
      continue;
    }

    // Warm: a new Jit with the cache off compiles the same spec again.
    std::vector<double> warm;
    for (int run = 0; run < runs; ++run) {
      JitOptions off = options;
      off.cacheMode = runtime::CacheMode::Off;
      auto fresh = Jit::create(off);
      if (!fresh)
        break;
      start = Clock::now();
      Expected<Kernel> again = (*fresh)->get(c.spec, *target);
      double millis = millisSince(start);
      if (again)
        warm.push_back(millis);
    }

    // Memory hit: 1000 gets of the kernel just compiled.
    std::vector<double> hits;
    hits.reserve(1000);
    for (int call = 0; call < 1000; ++call) {
      start = Clock::now();
      Expected<Kernel> hit = (*jit)->get(c.spec, *target);
      hits.push_back(millisSince(start) * 1000);
    }

    // Disk hit: a new Jit on the same directory, first get.
    double diskMicros = -1;
    if (auto reader = Jit::create(options)) {
      start = Clock::now();
      Expected<Kernel> fromDisk = (*reader)->get(c.spec, *target);
      double micros = millisSince(start) * 1000;
      if (fromDisk && fromDisk->loadedFromDisk())
        diskMicros = micros;
    }

    // NVRTC + nvJitLink on the scheme's reference kernel.
    std::vector<double> nvrtcMillis;
    std::string nvrtcNote;
    if (nvrtc) {
      auto source = runtime::referenceKernelSource(c.scheme, "f32");
      for (int run = 0; source && run <= runs; ++run) {
        auto build = runtime::buildReferenceKernel(
            **nvrtc, linker ? *linker : nullptr, *source, chip);
        if (!build) {
          nvrtcNote = firstLine(build.error().message);
          break;
        }
        nvrtcMillis.push_back(build->nvrtcMillis + build->linkMillis);
      }
      if (!source)
        nvrtcNote = firstLine(source.error().message);
    }
    double nvrtcFirst = nvrtcMillis.empty() ? 0 : nvrtcMillis.front();
    double nvrtcLater =
        nvrtcMillis.size() > 1
            ? median({nvrtcMillis.begin() + 1, nvrtcMillis.end()})
            : 0;
    double warmMedian = median(warm);
    char ratio[32] = "-";
    if (nvrtcLater > 0 && warmMedian > 0)
      std::snprintf(ratio, sizeof ratio, "%.2fx", nvrtcLater / warmMedian);
    char disk[32] = "-";
    if (diskMicros >= 0)
      std::snprintf(disk, sizeof disk, "%.1f", diskMicros);
    std::printf("%-16s %8.1f %8.1f %10.2f %11s %10.1f %10.1f %10s\n", c.label,
                cold, warmMedian, median(hits), disk, nvrtcFirst, nvrtcLater,
                ratio);
    if (!nvrtcNote.empty())
      std::printf("  nvrtc: %s\n", nvrtcNote.c_str());
  }
  JitStats stats = (*jit)->stats();
  std::printf("first Jit: %llu GPU compiles, %llu memory hits, %llu disk "
              "writes\n",
              (unsigned long long)stats.gpuCompiles,
              (unsigned long long)stats.cache.memoryHits,
              (unsigned long long)stats.cache.diskWrites);
  std::error_code ignored;
  std::filesystem::remove_all(cacheDirectory, ignored);
  return 0;
}
