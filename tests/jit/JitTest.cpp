//===- JitTest.cpp - lowbit::Jit through its public header ----------------===//

#include "lowbit/Jit.h"
#include "runtime/compiler/Compiler.h"
#include "runtime/jit/LaunchPlan.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <new>
#include <random>
#include <thread>

using namespace lowbit;
namespace fs = std::filesystem;

namespace {

fs::path freshDirectory(const std::string &name) {
  fs::path path =
      fs::temp_directory_path() / ("lowbit-jit-test-" + name + "-" +
                                   std::to_string(std::random_device()()));
  fs::remove_all(path);
  fs::create_directories(path);
  return path;
}

std::unique_ptr<Jit> makeJit(const fs::path &directory,
                             runtime::CacheMode mode) {
  auto jit = Jit::create(JitOptions{directory.string(), mode, Target{}});
  REQUIRE(jit.ok());
  return std::move(jit).value();
}

Target gpuTarget() {
  std::string error;
  std::optional<Target> target = parseTarget("sm_90a", &error);
  REQUIRE(target);
  return *target;
}

/// Frees what `new (std::align_val_t(64)) float[n]` allocated: an aligned
/// new[] must meet the aligned delete[] (plain delete[] is undefined).
struct AlignedArrayDelete {
  void operator()(float *pointer) const {
    ::operator delete[](pointer, std::align_val_t(64));
  }
};

/// 64-byte aligned host buffers for a [rows, cols] mxfp4 quantize.
struct HostBuffers {
  std::vector<std::unique_ptr<float[], AlignedArrayDelete>> storage;
  std::vector<void *> pointers;
  HostBuffers(const Kernel &kernel, int64_t rows, int64_t cols) {
    for (size_t i = 0; i < kernel.bufferCount(); ++i) {
      // Large enough for any parameter ([rows, cols] of f32 at most).
      storage.emplace_back(new (std::align_val_t(64)) float[rows * cols + 64]);
      std::fill_n(storage.back().get(), rows * cols + 64, 1.5f);
      pointers.push_back(storage.back().get());
    }
  }
};

} // namespace

TEST_CASE("a size declared dynamic never recompiles", "[jit]") {
  auto jit = makeJit(freshDirectory("dynamic"), runtime::CacheMode::Off);
  auto kernel = jit->get("quantize mxfp4 dynamic", Target{});
  REQUIRE(kernel.ok());
  CHECK(jit->stats().cpuCompiles == 1);
  for (auto [rows, cols] :
       {std::pair<int64_t, int64_t>{4, 64}, {8, 32}, {3, 96}, {1, 32}}) {
    HostBuffers buffers(*kernel, rows, cols);
    Status status = kernel->run(buffers.pointers, rows, cols);
    INFO((status.ok() ? std::string() : status.error().message));
    CHECK(status.ok());
  }
  CHECK(jit->stats().cpuCompiles == 1);
  // A second get() of the same spec is a memory hit.
  REQUIRE(
      jit->get("quantize mxfp4 from=f32 scale=dynamic dynamic", Target{}).ok());
  CHECK(jit->stats().cpuCompiles == 1);
}

TEST_CASE("a static-size spec compiles per size", "[jit]") {
  auto jit = makeJit(freshDirectory("static"), runtime::CacheMode::Off);
  auto small = jit->get("quantize mxfp4 rows=4 cols=64", Target{});
  auto large = jit->get("quantize mxfp4 rows=8 cols=64", Target{});
  REQUIRE(small.ok());
  REQUIRE(large.ok());
  CHECK(jit->stats().cpuCompiles == 2);
  REQUIRE(jit->get("quantize mxfp4 rows=4 cols=64", Target{}).ok());
  CHECK(jit->stats().cpuCompiles == 2);
  HostBuffers buffers(*small, 8, 64);
  CHECK(small->run(buffers.pointers, 4, 64).ok());
  Status mismatch = small->run(buffers.pointers, 8, 64);
  REQUIRE_FALSE(mismatch.ok());
  CHECK(mismatch.error().code == ErrorCode::InvalidArgument);
  CHECK(jit->stats().cpuCompiles == 2);
}

TEST_CASE("a misaligned buffer is its own key", "[jit]") {
  auto jit = makeJit(freshDirectory("align"), runtime::CacheMode::Off);
  auto kernel = jit->get("quantize mxfp4 dynamic", Target{});
  REQUIRE(kernel.ok());
  HostBuffers buffers(*kernel, 2, 32);
  std::vector<void *> shifted = buffers.pointers;
  shifted[0] = static_cast<char *>(shifted[0]) + 4;
  CHECK(kernel->run(shifted, 2, 32).ok());
  CHECK(kernel->run(shifted, 2, 32).ok());
  CHECK(jit->stats().cpuCompiles == 2);
}

