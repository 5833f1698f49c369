//===- MatmulData.h - Seeded weights and activations for matmuls -*- C++ -*-===//
//
// Weight-like matrices with outlier input channels, normal activations and
// a bias, from lowbit's portable generator (SyntheticData.h): the same
// numbers on every machine, for `lowbit eval --matmul`, `lowbit demo` and
// the matmul tests.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TOOLS_LOWBIT_MATMULDATA_H
#define LOWBIT_TOOLS_LOWBIT_MATMULDATA_H

#include "format/Codec.h"
#include "matmul/MatmulSpec.h"
#include "tools/lowbit/SyntheticData.h"

#include <cstring>
#include <vector>

namespace lowbit::cli {

/// A weight-like [n, k] matrix: N(0, 0.02) per element, each row with its
/// own magnitude, and a few outlier input channels 30x larger.
inline std::vector<float> weightLikeMatrix(int64_t n, int64_t k,
                                           uint64_t seed) {
  Generator generator(seed);
  std::vector<float> values(size_t(n * k));
  for (int64_t row = 0; row < n; ++row) {
    double rowScale = 0.02 * (0.5 + generator.uniform());
    for (int64_t col = 0; col < k; ++col) {
      double outlier = col % 37 == 5 ? 30.0 : 1.0;
      values[size_t(row * k + col)] =
          float(generator.normal() * rowScale * outlier);
    }
  }
  return values;
}

/// Normal activations [m, k] as bytes of `dtype` (rounded RNE).
inline std::vector<uint8_t> normalActivations(ValueType dtype, int64_t m,
                                              int64_t k, uint64_t seed) {
  Generator generator(seed);
  std::vector<uint8_t> bytes(size_t(m * k * valueTypeBytes(dtype)));
  for (int64_t index = 0; index < m * k; ++index) {
    float value = float(generator.normal());
    if (dtype == ValueType::F32) {
      std::memcpy(&bytes[size_t(index * 4)], &value, 4);
    } else {
      uint16_t bits =
          dtype == ValueType::F16 ? floatToHalf(value) : floatToBFloat16(value);
      std::memcpy(&bytes[size_t(index * 2)], &bits, 2);
    }
  }
  return bytes;
}

/// Activations [m, k] with outlier channels, as bytes of `dtype`: normal,
/// and every 37th channel (from 3) 20x larger, as LLM activations have
/// (the case rotation and smoothing are for).
inline std::vector<uint8_t> outlierActivations(ValueType dtype, int64_t m,
                                               int64_t k, uint64_t seed) {
  Generator generator(seed);
  std::vector<uint8_t> bytes(size_t(m * k * valueTypeBytes(dtype)));
  for (int64_t index = 0; index < m * k; ++index) {
    float value = float(generator.normal() * (index % k % 37 == 3 ? 20 : 1));
    if (dtype == ValueType::F32) {
      std::memcpy(&bytes[size_t(index * 4)], &value, 4);
    } else {
      uint16_t bits =
          dtype == ValueType::F16 ? floatToHalf(value) : floatToBFloat16(value);
      std::memcpy(&bytes[size_t(index * 2)], &bits, 2);
    }
  }
  return bytes;
}

inline std::vector<float> biasVector(int64_t n, uint64_t seed) {
  Generator generator(seed);
  std::vector<float> bias(static_cast<size_t>(n));
  for (float &value : bias)
    value = float(generator.normal() * 0.1);
  return bias;
}

} // namespace lowbit::cli

#endif // LOWBIT_TOOLS_LOWBIT_MATMULDATA_H
