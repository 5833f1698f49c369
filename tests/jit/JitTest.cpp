//===- JitTest.cpp - lowbit::Jit through its public header ----------------===//

#include "lowbit/Jit.h"
#include "format/Quantize.h"
#include "runtime/compiler/Compiler.h"
#include "runtime/compiler/GpuCompile.h"
#include "runtime/jit/LaunchPlan.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <cstring>
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
  JitOptions options;
  options.cacheDirectory = directory.string();
  options.cacheMode = mode;
  auto jit = Jit::create(options);
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

TEST_CASE("run() refuses a written buffer that overlaps another", "[jit]") {
  auto jit = makeJit(freshDirectory("alias"), runtime::CacheMode::Off);
  auto kernel = jit->get("quantize mxfp4 dynamic", Target{});
  REQUIRE(kernel.ok());
  HostBuffers buffers(*kernel, 4, 64);
  REQUIRE(kernel->run(buffers.pointers, 4, 64).ok());
  auto refused = [&](std::vector<void *> pointers, const char *words) {
    Status status = kernel->run(pointers, 4, 64);
    REQUIRE_FALSE(status.ok());
    CHECK(status.error().code == ErrorCode::InvalidArgument);
    INFO(status.error().message);
    CHECK(status.error().message.find(words) != std::string::npos);
  };
  // The codes written over the input: the input would be destroyed.
  std::vector<void *> aliased = buffers.pointers;
  aliased[1] = aliased[0];
  refused(aliased, "buffer 1 overlaps buffer 0 (an input)");
  // The scales inside the codes' last bytes ([4, 32] bytes).
  aliased = buffers.pointers;
  aliased[2] = static_cast<uint8_t *>(aliased[1]) + 4 * 32 - 1;
  refused(aliased, "buffer 1 overlaps buffer 2 (also written)");
  // Just past the codes: no overlap.
  aliased[2] = static_cast<uint8_t *>(aliased[1]) + 4 * 32;
  CHECK(kernel->run(aliased, 4, 64).ok());
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
    CHECK_FALSE(
        jit::evaluateSize(std::string("-9223372036854775808 -1 ") + op, shapes)
            .ok());
  CHECK(*jit::evaluateSize("-9223372036854775808 2 ceildivs", shapes) ==
        -4611686018427387904);
  CHECK(*jit::evaluateSize("-7 2 ceildivs", shapes) == -3);
  CHECK(*jit::evaluateSize("-1 2 ceildivu", shapes) ==
        -9223372036854775807 - 1);
}

TEST_CASE("get() of a known spec is a memory lookup", "[jit][memory]") {
  auto jit = makeJit(freshDirectory("memo"), runtime::CacheMode::Off);
  auto first = jit->get("quantize mxfp8 dynamic", gpuTarget());
  REQUIRE(first.ok());
  runtime::CacheStats before = jit->stats().cache;
  auto second = jit->get("quantize mxfp8 dynamic", gpuTarget());
  REQUIRE(second.ok());
  // The same kernel object, without a key or a cache lookup.
  CHECK(second->ptx().data() == first->ptx().data());
  CHECK(jit->stats().cache.memoryHits == before.memoryHits);
  CHECK(jit->stats().gpuCompiles == 1);
  // Another target is another kernel.
  std::string error;
  auto sm100 =
      jit->get("quantize mxfp8 dynamic", *parseTarget("sm_100a", &error));
  REQUIRE(sm100.ok());
  CHECK(jit->stats().gpuCompiles == 2);
}

