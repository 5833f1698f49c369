//===- FusionCheck.h - Fused kernels vs the reference -----------*- C++ -*-===//
//
// The bit-exact check of a fused quantize kernel (prologue | quantize)
// against format/Prologue.h followed by format/Quantize.h, for any backend
// that runs a spec over host buffers.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TESTS_FUSION_FUSIONCHECK_H
#define LOWBIT_TESTS_FUSION_FUSIONCHECK_H

#include "tests/compiler/BackendCheck.h"

namespace lowbit::testing {

/// Runs `spec` (a quantize with prologues) for a [rows, cols] result with
/// seeded inputs and side tensors; "" or the first mismatch (codes, scales,
/// zero points, global scale, updated residual).
std::string checkFused(const KernelSpec &spec, int64_t rows, int64_t cols,
                       uint32_t seed, const KernelRunner &run);

} // namespace lowbit::testing

#endif // LOWBIT_TESTS_FUSION_FUSIONCHECK_H
