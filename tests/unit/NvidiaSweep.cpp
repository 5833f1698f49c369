//===- NvidiaSweep.cpp - every f32 input vs NVIDIA's conversions ----------===//
//
// The long sweep (ctest label "sweep"): all 2^32 f32 bit patterns through
// every conversion NVIDIA's headers define, compared with lowbit's fast path.
// Prints one line per conversion; exits non-zero on any mismatch.
//
//===----------------------------------------------------------------------===//

#include "NvidiaConversions.h"

#include "format/Codec.h"

#include <chrono>
#include <cstdio>
#include <vector>

using namespace lowbit;
using namespace lowbit::test;

int main() {
  uint64_t totalFailed = 0;
  const uint32_t chunk = 1u << 20;
  std::vector<float> input(chunk);
  std::vector<uint8_t> codes(chunk);
  for (const NvidiaCase &nvCase : nvidiaCases()) {
    auto start = std::chrono::steady_clock::now();
    Codec codec(*lookupFormat(nvCase.format), nvCase.options);
    uint64_t failed = 0;
    for (uint64_t base = 0; base < (uint64_t(1) << 32); base += chunk) {
      for (uint32_t i = 0; i < chunk; ++i)
        input[i] = bitsToFloat(uint32_t(base + i));
      codec.encode(input.data(), codes.data(), chunk);
      for (uint32_t i = 0; i < chunk; ++i) {
        uint32_t expected = nvCase.convert(input[i]);
        if (codes[i] == expected)
          continue;
        if (failed++ < 5)
          std::printf("  %s: input 0x%08x: NVIDIA 0x%02x, lowbit 0x%02x\n",
                      nvCase.label, uint32_t(base + i), expected, codes[i]);
      }
    }
    double seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start)
                         .count();
    std::printf("sweep: %s: 4294967296 f32 inputs, %llu mismatches, %.0f s\n",
                nvCase.label, (unsigned long long)failed, seconds);
    totalFailed += failed;
  }
  return totalFailed == 0 ? 0 : 1;
}