TEST_CASE("memory caches are bounded: an evicted CPU kernel is recompiled",
          "[jit][memory]") {
  JitOptions options;
  options.cacheMode = runtime::CacheMode::Off;
  options.memoryCapacity = 2;
  auto created = Jit::create(options);
  REQUIRE(created.ok());
  Jit &jit = **created;
  const std::vector<std::string> specs = {"quantize mxfp4 dynamic",
                                          "quantize mxfp8 dynamic",
                                          "quantize int8 dynamic"};
  std::vector<Kernel> kernels;
  for (const std::string &spec : specs) {
    auto kernel = jit.get(spec, Target{});
    REQUIRE(kernel.ok());
    kernels.push_back(*kernel);
  }
  CHECK(jit.stats().cpuCompiles == 3);
  CHECK(jit.stats().evictions >= 2); // get()'s map and the engines
  // The first spec was pushed out of both: asked again, it compiles again.
  REQUIRE(jit.get(specs[0], Target{}).ok());
  CHECK(jit.stats().cpuCompiles == 4);
  // The most recent one stayed.
  REQUIRE(jit.get(specs[2], Target{}).ok());
  CHECK(jit.stats().cpuCompiles == 4);
  // A kernel handed out before its eviction still runs.
  HostBuffers buffers(kernels[1], 2, 32);
  CHECK(kernels[1].run(buffers.pointers, 2, 32).ok());
}

TEST_CASE("memory caches are bounded: an evicted GPU kernel comes from disk",
          "[jit][memory]") {
  fs::path directory = freshDirectory("bounded-gpu");
  JitOptions options;
  options.cacheDirectory = directory.string();
  options.cacheMode = runtime::CacheMode::ReadWrite;
  options.memoryCapacity = 1;
  auto created = Jit::create(options);
  REQUIRE(created.ok());
  Jit &jit = **created;
  auto first = jit.get("dequantize mxfp4 dynamic", gpuTarget());
  REQUIRE(first.ok());
  std::string ptx(first->ptx());
  REQUIRE(jit.get("dequantize mxfp8 dynamic", gpuTarget()).ok());
  CHECK(jit.stats().gpuCompiles == 2);
  CHECK(jit.stats().cache.diskHits == 0);
  auto again = jit.get("dequantize mxfp4 dynamic", gpuTarget());
  REQUIRE(again.ok());
  CHECK(jit.stats().gpuCompiles == 2);
  CHECK(jit.stats().cache.diskHits == 1);
  CHECK(again->loadedFromDisk());
  CHECK(again->ptx() == ptx);
}

TEST_CASE("Kernel::signature describes the arguments", "[jit][signature]") {
  auto jit = makeJit(freshDirectory("signature"), runtime::CacheMode::Off);
  auto kernel = jit->get("quantize mxfp4 from=bf16 dynamic", Target{});
  REQUIRE(kernel.ok());
  auto signature = kernel->signature(3, 64);
  REQUIRE(signature.ok());
  REQUIRE(signature->size() == 3);
  const ArgumentInfo &input = (*signature)[0], &codes = (*signature)[1],
                     &scales = (*signature)[2];
  CHECK(input.role == ArgumentRole::Input);
  CHECK(input.element == ElementType::BF16);
  CHECK(input.shape == std::array<int64_t, 2>{3, 64});
  CHECK((input.read && !input.written));
  CHECK(codes.role == ArgumentRole::Codes);
  CHECK(codes.element == ElementType::U8);
  CHECK(codes.shape == std::array<int64_t, 2>{3, 32}); // two codes a byte
  CHECK((codes.written && !codes.read));
  CHECK(scales.role == ArgumentRole::Scales);
  CHECK(scales.element == ElementType::U8); // e8m0 codes
  CHECK(scales.shape == std::array<int64_t, 2>{3, 2});
  CHECK(argumentRoleName(scales.role) == "scales");
  CHECK(elementTypeName(input.element) == "bf16");
  CHECK(kernel->workspaceWords() == 0); // CPU kernels take none

  auto dequantize = jit->get("dequantize nvfp4 dynamic", Target{});
  REQUIRE(dequantize.ok());
  auto dq = dequantize->signature(1, 16);
  REQUIRE(dq.ok());
  REQUIRE(dq->size() == 4);
  CHECK((*dq)[2].role == ArgumentRole::Global);
  CHECK((*dq)[2].element == ElementType::F32);
  CHECK((*dq)[3].role == ArgumentRole::Output);
  CHECK((*dq)[3].written);

  CHECK_FALSE(kernel->signature(-1, 64).ok());
  auto fixed = jit->get("quantize mxfp4 rows=2 cols=32", Target{});
  REQUIRE(fixed.ok());
  CHECK(fixed->signature(2, 32).ok());
  auto other = fixed->signature(4, 32);
  REQUIRE_FALSE(other.ok());
  CHECK(other.error().code == ErrorCode::InvalidArgument);
}