TEST_CASE("N threads x M specs compile exactly M times", "[jit]") {
  auto jit = makeJit(freshDirectory("threads"), runtime::CacheMode::Off);
  const std::vector<std::string> specs = {"quantize mxfp4 dynamic",
                                          "dequantize mxfp4 dynamic",
                                          "quantize mxfp8 dynamic"};
  constexpr int kThreads = 8;
  std::atomic<int> failures{0};
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) {
      }
      for (size_t i = 0; i < specs.size(); ++i)
        if (!jit->get(specs[(i + t) % specs.size()], gpuTarget()).ok())
          failures.fetch_add(1);
    });
  for (std::thread &thread : threads)
    thread.join();
  CHECK(failures.load() == 0);
  CHECK(jit->stats().gpuCompiles == specs.size());
  CHECK(jit->stats().cache.compiles == specs.size());
}

TEST_CASE("must-hit: a clear miss, then a hit from disk in a new Jit",
          "[jit]") {
  fs::path directory = freshDirectory("musthit");
  const std::string spec = "quantize nvfp4 dynamic";
  {
    auto jit = makeJit(directory, runtime::CacheMode::MustHit);
    auto miss = jit->get(spec, gpuTarget());
    REQUIRE_FALSE(miss.ok());
    CHECK(miss.error().code == ErrorCode::CacheMiss);
    CHECK_THAT(miss.error().message, Catch::Contains("must-hit"));
    auto cpuMiss = jit->get(spec, Target{});
    REQUIRE_FALSE(cpuMiss.ok());
    CHECK(cpuMiss.error().code == ErrorCode::CacheMiss);
    CHECK(jit->stats().compiles == 0);
  }
  std::string ptx;
  {
    auto jit = makeJit(directory, runtime::CacheMode::ReadWrite);
    auto kernel = jit->get(spec, gpuTarget());
    REQUIRE(kernel.ok());
    CHECK_FALSE(kernel->loadedFromDisk());
    CHECK(jit->stats().gpuCompiles == 1);
    CHECK(kernel->resources().registers > 0);
    ptx = std::string(kernel->ptx());
  }
  auto jit = makeJit(directory, runtime::CacheMode::MustHit);
  auto kernel = jit->get(spec, gpuTarget());
  REQUIRE(kernel.ok());
  CHECK(kernel->loadedFromDisk());
  CHECK(kernel->ptx() == ptx);
  CHECK(kernel->resources().registers > 0);
  CHECK(jit->stats().compiles == 0);
  CHECK(jit->stats().cache.diskHits == 1);
}

TEST_CASE("a corrupted disk entry is recompiled", "[jit]") {
  fs::path directory = freshDirectory("corrupt");
  const std::string spec = "dequantize mxfp4 dynamic";
  {
    auto jit = makeJit(directory, runtime::CacheMode::ReadWrite);
    REQUIRE(jit->get(spec, gpuTarget()).ok());
  }
  auto entries = runtime::listDiskCache(directory.string());
  REQUIRE(entries.ok());
  REQUIRE(entries->size() == 1);
  {
    std::fstream file(entries->front().path,
                      std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(-10, std::ios::end);
    file.put('#');
  }
  auto jit = makeJit(directory, runtime::CacheMode::ReadWrite);
  auto kernel = jit->get(spec, gpuTarget());
  REQUIRE(kernel.ok());
  CHECK_FALSE(kernel->loadedFromDisk());
  CHECK(jit->stats().gpuCompiles == 1);
  CHECK(jit->stats().cache.corruptReplaced == 1);
}

TEST_CASE("without libcuda launch() is a clear error; run() still works",
          "[jit]") {
  // Decided before any other call loads the driver in this process.
  setenv("LOWBIT_DISABLE_CUDA", "1", 1);
  auto jit = makeJit(freshDirectory("nocuda"), runtime::CacheMode::Off);
  auto gpu = jit->get("quantize mxfp4 dynamic", gpuTarget());
  REQUIRE(gpu.ok());
  std::vector<uint64_t> device(gpu->bufferCount(), 0x1000);
  Status launched = gpu->launch(nullptr, device, 4, 64);
  REQUIRE_FALSE(launched.ok());
  CHECK((launched.error().code == ErrorCode::LibraryNotFound ||
         launched.error().code == ErrorCode::NoDevice));
  CHECK_FALSE(launched.error().message.empty());
  // The wrong entry point for each kind is an error, not a crash.
  std::vector<void *> none(gpu->bufferCount(), nullptr);
  CHECK(gpu->run(none, 4, 64).error().code == ErrorCode::InvalidArgument);

  auto cpu = jit->get("quantize mxfp4 dynamic", Target{});
  REQUIRE(cpu.ok());
  HostBuffers buffers(*cpu, 4, 64);
  CHECK(cpu->run(buffers.pointers, 4, 64).ok());
  // 1.5 = 0.75 * 2^1: every e8m0 scale byte is 127 + 0 (amax 1.5 -> 2^0
  // with e2m1's emax 2), the same for every group.
  auto *scales = static_cast<uint8_t *>(buffers.pointers[2]);
  CHECK(scales[0] == scales[1]);
  CHECK(cpu->launch(nullptr, device, 4, 64).error().code ==
        ErrorCode::InvalidArgument);
}

TEST_CASE("bad specs and targets are errors", "[jit]") {
  auto jit = makeJit(freshDirectory("bad"), runtime::CacheMode::Off);
  auto bad = jit->get("quantize nosuchscheme", Target{});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code == ErrorCode::InvalidArgument);
  Target old = gpuTarget();
  old.ptxVersion = 60;
  auto badTarget = jit->get("quantize mxfp4 dynamic", old);
  REQUIRE_FALSE(badTarget.ok());
  CHECK(badTarget.error().code == ErrorCode::InvalidArgument);
}

