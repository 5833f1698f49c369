//===- JitKvLaunchConcurrencyTest.cpp - KvKernel::launch: no allocation,
// many threads -===//
//
// KvKernel::launch against the driver stub: once a kernel's module is
// loaded and its stream's workspace made, a launch allocates nothing (this
// binary counts operator new per thread), and one KvKernel launched from
// several threads at once hands cuLaunchKernel, for each thread's launch,
// exactly what that thread's launch alone does. Runs in
// lowbit-jit-launch-tests' process (the stub as libcuda, no nvJitLink).
//
//===----------------------------------------------------------------------===//

#include "lowbit/Jit.h"

#include "tests/jit/CudaDriverStub.h"
#include "tests/jit/JitKvSupport.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <new>
#include <thread>
#include <vector>

namespace {
/// operator new calls made by this thread while `countAllocations` is set.
thread_local bool countAllocations = false;
thread_local long allocations = 0;
} // namespace

// Every unaligned form is replaced, so that each allocation is counted and
// each pair is malloc/free. Replacing only some is enough for libstdc++
// (its defaults call these), not under ASan, whose runtime supplies the
// others: Catch2's `new (std::nothrow)` went to ASan's allocator and came
// back through this file's delete, an alloc-dealloc-mismatch (found by the
// sanitizer build; "counts every form" below checks it).
namespace {
void *countedAllocate(std::size_t size) noexcept {
  if (countAllocations)
    ++allocations;
  return std::malloc(size ? size : 1);
}
} // namespace

void *operator new(std::size_t size) {
  if (void *memory = countedAllocate(size))
    return memory;
  throw std::bad_alloc();
}
void *operator new[](std::size_t size) { return ::operator new(size); }
void *operator new(std::size_t size, const std::nothrow_t &) noexcept {
  return countedAllocate(size);
}
void *operator new[](std::size_t size, const std::nothrow_t &) noexcept {
  return countedAllocate(size);
}
void operator delete(void *memory) noexcept { std::free(memory); }
void operator delete[](void *memory) noexcept { std::free(memory); }
void operator delete(void *memory, std::size_t) noexcept { std::free(memory); }
void operator delete[](void *memory, std::size_t) noexcept {
  std::free(memory);
}
void operator delete(void *memory, const std::nothrow_t &) noexcept {
  std::free(memory);
}
void operator delete[](void *memory, const std::nothrow_t &) noexcept {
  std::free(memory);
}

using namespace lowbit;

namespace {

const bool environmentSet = testing::useCudaDriverStub(LOWBIT_CUDA_STUB);

/// One made-up device buffer per parameter, at addresses that differ per
/// `caller`; every call-fixed size from one table.
std::vector<KvTensor> fakeTensors(const KvKernel &kernel, uint64_t caller) {
  return testing::fakeKvTensors(kernel,
                                {{"batch", 2},
                                 {"new_tokens", 3},
                                 {"cache_tokens", 40},
                                 {"pages", 3},
                                 {"max_blocks", 3},
                                 {"group_rows", 5},
                                 {"splits", 3},
                                 {"query_rows", 8},
                                 {"cache_rows", 160},
                                 {"partial_rows", 8}},
                                uintptr_t(0x10000000 * (caller + 1)));
}

Target sm90a() {
  std::string error;
  std::optional<Target> target = parseTarget("sm_90a", &error);
  REQUIRE(target);
  return *target;
}

const char *const kSpecs[] = {
    "kv_append kv_int8_g32 heads=2 head_dim=64",
    "kv_attend kv_fp8_e4m3 layout=paged q_heads=4 kv_heads=2 head_dim=64",
    "kivi_append kv_kivi_int4 group=8 residual=16 per_channel heads=2 "
    "head_dim=40",
    "kivi_attend kv_kivi_int4 group=8 residual=16 keys=per_channel "
    "q_heads=4 kv_heads=2 head_dim=40 split=16"};

} // namespace