TEST_CASE("two threads run the same kernel at once, bit-exact", "[jit]") {
  auto jit = makeJit(freshDirectory("two-threads"), runtime::CacheMode::Off);
  auto kernel = jit->get("quantize nvfp4 dynamic", Target{});
  REQUIRE(kernel.ok());
  const Scheme scheme = *lookupScheme("nvfp4", nullptr);
  constexpr int64_t kRows = 17, kCols = 1000;
  auto signature = kernel->signature(kRows, kCols);
  REQUIRE(signature.ok());
  std::atomic<int> ready{0}, mismatches{0}, failures{0};
  auto worker = [&](uint32_t seed) {
    std::mt19937 generator(seed);
    std::uniform_real_distribution<float> values(-300.0f, 300.0f);
    std::vector<float> input(size_t(kRows * kCols));
    for (float &value : input)
      value = values(generator);
    std::string error;
    std::optional<QuantizedTensor> expected =
        quantize(scheme, input, kRows, kCols, &error);
    REQUIRE(expected);
    std::vector<std::vector<uint8_t>> outputs;
    for (size_t i = 1; i < signature->size(); ++i) {
      const ArgumentInfo &info = (*signature)[i];
      outputs.emplace_back(size_t(info.shape[0] * info.shape[1]) *
                           (info.element == ElementType::F32 ? 4 : 1));
    }
    std::vector<void *> buffers = {input.data()};
    for (auto &output : outputs)
      buffers.push_back(output.data());
    ready.fetch_add(1);
    while (ready.load() < 2) {
    }
    for (int run = 0; run < 20; ++run) {
      for (auto &output : outputs)
        std::fill(output.begin(), output.end(), uint8_t(0xA5));
      if (!kernel->run(buffers, kRows, kCols).ok()) {
        failures.fetch_add(1);
        continue;
      }
      std::vector<uint8_t> scales(expected->scaleCodes.begin(),
                                  expected->scaleCodes.end());
      float global = 0;
      std::memcpy(&global, outputs[2].data(), 4);
      if (outputs[0] != expected->codes || outputs[1] != scales ||
          std::memcmp(&global, &expected->globalScale, 4) != 0)
        mismatches.fetch_add(1);
    }
  };
  std::thread a(worker, 1u), b(worker, 2u);
  a.join();
  b.join();
  CHECK(failures.load() == 0);
  CHECK(mismatches.load() == 0);
}

TEST_CASE("the launch path's shapes are the compiler's", "[jit][signature]") {
  // Kernel::signature (and launch) ask the format model by role; the
  // compiler's bufferShapes builds the module's parameter list. Equal for
  // every named scheme, both ops, ragged sizes.
  auto jit = makeJit(freshDirectory("shapes"), runtime::CacheMode::Off);
  for (const Scheme &scheme : namedSchemes())
    for (KernelOp op : {KernelOp::Quantize, KernelOp::Dequantize})
      for (bool isStatic : {false, true}) {
        // Static scales add read parameters; two schemes cover them (one
        // with zero points).
        if (isStatic &&
            (op == KernelOp::Dequantize ||
             (scheme.name != "mxfp4" && scheme.name != "int4_g128")))
          continue;
        KernelSpec spec;
        spec.op = op;
        spec.scheme = scheme;
        if (isStatic)
          spec.scheme.scale.mode = ScaleMode::Static;
        auto kernel = jit->get(spec, gpuTarget());
        REQUIRE(kernel.ok());
        for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1},
                                  {3, 37},
                                  {130, 1000},
                                  {0, 64}}) {
          auto signature = kernel->signature(rows, cols);
          REQUIRE(signature.ok());
          std::vector<Shape2D> expected =
              compiler::bufferShapes(spec, rows, cols);
          REQUIRE(signature->size() == expected.size());
          for (size_t i = 0; i < expected.size(); ++i) {
            INFO(printKernelSpec(spec)
                 << " " << rows << "x" << cols << " #" << i);
            CHECK((*signature)[i].shape[0] == expected[i].rows);
            CHECK((*signature)[i].shape[1] == expected[i].cols);
          }
        }
      }
}