TEST_CASE("every named scheme has a launch plan", "[jit][plan]") {
  int planned = 0, total = 0;
  std::vector<std::string> unsupported;
  for (const Scheme &scheme : namedSchemes()) {
    for (KernelOp op : {KernelOp::Quantize, KernelOp::Dequantize}) {
      KernelSpec spec;
      spec.op = op;
      spec.scheme = scheme;
      ++total;
      auto build = jit::buildGpuKernel(spec, gpuTarget());
      REQUIRE(build.ok());
      if (!build->plan.unsupported.empty()) {
        unsupported.push_back(printKernelSpec(spec) + ": " +
                              build->plan.unsupported);
        continue;
      }
      ++planned;
      CHECK(build->plan.steps.size() == build->kernelNames.size());
      auto reparsed = jit::LaunchPlan::parse(build->plan.serialize());
      REQUIRE(reparsed.ok());
      CHECK(reparsed->serialize() == build->plan.serialize());
      jit::ParamShapes shapes;
      for (const Shape2D &shape : compiler::bufferShapes(spec, 256, 512))
        shapes.push_back({shape.rows, shape.cols});
      for (const jit::LaunchStep &step : build->plan.steps)
        for (const std::string &size : step.sizes) {
          auto value = jit::evaluateSize(size, shapes);
          INFO(size << ": " << (value.ok() ? "" : value.error().message));
          REQUIRE(value.ok());
          CHECK(*value >= 0);
        }
    }
  }
  for (const std::string &line : unsupported)
    WARN(line);
  CHECK(planned == total);
}

TEST_CASE("launch plan expressions", "[jit][plan]") {
  jit::ParamShapes shapes = {{256, 100}, {256, 4}};
  CHECK(*jit::evaluateSize("dim:0:1 128 ceildivs", shapes) == 1);
  CHECK(*jit::evaluateSize("dim:0:0 dim:1:1 mul", shapes) == 1024);
  CHECK(*jit::evaluateSize("3 5 cmp:2 7 9 sel", shapes) == 7);
  CHECK(*jit::evaluateSize("-7 2 floordivs", shapes) == -4);
  CHECK_FALSE(jit::evaluateSize("1 0 divs", shapes).ok());
  CHECK_FALSE(jit::evaluateSize("dim:5:0", shapes).ok());
  CHECK_FALSE(jit::evaluateSize("1 2", shapes).ok());
  // Found by fuzzing (fuzz/regressions/launch-plan): INT64_MIN / -1 and
  // ceildivs of INT64_MIN were undefined behaviour, ceildivu wrapped.
  for (const char *op : {"divs", "rems", "ceildivs", "floordivs"})
    CHECK_FALSE(jit::evaluateSize(std::string("-9223372036854775808 -1 ") + op,
                                  shapes)
                    .ok());
  CHECK(*jit::evaluateSize("-9223372036854775808 2 ceildivs", shapes) ==
        -4611686018427387904);
  CHECK(*jit::evaluateSize("-7 2 ceildivs", shapes) == -3);
  CHECK(*jit::evaluateSize("-1 2 ceildivu", shapes) == -9223372036854775807 - 1);
}
