//===- MatmulTestData.h - Weight schemes and data for the matmul tests ----===//
//
// The weight schemes of issue 27 (item 2) plus a user scheme, and seeded
// weight-like matrices with outliers and normal activations, shared by the
// reference, the CPU-tail and the bound tests.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TESTS_MATMUL_MATMULTESTDATA_H
#define LOWBIT_TESTS_MATMUL_MATMULTESTDATA_H

#include "format/Codec.h"
#include "format/Quantize.h"
#include "format/SchemeText.h"
#include "matmul/MatmulSpec.h"
#include "tools/lowbit/SyntheticData.h"

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace lowbit::matmul::test {

struct WeightSchemeCase {
  const char *label;
  const char *text; ///< a named scheme or the compact form
};

/// Every weight scheme of issue 27 item 2, and a user scheme.
inline const std::vector<WeightSchemeCase> &weightSchemeCases() {
  static const std::vector<WeightSchemeCase> cases = {
      {"int4_g128 asym", "int4_g128"},
      {"int4_g128 sym",
       "scheme(format=int4,scale=group(128;axis=1),tail=true,type=f16,"
       "rule=absmax,packing=nibble)"},
      {"int8 per channel", "scheme(format=int8,scale=per_channel(axis=0))"},
      {"int8_g64", "int8_g64"},
      {"fp8_e4m3 per tensor", "fp8_e4m3"},
      {"fp8_e4m3 per channel", "scheme(format=e4m3,scale=per_token)"},
      {"mxfp8", "mxfp8"},
      {"mxfp6_e2m3", "mxfp6_e2m3"},
      {"mxfp6_e3m2", "mxfp6_e3m2"},
      {"mxfp4", "mxfp4"},
      {"nvfp4 decode", "nvfp4"},
      {"nvfp4 encode",
       "scheme(format=e2m1,scale=group(16;axis=1),tail=true,type=ue4m3,"
       "rule=absmax,global=encode,packing=nibble)"},
      {"user e3m2 g48 bf16",
       "scheme(format=e3m2,scale=group(48;axis=1),tail=true,type=bf16,"
       "rule=absmax)"},
  };
  return cases;
}

inline Scheme schemeOf(const WeightSchemeCase &weightCase) {
  std::string error;
  std::optional<Scheme> scheme = parseSchemeText(weightCase.text, &error);
  if (!scheme)
    throw std::runtime_error(weightCase.text + (": " + error));
  return *scheme;
}

/// A weight-like [n, k] matrix: N(0, 0.02) per element, each row with its
/// own magnitude, and a few outlier input channels 30x larger.
inline std::vector<float> weightLikeMatrix(int64_t n, int64_t k,
                                           uint64_t seed) {
  cli::Generator generator(seed);
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
inline std::vector<uint8_t> normalActivations(MatmulDtype dtype, int64_t m,
                                              int64_t k, uint64_t seed) {
  cli::Generator generator(seed);
  std::vector<uint8_t> bytes(size_t(m * k * matmulDtypeBytes(dtype)));
  for (int64_t index = 0; index < m * k; ++index) {
    float value = float(generator.normal());
    if (dtype == MatmulDtype::F32) {
      std::memcpy(&bytes[size_t(index * 4)], &value, 4);
    } else {
      uint16_t bits = dtype == MatmulDtype::F16 ? floatToHalf(value)
                                                : floatToBFloat16(value);
      std::memcpy(&bytes[size_t(index * 2)], &bits, 2);
    }
  }
  return bytes;
}

inline std::vector<float> biasVector(int64_t n, uint64_t seed) {
  cli::Generator generator(seed);
  std::vector<float> bias(static_cast<size_t>(n));
  for (float &value : bias)
    value = float(generator.normal() * 0.1);
  return bias;
}

} // namespace lowbit::matmul::test

#endif // LOWBIT_TESTS_MATMUL_MATMULTESTDATA_H