TEST_CASE("launch: the allocation counter counts every form", "[launch]") {
  // Called directly: a new-expression's allocation may be elided.
  allocations = 0;
  countAllocations = true;
  void *scalar = ::operator new(8);
  void *array = ::operator new[](32);
  void *scalarNothrow = ::operator new(8, std::nothrow);
  void *arrayNothrow = ::operator new[](32, std::nothrow);
  countAllocations = false;
  CHECK(allocations == 4);
  ::operator delete(scalar);
  ::operator delete[](array);
  ::operator delete(scalarNothrow, std::nothrow);
  ::operator delete[](arrayNothrow, std::nothrow);
}

TEST_CASE("launch: a KV launch allocates nothing", "[launch][kv]") {
  REQUIRE(environmentSet);
  auto jit = testing::uncachedJit();
  REQUIRE(jit.ok());
  void *stream = reinterpret_cast<void *>(0x61);
  for (const char *spec : kSpecs) {
    INFO(spec);
    auto kernel = (*jit)->getKv(spec, sm90a());
    INFO((kernel.ok() ? std::string() : kernel.error().message));
    REQUIRE(kernel.ok());
    std::vector<KvTensor> tensors = fakeTensors(*kernel, 0);
    // The first launch loads the module (and makes the workspace).
    Status first = kernel->launch(stream, tensors);
    INFO((first.ok() ? std::string() : first.error().message));
    REQUIRE(first.ok());
    allocations = 0;
    countAllocations = true;
    bool launched = true;
    for (int i = 0; i < 100; ++i)
      launched = kernel->launch(stream, tensors).ok() && launched;
    countAllocations = false;
    CHECK(launched);
    CHECK(allocations == 0);
  }
}

TEST_CASE("launch: one KvKernel launched from several threads at once",
          "[launch][kv]") {
  REQUIRE(environmentSet);
  StubDriver stub;
  REQUIRE(stub.load(LOWBIT_CUDA_STUB));
  auto jit = testing::uncachedJit();
  REQUIRE(jit.ok());
  for (const char *spec : kSpecs) {
    INFO(spec);
    auto kernel = (*jit)->getKv(spec, sm90a());
    REQUIRE(kernel.ok());
    constexpr int kThreads = 4, kLaunches = 100;
    // Each thread's launch alone: what the stub records for it.
    std::vector<std::vector<LaunchRecord>> alone(kThreads);
    std::vector<std::vector<KvTensor>> tensors(kThreads);
    for (int t = 0; t < kThreads; ++t) {
      tensors[t] = fakeTensors(*kernel, uint64_t(t));
      stub.reset();
      REQUIRE(kernel
                  ->launch(reinterpret_cast<void *>(uintptr_t(0x70 + t)),
                           tensors[t])
                  .ok());
      for (long r = 0; r < stub.count(); ++r)
        alone[t].push_back(*stub.at(r));
      REQUIRE_FALSE(alone[t].empty());
    }
    stub.reset();
    std::vector<int> failures(kThreads, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        void *stream = reinterpret_cast<void *>(uintptr_t(0x70 + t));
        for (int i = 0; i < kLaunches; ++i)
          failures[t] += !kernel->launch(stream, tensors[t]).ok();
      });
    for (std::thread &thread : threads)
      thread.join();
    CHECK(failures == std::vector<int>(kThreads, 0));
    REQUIRE(stub.count() == long(kThreads * kLaunches * alone[0].size()));
    // Per stream, the records come back in its thread's launch order, each
    // the same as that thread's launch alone.
    std::vector<size_t> next(kThreads, 0);
    long mismatches = 0;
    for (long r = 0; r < stub.count(); ++r) {
      const LaunchRecord &record = *stub.at(r);
      auto t = size_t(uintptr_t(record.stream) - 0x70);
      REQUIRE(t < size_t(kThreads));
      const LaunchRecord &expected = alone[t][next[t]++ % alone[t].size()];
      bool same =
          record.params == expected.params && record.shared == expected.shared;
      for (int i = 0; i < 3; ++i)
        same = same && record.grid[i] == expected.grid[i] &&
               record.block[i] == expected.block[i];
      for (int i = 0; i < record.params && same; ++i)
        same = record.values[i] == expected.values[i];
      mismatches += !same;
    }
    CHECK(mismatches == 0);
  }
}
