//===- MatmulSignature.h - The matmul kernel's parameter list ---*- C++ -*-===//
//
// The kernel ABI of lowbit.matmul (docs/matmul.md), written once and
// MLIR-free: the compiler builds its @kernel function from it, the CPU
// kernel, the JIT and the CLI check and size their buffers with it. Every
// parameter is a 2-D row-major buffer, in this order:
//
//   x       [M, K]                      f32 | f16 | bf16 (from=)
//   codes   codesShape(scheme, N, K)    i8 (bytes, nibbles packed)
//   scales  scaleShape(scheme, N, K)    the scale type's storage: f32,
//                                       f16, bf16, or i8 (e8m0, ue4m3)
//   zeros   scaleShape(scheme, N, K)    i8 (schemes with a zero point)
//   global  [1, 1]                      f32 (schemes with a global scale)
//   bias    [1, N]                      f32 (specs with a bias)
//   y       [M, N]                      f32 | f16 | bf16 (to=; written)
//
// codes, scales, zeros and global are exactly the scheme's dequantize
// kernel's buffers for an [N, K] tensor.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_COMPILER_MATMULSIGNATURE_H
#define LOWBIT_RUNTIME_COMPILER_MATMULSIGNATURE_H

#include "matmul/MatmulSpec.h"
#include "runtime/compiler/KvKernelSignature.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lowbit::compiler {

/// The sizes a call fixes (M always; N and K where the spec is dynamic).
struct MatmulSizes {
  int64_t m = 0, n = 0, k = 0;
};

/// The parameters in ABI order (above).
std::vector<KvKernelParam> matmulParams(const matmul::MatmulSpec &spec);

/// Every parameter's [rows, cols] for `sizes`, in ABI order.
std::vector<std::array<int64_t, 2>>
matmulShapes(const matmul::MatmulSpec &spec, const MatmulSizes &sizes);

/// The sizes implied by the buffers' [rows, cols] (ABI order): M and K
/// from x, N from y. nullopt and a message naming the buffer when one
/// disagrees with the spec or the others (a K mismatch between x and the
/// weights, a bias of the wrong length, ...), or when the scheme does not
/// fit [N, K] (a group straddling K without a tail).
std::optional<MatmulSizes>
matmulSizesOf(const matmul::MatmulSpec &spec,
              const std::vector<std::array<int64_t, 2>> &shapes,
              std::string *error);

} // namespace lowbit::compiler

#endif // LOWBIT_RUNTIME_COMPILER_MATMULSIGNATURE_H
