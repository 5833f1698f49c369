//===- SyntheticData.h - Portable seeded data for eval and demo -*- C++ -*-===//
//
// splitmix64 and Box-Muller in double: the same numbers on every machine
// and standard library (std::normal_distribution is not specified bit for
// bit), so `lowbit eval`'s tables can be checked by a lit test.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TOOLS_LOWBIT_SYNTHETICDATA_H
#define LOWBIT_TOOLS_LOWBIT_SYNTHETICDATA_H

#include <cmath>
#include <cstdint>
#include <numbers>

namespace lowbit::cli {

class Generator {
public:
  explicit Generator(uint64_t seed) : state(seed) {}
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in (0, 1].
  double uniform() { return (double(next() >> 11) + 1.0) * 0x1p-53; }
  double normal() {
    double radius = std::sqrt(-2.0 * std::log(uniform()));
    return radius * std::cos(2.0 * std::numbers::pi * uniform());
  }
  double studentT3() {
    double z = normal(), a = normal(), b = normal(), c = normal();
    return z / std::sqrt((a * a + b * b + c * c) / 3.0);
  }

private:
  uint64_t state;
};

} // namespace lowbit::cli

#endif // LOWBIT_TOOLS_LOWBIT_SYNTHETICDATA_H
