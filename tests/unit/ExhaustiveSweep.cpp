//===- ExhaustiveSweep.cpp - Every f32 input, fast path vs oracle ---------===//
//
// Long test (ctest label "sweep", skipped by the default run): encodes all
// 2^32 f32 bit patterns with lowbit's Codec (array path; every 61st input
// also through the scalar lowbit::encode) and with the reference oracle,
// and compares the codes. Usage:
//   lowbit-sweep [format[:sat|:nonsat] ...]    (default: every named format,
//                                               both modes where they differ)
// Exits 1 on any mismatch and prints the first few.
//
//===----------------------------------------------------------------------===//

#include "Oracle.h"
#include "VectorCheck.h"

#include "format/Codec.h"
#include "format/Format.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <thread>
#include <vector>

namespace {

struct Job {
  std::string name;
  bool saturate;
};

uint64_t sweep(const Job &job) {
  std::optional<lowbit::Format> format = lowbit::lookupFormat(job.name);
  if (!format) {
    std::cerr << "unknown format " << job.name << "\n";
    return 1;
  }
  oracle::Oracle oracle(testvectors::specFromParams(*format));
  lowbit::EncodeOptions options;
  options.saturate = job.saturate;
  lowbit::Codec codec(*format, options);

  constexpr uint64_t kChunk = 1 << 20;
  constexpr uint64_t kChunks = (uint64_t(1) << 32) / kChunk;
  std::atomic<uint64_t> nextChunk{0}, mismatches{0};
  std::mutex printMutex;
  int printed = 0;
  auto worker = [&] {
    std::vector<float> inputs(kChunk);
    std::vector<uint16_t> codes(kChunk);
    for (uint64_t chunk; (chunk = nextChunk++) < kChunks;) {
      for (uint64_t i = 0; i < kChunk; ++i)
        inputs[i] = testvectors::toFloat(uint32_t(chunk * kChunk + i));
      codec.encode(inputs.data(), codes.data(), kChunk);
      for (uint64_t i = 0; i < kChunk; ++i) {
        uint32_t want = oracle.encode(inputs[i], job.saturate);
        uint32_t got = codes[i];
        if (i % 61 == 0 && got == want)
          got = lowbit::encode(*format, inputs[i], options);
        if (got == want)
          continue;
        ++mismatches;
        std::lock_guard<std::mutex> lock(printMutex);
        if (printed++ < 10)
          std::printf("  mismatch: %s %s input 0x%08x (%.9g): expected 0x%x, "
                      "got 0x%x\n",
                      job.name.c_str(), job.saturate ? "sat" : "nonsat",
                      unsigned(chunk * kChunk + i), double(inputs[i]), want,
                      got);
      }
    }
  };
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back(worker);
  for (std::thread &thread : pool)
    thread.join();
  return mismatches;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<Job> jobs;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    size_t colon = arg.find(':');
    std::string name = arg.substr(0, colon);
    std::string mode = colon == std::string::npos ? "" : arg.substr(colon + 1);
    std::optional<lowbit::Format> format = lowbit::lookupFormat(name);
    bool bothModes = format && format->isFloat() &&
                     (format->hasInf() || format->hasNan());
    if (mode != "nonsat")
      jobs.push_back({name, true});
    if (mode == "nonsat" || (mode.empty() && bothModes))
      jobs.push_back({name, false});
  }
  if (jobs.empty())
    for (const lowbit::Format &format : lowbit::namedFormats()) {
      jobs.push_back({format.name(), true});
      if (format.isFloat() && (format.hasInf() || format.hasNan()))
        jobs.push_back({format.name(), false});
    }

  uint64_t total = 0;
  for (const Job &job : jobs) {
    auto start = std::chrono::steady_clock::now();
    uint64_t mismatches = sweep(job);
    double seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start)
                         .count();
    std::printf("vectors: %s f32-exhaustive %s 4294967296 checked, %llu "
                "mismatches (%.1f s)\n",
                job.name.c_str(), job.saturate ? "sat" : "nonsat",
                (unsigned long long)mismatches, seconds);
    std::fflush(stdout);
    total += mismatches;
  }
  return total == 0 ? 0 : 1;
}
