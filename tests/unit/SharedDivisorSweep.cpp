//===- SharedDivisorSweep.cpp - sharedQuotient, every divisor mantissa ----===//
//
// Long test (ctest label "sweep"): the windows of SharedDivisorWindows.h for
// all 2^23 divisor mantissas, on every core. Exits 1 on any mismatch and
// prints the first few.
//
//===----------------------------------------------------------------------===//

#include "SharedDivisorWindows.h"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

int main() {
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::atomic<uint64_t> checks{0}, mismatches{0};
  std::mutex printing;
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      checks += lowbit::test::checkQuotientWindows(
          t, threads, lowbit::sharedQuotient, [&](float x, float d) {
            if (mismatches++ < 10) {
              std::lock_guard<std::mutex> lock(printing);
              std::printf("mismatch: x = %a, d = %a\n", double(x), double(d));
            }
          });
    });
  for (std::thread &worker : workers)
    worker.join();
  std::printf("shared quotient: %llu checks, %llu mismatches\n",
              (unsigned long long)checks.load(),
              (unsigned long long)mismatches.load());
  return mismatches == 0 ? 0 : 1;
}
