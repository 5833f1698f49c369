//===- CodecThroughput.cpp - f32 -> format conversion rate on one core ----===//
//
// Prints values/s of lowbit's fast path for each named format, next to
// NVIDIA's own host conversions (cuda_fp8.h / cuda_fp6.h / cuda_fp4.h) run on
// the same data in the same process: the machine is shared and noisy, so
// the ratio is the figure to quote. Never fails on timing.
//
//===----------------------------------------------------------------------===//

#include "format/Codec.h"

#include <cuda_fp4.h>
#include <cuda_fp6.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

/// Best of `repeats` timings of `body`, in seconds: the minimum is the
/// least disturbed by other load on a shared machine.
double bestSeconds(int repeats, const std::function<void()> &body) {
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    auto start = Clock::now();
    body();
    best = std::min(best,
                    std::chrono::duration<double>(Clock::now() - start).count());
  }
  return best;
}

/// Activation-like data: normal values with a spread of magnitudes.
std::vector<float> makeInput(size_t count) {
  std::mt19937_64 rng(42);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-12, 8);
  std::vector<float> input(count);
  for (float &value : input)
    value = std::ldexp(normal(rng), exponent(rng));
  return input;
}

using NvidiaConvert = uint8_t (*)(float);

uint8_t nvE4m3(float x) {
  return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
}
uint8_t nvE5m2(float x) {
  return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2);
}
uint8_t nvE2m3(float x) {
  return __nv_cvt_float_to_fp6(x, __NV_E2M3, cudaRoundNearest);
}
uint8_t nvE3m2(float x) {
  return __nv_cvt_float_to_fp6(x, __NV_E3M2, cudaRoundNearest);
}
uint8_t nvE2m1(float x) {
  return __nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest);
}
uint8_t nvE8m0(float x) {
  return __nv_cvt_float_to_e8m0(x, __NV_SATFINITE, cudaRoundZero);
}

struct Row {
  const char *format;
  lowbit::Rounding rounding;
  NvidiaConvert nvidia;
};

} // namespace

int main() {
  const size_t count = size_t(1) << 24;
  const int repeats = 5;
  std::vector<float> input = makeInput(count);
  std::vector<uint8_t> codes(count), nvidiaCodes(count);
  const Row rows[] = {
      {"e4m3", lowbit::Rounding::NearestEven, nvE4m3},
      {"e5m2", lowbit::Rounding::NearestEven, nvE5m2},
      {"e2m3", lowbit::Rounding::NearestEven, nvE2m3},
      {"e3m2", lowbit::Rounding::NearestEven, nvE3m2},
      {"e2m1", lowbit::Rounding::NearestEven, nvE2m1},
      {"e8m0", lowbit::Rounding::TowardZero, nvE8m0},
      {"int8", lowbit::Rounding::NearestEven, nullptr},
  };
  std::printf("f32 -> format, %zu values, best of %d, one thread\n", count,
              repeats);
  std::printf("%-6s %14s %16s %8s %10s\n", "format", "lowbit Mval/s",
              "NVIDIA host Mval/s", "ratio", "same bits");
  for (const Row &row : rows) {
    lowbit::Codec codec(*lowbit::lookupFormat(row.format),
                        {/*saturate=*/true, row.rounding});
    double ours = bestSeconds(
        repeats, [&] { codec.encode(input.data(), codes.data(), count); });
    double oursRate = count / ours / 1e6;
    if (!row.nvidia) {
      std::printf("%-6s %14.0f %16s %8s %10s\n", row.format, oursRate, "-",
                  "-", "-");
      continue;
    }
    double theirs = bestSeconds(repeats, [&] {
      for (size_t i = 0; i < count; ++i)
        nvidiaCodes[i] = row.nvidia(input[i]);
    });
    bool same = codes == nvidiaCodes;
    std::printf("%-6s %14.0f %16.0f %7.1fx %10s\n", row.format, oursRate,
                count / theirs / 1e6, theirs / ours, same ? "yes" : "NO");
  }
  return 0;
}
