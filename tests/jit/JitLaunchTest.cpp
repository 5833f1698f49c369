//===- JitLaunchTest.cpp - Kernel::launch against a driver stub -----------===//
//
// Runs with LOWBIT_LIBCUDA pointing at tests/jit/CudaDriverStub.c (set by
// ctest) and nvJitLink disabled (PTX-only entries, which the stub reads):
// what Kernel::launch hands cuLaunchKernel, per stream, from two threads.
//
//===----------------------------------------------------------------------===//

#include "lowbit/Jit.h"
#include "runtime/jit/WorkspaceWords.h"
#include "tests/jit/CudaDriverStub.h"
#include "tests/jit/JitKvSupport.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <set>
#include <thread>

using namespace lowbit;

namespace {

/// Before anything loads the driver or nvJitLink (each once per process).
const bool environmentSet =
    lowbit::testing::useCudaDriverStub(LOWBIT_CUDA_STUB);

/// The stub's test hooks (CudaDriverStub.h).
struct Stub : StubDriver {
  Stub() {
    REQUIRE(environmentSet);
    REQUIRE(load(LOWBIT_CUDA_STUB));
  }
};

Target sm90a() {
  std::string error;
  std::optional<Target> target = parseTarget("sm_90a", &error);
  REQUIRE(target);
  return *target;
}

std::unique_ptr<Jit> memoryJit() {
  JitOptions options;
  options.cacheMode = runtime::CacheMode::Off;
  auto jit = Jit::create(options);
  REQUIRE(jit.ok());
  return std::move(jit).value();
}

/// Made-up, 256-byte aligned device addresses (the stub never reads them).
std::vector<uint64_t> fakeBuffers(const Kernel &kernel) {
  std::vector<uint64_t> buffers;
  for (size_t i = 0; i < kernel.bufferCount(); ++i)
    buffers.push_back(0x7000000 + 0x100000 * i);
  return buffers;
}

} // namespace

TEST_CASE("launch: two threads, two streams, one workspace each",
          "[launch][workspace]") {
  Stub stub;
  auto jit = memoryJit();
  // The per-tensor dynamic scheme: two kernels, the first reduces through
  // the workspace (docs/kernel-abi.md, "Workspace").
  auto kernel = jit->get("quantize fp8_e4m3 dynamic", sm90a());
  REQUIRE(kernel.ok());
  const int64_t words = kernel->workspaceWords();
  REQUIRE(words > 0);
  std::vector<uint64_t> buffers = fakeBuffers(*kernel);
  stub.reset();

  constexpr int kLaunches = 100;
  void *streams[2] = {reinterpret_cast<void *>(0x51),
                      reinterpret_cast<void *>(0x52)};
  std::atomic<int> ready{0};
  std::atomic<int> failures{0};
  auto worker = [&](void *stream) {
    ready.fetch_add(1);
    while (ready.load() < 2) {
    }
    for (int i = 0; i < kLaunches; ++i)
      if (!kernel->launch(stream, buffers, 64, 96 + 32 * (i % 3)).ok())
        failures.fetch_add(1);
  };
  std::thread a(worker, streams[0]), b(worker, streams[1]);
  a.join();
  b.join();
  CHECK(failures.load() == 0);

  long count = stub.count();
  REQUIRE(count >= 2 * kLaunches);
  REQUIRE(count <= 4096);
  std::map<void *, std::set<uint64_t>> workspaceOf;
  long withWorkspace = 0;
  for (long i = 0; i < count; ++i) {
    const LaunchRecord &record = *stub.at(i);
    REQUIRE(record.params % 7 == 0); // memrefs only
    for (long first = 0; first < record.params; first += 7) {
      const uint64_t *d = &record.values[first];
      // The workspace: a [1, WORDS] i32 row-major descriptor of memory the
      // runtime owns (no caller buffer is [1, WORDS]).
      if (d[3] != 1 || d[4] != uint64_t(words) ||
          std::find(buffers.begin(), buffers.end(), d[0]) != buffers.end())
        continue;
      CHECK(d[0] == d[1]);
      CHECK(d[2] == 0);
      CHECK(d[5] == uint64_t(words));
      CHECK(d[6] == 1);
      if (first + 7 == record.params)
        CHECK(record.trailingZero == 1); // all zero at the launch
      workspaceOf[record.stream].insert(d[0]);
      ++withWorkspace;
    }
  }
  CHECK(withWorkspace >= 2 * kLaunches); // the reduction launch of each
  REQUIRE(workspaceOf.size() == 2);
  REQUIRE(workspaceOf[streams[0]].size() == 1);
  REQUIRE(workspaceOf[streams[1]].size() == 1);
  // Never shared between the two streams.
  CHECK(*workspaceOf[streams[0]].begin() != *workspaceOf[streams[1]].begin());
}

