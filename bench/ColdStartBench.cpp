//===- ColdStartBench.cpp - First, warm and start-up compiles, in process -===//
//
// lowbit::Jit as an engine links it without MLIR (LowbitJitLoader): the
// compiler is liblowbit-compiler.so, loaded at the first miss, so
// LOWBIT_COMPILER_LIBRARY picks the library measured (linked statically
// or against libMLIR/libLLVM, cmake/LowbitStaticCompiler.cmake).
// bench/cold_start_bench.py runs it; bench/RESULTS.md has the numbers.
//
//   lowbit-bench-cold-start warm TARGET RUNS SPEC...
//     Loads the compiler library (timed), compiles each SPEC once (the
//     process's first compiles), then RUNS more times each, every one by a
//     new Jit with the cache off (spec -> PTX, no cubin). For a quantize
//     spec with an NVRTC reference kernel (runtime/nvrtc), NVRTC compiles
//     it RUNS times in the same process, after one untimed compile.
//     Prints "load MS", then per spec "warm SPEC<TAB>FIRST<TAB>WARM<TAB>
//     NVRTC" (medians in ms; NVRTC "-" where there is no peer kernel).
//
//   lowbit-bench-cold-start startup TARGET THREADS ptx|cubin SPEC...
//     One Jit on an empty temporary cache directory; THREADS threads take
//     the SPECs in turn (get(), or getKv() for KV and matmul specs) until
//     all are compiled and written. Prints "startup WALL_MS KERNELS": the
//     wall time includes loading the compiler and the cache writes.
//
//===----------------------------------------------------------------------===//

#include "bench/BenchTiming.h"
#include "lowbit/Jit.h"
#include "runtime/driver/Nvrtc.h"
#include "runtime/jit/CompilerLoader.h"
#include "runtime/nvrtc/ReferenceKernels.h"
#include "runtime/spec/KernelSpec.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace lowbit;
using lowbit::bench::Clock;
using lowbit::bench::median;
using lowbit::bench::millisSince;

