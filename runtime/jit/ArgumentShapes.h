//===- ArgumentShapes.h - A kernel parameter's shape, by role and side ----===//
//
// The launch path's sizing of a kernel's buffers (lowbit::Jit's run(),
// launch() and signature(), the C API's checks): the [rows, cols] of one
// parameter for a quantized tensor of [rows, cols], from its role, its
// fused side tensor (docs/fusion.md) and the format model. No MLIR and no
// allocation, so it can run on every launch; tests/jit/ArgumentShapesTest
// checks it against kernelAbi(), which lists the same shapes for a spec
// with static sizes.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_JIT_ARGUMENTSHAPES_H
#define LOWBIT_RUNTIME_JIT_ARGUMENTSHAPES_H

#include "runtime/spec/KernelAbi.h"

#include <string_view>

namespace lowbit::jit {

/// The shape of the parameter of `spec`'s kernel with `role` and `side`
/// (KernelAbiParam::side: "" for the quantizer's own parameters, "weight",
/// "smooth" or "residual") for a quantized tensor of [rows, cols]:
/// codes and scales from the scheme, the global scale [1, 1], a weight or
/// smoothing vector [1, cols], a residual [rows, cols], and the input
/// [rows, prologueInputWidth(prologues, cols)] (silu_mul reads 2 * cols).
Shape2D argumentShape(const KernelSpec &spec, KernelParamRole role,
                      std::string_view side, int64_t rows, int64_t cols);

/// The columns of the quantized tensor whose kernel input is `inputCols`
/// wide (inputCols / 2 after silu_mul), or nullopt when no column count
/// gives that width (an odd width for silu_mul). For callers that size a
/// kernel from its input tensor, as the C API and Python do.
std::optional<int64_t> quantizedCols(const KernelSpec &spec, int64_t inputCols);

} // namespace lowbit::jit

#endif // LOWBIT_RUNTIME_JIT_ARGUMENTSHAPES_H
