//===- MatmulTestData.h - Weight schemes and data for the matmul tests ----===//
//
// The weight schemes (matmul/WeightSchemes.h), and seeded weight-like
// matrices with outliers and normal activations, shared by the reference,
// the CPU-tail and the bound tests.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TESTS_MATMUL_MATMULTESTDATA_H
#define LOWBIT_TESTS_MATMUL_MATMULTESTDATA_H

#include "format/Quantize.h"
#include "format/SchemeText.h"
#include "matmul/MatmulSpec.h"
#include "matmul/WeightSchemes.h"
#include "tools/lowbit/MatmulData.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace lowbit::matmul::test {

using WeightSchemeCase = WeightSchemeEntry;

/// Every weight scheme of issue 27 item 2, and a user scheme.
inline const std::vector<WeightSchemeCase> &weightSchemeCases() {
  return weightSchemeEntries();
}

inline Scheme schemeOf(const WeightSchemeCase &weightCase) {
  std::string error;
  std::optional<Scheme> scheme = parseSchemeText(weightCase.text, &error);
  if (!scheme)
    throw std::runtime_error(weightCase.text + (": " + error));
  return *scheme;
}

using cli::biasVector;
using cli::normalActivations;
using cli::weightLikeMatrix;

} // namespace lowbit::matmul::test

#endif // LOWBIT_TESTS_MATMUL_MATMULTESTDATA_H
