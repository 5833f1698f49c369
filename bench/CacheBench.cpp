//===- CacheBench.cpp - Launch-path cost of the kernel cache --------------===//
//
// Prints the cost of what every launch pays (key computation, memory
// lookup) and of what a new process pays (disk hit, with its checksum) and
// a miss (a trivial compile plus the durable write). Numbers only; never a
// test.
//
//===----------------------------------------------------------------------===//

#include "runtime/cache/KernelCache.h"

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
using namespace lowbit::runtime;
using namespace lowbit::bench;

namespace {

std::shared_ptr<const PreparedSignature> signatureFor(int index) {
  KernelSignature signature;
  signature.spec = "quantize mxfp4 from=bf16 scale=dynamic dynamic #" +
                   std::to_string(index);
  signature.chip = "sm_90a";
  signature.features = "+ptx86";
  signature.inputDtype = "bf16";
  signature.pointerCount = 3;
  signature.llvmVersion = "22.1.8";
  signature.pipelineHash = 0xABCDEF;
  return *prepareSignature(signature);
}

} // namespace

int main() {
  std::string directory = (std::filesystem::temp_directory_path() /
                           ("lowbit-cache-bench-" + std::to_string(::getpid())))
                              .string();
  alignas(16) static char buffers[3][64];
  const void *pointers[] = {buffers[0], buffers[1], buffers[2]};

  // 64 kernels in memory, as a mid-size engine would have.
  KernelCache cache(CacheOptions{directory, CacheMode::ReadWrite});
  std::vector<std::shared_ptr<const PreparedSignature>> signatures;
  for (int index = 0; index < 64; ++index)
    signatures.push_back(signatureFor(index));
  size_t payloadBytes = 32 * 1024;
  auto compile = [&](const KernelKey &) -> Expected<CompiledKernel> {
    CompiledKernel kernel;
    kernel.kind = BinaryKind::Cubin;
    kernel.entryName = "lowbit_kernel";
    kernel.binary.assign(payloadBytes, '\x5a');
    return kernel;
  };
  std::vector<double> missMicros;
  for (auto &signature : signatures) {
    auto start = Clock::now();
    auto entry = cache.getOrCompile(
        makeKernelKey(signature, 4096, 7168, pointers), compile);
    missMicros.push_back(nanosSince(start) / 1000);
    if (!entry) {
      std::fprintf(stderr, "%s\n", entry.error().message.c_str());
      return 1;
    }
  }

  constexpr int kIterations = 1'000'000;
  // Key alone.
  auto start = Clock::now();
  uint64_t sink = 0;
  for (int iteration = 0; iteration < kIterations; ++iteration) {
    KernelKey key = makeKernelKey(signatures[size_t(iteration & 63)],
                                  4096 + iteration, 7168, pointers);
    sink += key.hash().low;
  }
  double keyNanos = nanosSince(start) / kIterations;

  // Key + memory lookup through getOrCompile (the launch path).
  start = Clock::now();
  for (int iteration = 0; iteration < kIterations; ++iteration) {
    auto entry =
        cache.getOrCompile(makeKernelKey(signatures[size_t(iteration & 63)],
                                         4096 + iteration, 7168, pointers),
                           compile);
    sink += entry.ok() ? (*entry)->kernel.binary.size() : 0;
  }
  double hitNanos = nanosSince(start) / kIterations;

  // Disk hit: a new cache (a new process) reading a 32 KiB cubin entry.
  std::vector<double> diskMicros;
  for (int round = 0; round < 200; ++round) {
    KernelCache fresh(CacheOptions{directory, CacheMode::ReadWrite});
    KernelKey key =
        makeKernelKey(signatures[size_t(round & 63)], 1, 1, pointers);
    auto begin = Clock::now();
    auto entry = fresh.getOrCompile(key, compile);
    diskMicros.push_back(nanosSince(begin) / 1000);
    if (!entry || (*entry)->origin != CacheEntry::Origin::Disk) {
      std::fprintf(stderr, "expected a disk hit\n");
      return 1;
    }
  }

  std::printf("kernel cache (%d kernels in memory, %zu KiB payloads, "
              "directory %s)\n",
              int(signatures.size()), payloadBytes / 1024, directory.c_str());
  std::printf("  key computation (makeKernelKey)        %8.1f ns\n", keyNanos);
  std::printf("  key + memory hit (getOrCompile)        %8.1f ns\n", hitNanos);
  std::printf("  disk hit, new cache (read + checksum)  %8.1f us (median)\n",
              median(diskMicros));
  std::printf("  miss: trivial compile + fsync'd write  %8.1f us (median)\n",
              median(missMicros));
  std::printf("  (checksum sink %llu)\n", (unsigned long long)(sink & 1));
  std::error_code ignored;
  std::filesystem::remove_all(directory, ignored);
  return 0;
}
