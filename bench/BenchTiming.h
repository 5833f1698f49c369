//===- BenchTiming.h - Timing helpers the benchmarks share ------*- C++ -*-===//

#ifndef LOWBIT_BENCH_BENCHTIMING_H
#define LOWBIT_BENCH_BENCHTIMING_H

#include <algorithm>
#include <chrono>
#include <vector>

namespace lowbit::bench {

using Clock = std::chrono::steady_clock;

inline double millisSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start)
      .count();
}

inline double nanosSince(Clock::time_point start) {
  return std::chrono::duration<double, std::nano>(Clock::now() - start)
      .count();
}

/// The upper median: robust to the outliers a shared machine produces.
inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0 : values[values.size() / 2];
}

} // namespace lowbit::bench

#endif // LOWBIT_BENCH_BENCHTIMING_H
