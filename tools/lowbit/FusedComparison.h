//===- FusedComparison.h - A fused kernel against its two references ------===//
//
// What `lowbit demo` and `lowbit eval --fused` show about a fused spec
// (prologue | quantize, docs/fusion.md), on the CPU:
//   - fused: the fused kernel through lowbit::Jit;
//   - reference: format/Prologue.h's quantizeFused (the prologue chain in
//     f32, then the reference quantizer), which the fused kernel must equal
//     bit for bit, its updated residual (add_rmsnorm) included;
//   - unfused: what an engine runs without fusion, two kernels: the
//     reference prologue writes its f32 result, then the ordinary quantize
//     kernel (from=f32) reads it. Same arithmetic, so the same codes.
// Given a runner of the GPU emulator, the fused GPU kernels run there too
// and are checked against the reference the same way.
// The side tensors are seeded (SyntheticData.h): weights in [0.5, 1.5),
// smoothing factors in [0.25, 4), a residual N(0, 1).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TOOLS_LOWBIT_FUSEDCOMPARISON_H
#define LOWBIT_TOOLS_LOWBIT_FUSEDCOMPARISON_H

#include "format/Prologue.h"
#include "format/Quantize.h"
#include "runtime/spec/KernelSpec.h"
#include "tools/lowbit/JitBackend.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lowbit::cli {

/// One of each prologue, as `lowbit demo` and `lowbit eval --fused` run
/// them (hadamard(128) needs the column count to be a multiple of 128).
inline constexpr std::string_view kShowcasePrologues[] = {
    "rmsnorm(eps=1e-6)", "add_rmsnorm(eps=1e-6)", "silu_mul", "smooth",
    "hadamard(128)",     "map(x * sigmoid(x))",
};

struct FusedComparison {
  QuantizedTensor fused, reference, unfused;
  /// The reference chain's f32 result, [rows, cols]: what was quantized.
  std::vector<float> prologueOutput;
  /// fused == reference: codes, scales, zero points, global scale and the
  /// updated residual, bit for bit.
  bool fusedBitExact = false;
  /// The unfused pair's codes, scales, zero points and global scale equal
  /// the fused kernel's.
  bool unfusedIdentical = false;
  double compileMillis = 0; ///< the fused kernel's first compile
  /// With an `emulator` runner: whether its run of the fused GPU kernels
  /// equals the reference bit for bit, or nullopt and why it did not run.
  std::optional<bool> emulatedBitExact = {};
  std::string emulatorError = {};
};

/// Runs the three for `spec` (a fused quantize of a dynamic scheme) on
/// `input`: [rows, prologueInputWidth(prologues, cols)] values, rounded to
/// spec.valueType first. Side tensors come from `seed`.
std::optional<FusedComparison> compareFused(const KernelSpec &spec,
                                            const std::vector<float> &input,
                                            int64_t rows, int64_t cols,
                                            uint64_t seed, std::string *error,
                                            const KernelRunner &emulator = {});

/// The reference's dtype (format/Prologue.h) of a kernel's value type.
ValueDtype dtypeOf(ValueType type);
/// `values` in the kernel's dtype: the buffer's bytes, and in `widened`
/// their exact f32 values (what the reference reads).
std::vector<uint8_t> toDtype(ValueType type, const std::vector<float> &values,
                             std::vector<float> &widened);

/// Bitwise equality of two quantized tensors' codes, scales, zero points
/// and global scale.
bool sameQuantized(const QuantizedTensor &a, const QuantizedTensor &b);

/// 10 log10(sum x^2 / sum (x - x')^2) of the dequantized `tensor` against
/// `signal` (infinity without noise), or nullopt if it does not dequantize.
std::optional<double> sqnrDb(const QuantizedTensor &tensor,
                             const std::vector<float> &signal);

} // namespace lowbit::cli

#endif // LOWBIT_TOOLS_LOWBIT_FUSEDCOMPARISON_H