namespace {

int fail(const std::string &message) {
  std::fprintf(stderr, "lowbit-bench-cold-start: %s\n", message.c_str());
  return 1;
}

/// KV-cache and matmul specs go through getKv (Jit.h).
bool isKvSpec(std::string_view spec) {
  return spec.starts_with("kv_") || spec.starts_with("kivi_") ||
         spec.starts_with("matmul ");
}

/// Compiles `spec` with `jit`; returns the error message, empty on success.
std::string compile(Jit &jit, const std::string &spec, const Target &target) {
  if (isKvSpec(spec)) {
    Expected<KvKernel> kernel = jit.getKv(spec, target);
    return kernel ? "" : kernel.error().message;
  }
  Expected<Kernel> kernel = jit.get(spec, target);
  return kernel ? "" : kernel.error().message;
}

Expected<std::unique_ptr<Jit>> uncachedJit(const Target &target) {
  JitOptions options;
  options.target = target;
  options.cacheMode = runtime::CacheMode::Off;
  options.deferCubin = true;
  return Jit::create(options);
}

/// The NVRTC reference kernel of a quantize spec's scheme and input type.
std::optional<runtime::ReferenceKernelSource>
nvrtcPeerOf(const std::string &specText) {
  std::optional<KernelSpec> spec = parseKernelSpec(specText);
  if (!spec || spec->op != KernelOp::Quantize || !spec->prologues.empty())
    return std::nullopt;
  Expected<runtime::ReferenceKernelSource> source =
      runtime::referenceKernelSource(spec->scheme.name,
                                     valueTypeName(spec->valueType));
  if (!source)
    return std::nullopt;
  return std::move(*source);
}

int runWarm(const Target &target, int runs,
            const std::vector<std::string> &specs) {
  Clock::time_point start = Clock::now();
  Expected<const jit::CompilerLibrary *> library = jit::compilerLibrary();
  if (!library)
    return fail(library.error().message);
  std::printf("load %.2f\n", millisSince(start));

  std::vector<double> first;
  for (const std::string &spec : specs) {
    Expected<std::unique_ptr<Jit>> jit = uncachedJit(target);
    if (!jit)
      return fail(jit.error().message);
    start = Clock::now();
    if (std::string error = compile(**jit, spec, target); !error.empty())
      return fail(spec + ": " + error);
    first.push_back(millisSince(start));
  }
  Expected<const runtime::NvrtcApi *> nvrtc = runtime::nvrtcLibrary();
  for (size_t index = 0; index < specs.size(); ++index) {
    std::vector<double> warm, peer;
    for (int run = 0; run < runs; ++run) {
      Expected<std::unique_ptr<Jit>> jit = uncachedJit(target);
      if (!jit)
        return fail(jit.error().message);
      start = Clock::now();
      if (std::string error = compile(**jit, specs[index], target);
          !error.empty())
        return fail(specs[index] + ": " + error);
      warm.push_back(millisSince(start));
    }
    std::optional<runtime::ReferenceKernelSource> source =
        nvrtc ? nvrtcPeerOf(specs[index]) : std::nullopt;
    for (int run = 0; source && run <= runs; ++run) {
      start = Clock::now();
      auto ptx = runtime::compileWithNvrtc(
          **nvrtc, source->source, source->scheme + ".cu",
          runtime::referenceNvrtcOptions(target.chip));
      if (!ptx)
        return fail("NVRTC: " + ptx.error().message);
      if (run > 0)
        peer.push_back(millisSince(start));
    }
    std::string peerText = peer.empty() ? "-" : std::to_string(median(peer));
    std::printf("warm %s\t%.2f\t%.2f\t%s\n", specs[index].c_str(), first[index],
                median(warm), peerText.c_str());
  }
  return 0;
}

int runStartup(const Target &target, int threads, bool cubin,
               const std::vector<std::string> &specs) {
  namespace fs = std::filesystem;
  fs::path directory = fs::temp_directory_path() /
                       ("lowbit-cold-start-" + std::to_string(::getpid()));
  fs::remove_all(directory);
  Clock::time_point start = Clock::now();
  JitOptions options;
  options.target = target;
  options.cacheDirectory = directory.string();
  options.cacheMode = runtime::CacheMode::ReadWrite;
  options.deferCubin = !cubin;
  Expected<std::unique_ptr<Jit>> jit = Jit::create(options);
  if (!jit)
    return fail(jit.error().message);
  std::atomic<size_t> next{0};
  std::mutex errorMutex;
  std::string firstError;
  auto worker = [&] {
    for (size_t index = next++; index < specs.size(); index = next++)
      if (std::string error = compile(**jit, specs[index], target);
          !error.empty()) {
        std::lock_guard<std::mutex> lock(errorMutex);
        if (firstError.empty())
          firstError = specs[index] + ": " + error;
      }
  };
  std::vector<std::thread> pool;
  for (int thread = 0; thread < threads; ++thread)
    pool.emplace_back(worker);
  for (std::thread &thread : pool)
    thread.join();
  double wall = millisSince(start);
  jit->reset();
  fs::remove_all(directory);
  if (!firstError.empty())
    return fail(firstError);
  std::printf("startup %.2f %zu\n", wall, specs.size());
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 5)
    return fail("usage: lowbit-bench-cold-start warm TARGET RUNS SPEC... | "
                "startup TARGET THREADS ptx|cubin SPEC...");
  std::string mode = argv[1], error;
  std::optional<Target> target = parseTarget(argv[2], &error);
  if (!target)
    return fail("target: " + error);
  int count = std::atoi(argv[3]);
  if (count < 1)
    return fail("RUNS and THREADS must be at least 1");
  if (mode == "warm")
    return runWarm(*target, count, {argv + 4, argv + argc});
  std::string product = argv[4];
  if (mode == "startup" && argc > 5 && (product == "ptx" || product == "cubin"))
    return runStartup(*target, count, product == "cubin",
                      {argv + 5, argv + argc});
  return fail("unknown mode or product: " + mode + " " + product);
}