TEST_CASE("launch: no workspace, no extra parameter", "[launch][workspace]") {
  Stub stub;
  auto jit = memoryJit();
  auto kernel = jit->get("quantize mxfp4 dynamic", sm90a());
  REQUIRE(kernel.ok());
  CHECK(kernel->workspaceWords() == 0);
  std::vector<uint64_t> buffers = fakeBuffers(*kernel);
  stub.reset();
  Status launched = kernel->launch(nullptr, buffers, 4, 64);
  INFO((launched.ok() ? "" : launched.error().message));
  REQUIRE(launched.ok());
  REQUIRE(stub.count() >= 1);
  const LaunchRecord &record = *stub.at(0);
  // The PTX's own parameters: the buffers' descriptors, first the input's.
  CHECK(record.trailingZero == -1);
  CHECK(record.values[0] == buffers[0]);
  CHECK(record.values[3] == 4);  // rows
  CHECK(record.values[4] == 64); // cols
  // A launch with the wrong number of buffers is refused before the driver.
  stub.reset();
  buffers.pop_back();
  CHECK_FALSE(kernel->launch(nullptr, buffers, 4, 64).ok());
  CHECK(stub.count() == 0);
}

TEST_CASE("launch: a fused kernel's buffers are sized by side",
          "[launch][fused]") {
  Stub stub;
  auto jit = memoryJit();
  // silu_mul reads [rows, 2 * cols]; add_rmsnorm reads a [rows, cols]
  // residual and a [1, cols] weight and writes the residual back.
  for (const char *text : {"silu_mul | quantize mxfp4 from=bf16",
                           "add_rmsnorm | quantize nvfp4 from=bf16"}) {
    auto kernel = jit->get(text, sm90a());
    INFO(text << ": " << (kernel.ok() ? "" : kernel.error().message));
    REQUIRE(kernel.ok());
    const int64_t rows = 8, cols = 64;
    auto signature = kernel->signature(rows, cols);
    REQUIRE(signature.ok());
    std::vector<uint64_t> buffers = fakeBuffers(*kernel);
    stub.reset();
    Status launched = kernel->launch(nullptr, buffers, rows, cols);
    INFO((launched.ok() ? "" : launched.error().message));
    REQUIRE(launched.ok());
    REQUIRE(stub.count() >= 1);
    // Every caller buffer the launch passes has the shape signature() gives.
    std::set<size_t> seen;
    for (long i = 0; i < stub.count(); ++i) {
      const LaunchRecord &record = *stub.at(i);
      for (long first = 0; first + 7 <= record.params; first += 7) {
        const uint64_t *d = &record.values[first];
        auto at = std::find(buffers.begin(), buffers.end(), d[0]);
        if (at == buffers.end())
          continue;
        size_t index = size_t(at - buffers.begin());
        INFO("buffer " << index);
        CHECK(int64_t(d[3]) == (*signature)[index].shape[0]);
        CHECK(int64_t(d[4]) == (*signature)[index].shape[1]);
        seen.insert(index);
      }
    }
    CHECK(seen.size() == buffers.size());
    CHECK((*signature)[0].shape[1] ==
          (std::string(text).starts_with("silu_mul") ? 2 * cols : cols));
  }
}
