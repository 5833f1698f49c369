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

#include <cstddef>
#include <iterator>

namespace lowbit::testing {

/// The prologues every fused-kernel test runs, and whether the kernel
/// takes dynamic shapes (Hadamard needs static columns).
struct PrologueCase {
  const char *text;
  bool dynamicShapes;
};
inline constexpr PrologueCase kPrologueCases[] = {
    {"rmsnorm(eps=1e-6)", true},
    {"add_rmsnorm(eps=1e-5)", true},
    {"silu_mul", true},
    {"smooth", true},
    {"hadamard(16)", false},
    {"map(silu(x) * 0.5 + abs(x) / 3 - max(x, -1))", true},
};

/// The input dtypes of the fused-kernel tests.
inline constexpr const char *kFusedDtypes[] = {"f32", "f16", "bf16"};

/// Whether a test takes kPrologueCases[prologue] x namedSchemes()[scheme] x
/// kFusedDtypes[dtype]. The default run takes every prologue x scheme pair
/// once, its dtype rotating, so every prologue and every scheme also meets
/// every dtype (docs/testing.md); `everyCase` (the `sweep` label) takes the
/// whole cross product.
inline bool takesFusedCase(size_t prologue, size_t scheme, size_t dtype,
                           bool everyCase) {
  return everyCase || (prologue + scheme) % std::size(kFusedDtypes) == dtype;
}

/// Runs `spec` (a quantize with prologues) for a [rows, cols] result with
/// seeded inputs and side tensors; "" or the first mismatch (codes, scales,
/// zero points, global scale, updated residual).
std::string checkFused(const KernelSpec &spec, int64_t rows, int64_t cols,
                       uint32_t seed, const KernelRunner &run);

} // namespace lowbit::testing

#endif // LOWBIT_TESTS_FUSION_FUSIONCHECK_H
