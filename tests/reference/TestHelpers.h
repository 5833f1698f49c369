//===- TestHelpers.h - Shared helpers of the reference tests ----*- C++ -*-===//

#ifndef LOWBIT_TESTS_REFERENCE_TESTHELPERS_H
#define LOWBIT_TESTS_REFERENCE_TESTHELPERS_H

#include "format/Codec.h"
#include "format/Quantize.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace lowbit::test {

inline Scheme named(const char *name) {
  std::optional<Scheme> scheme = lookupScheme(name);
  REQUIRE(scheme);
  return *scheme;
}

inline QuantizedTensor quantizeOrFail(const Scheme &scheme,
                                      const std::vector<float> &data,
                                      int64_t rows, int64_t cols,
                                      const StaticScales &given = {}) {
  std::string error;
  std::optional<QuantizedTensor> tensor =
      quantize(scheme, data, rows, cols, given, &error);
  INFO(error);
  REQUIRE(tensor);
  return std::move(*tensor);
}

inline std::vector<float> dequantizeOrFail(const QuantizedTensor &tensor) {
  std::string error;
  std::optional<std::vector<float>> values = dequantize(tensor, &error);
  INFO(error);
  REQUIRE(values);
  return std::move(*values);
}

inline float scaleAt(const QuantizedTensor &tensor, int64_t row, int64_t col) {
  int64_t index =
      scaleIndexOf(tensor.scheme, tensor.rows, tensor.cols, row, col);
  return decodeScale(tensor.scheme.scale.type,
                     tensor.scaleCodes[size_t(index)]);
}

/// A deterministic pseudo-random generator (splitmix64), so failures
/// reproduce.
class Random {
public:
  explicit Random(uint64_t seed) : state(seed) {}
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [-1, 1).
  float uniform() { return float(double(next() >> 11) * 0x1p-52 - 1.0); }

private:
  uint64_t state;
};

/// Values spread over several binades, with varying per-row magnitude.
inline std::vector<float> randomData(int64_t rows, int64_t cols,
                                     uint64_t seed) {
  Random random(seed);
  std::vector<float> data(size_t(rows * cols));
  for (int64_t row = 0; row < rows; ++row) {
    float rowScale = std::ldexp(1.0f, int(row % 7) - 3);
    for (int64_t col = 0; col < cols; ++col)
      data[size_t(row * cols + col)] = rowScale * random.uniform() *
                                       std::ldexp(1.0f, int(random.next() % 5));
  }
  return data;
}

} // namespace lowbit::test

#endif // LOWBIT_TESTS_REFERENCE_TESTHELPERS_H
