//===- KvQuantize.h - The KV-cache schemes' reference ------------*- C++
//-*-===//
//
// The reference for quantizing a KV cache: plain loops whose arithmetic and
// order are the contract the KV kernels are compared against bit for bit
// (docs/kv-cache.md). Tensors are N-D, rank >= 2, C order; groups run along
// the last axis and the leading axes are flattened into rows.
//
// Schemes:
//   kv_int8_g64      symmetric int8, one f32 scale per group of G along the
//                    last axis (the last group may be short), with the
//                    multiplier (scale = 127 / amax, x^ = q / scale) or the
//                    divisor (scale = amax / 127, x^ = q * scale) convention;
//   kv_fp8_e4m3/e5m2 x / scale, saturating, with a static scale per tensor
//                    or per head;
//   kv_kivi_int4/2   KIVI (KvKivi.h): keys per channel in groups of G
//                    tokens, values per token, asymmetric.
//
// Errors are values: nullopt and a message, never an abort.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_KV_KVQUANTIZE_H
#define LOWBIT_KV_KVQUANTIZE_H

#include "format/Format.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lowbit::kv {

/// An N-D shape, rank >= 2, every dimension >= 1, at most 2^40 elements.
bool validateKvShape(std::span<const int64_t> shape, std::string *error);
/// Product of the leading dimensions (the rows the last axis is cut into).
int64_t leadingRows(std::span<const int64_t> shape);
int64_t elementCount(std::span<const int64_t> shape);

/// Which number the stored int8 scale is.
enum class ScaleConvention : uint8_t {
  /// scale = qmax / max(amax, eps); q = rne(x * scale); x^ = q / scale.
  /// The seed simulator's convention.
  Multiplier,
  /// scale = max(amax, eps) / qmax; q = rne(x / scale); x^ = q * scale.
  /// lowbit's int8_g64 convention.
  Divisor,
};
std::string_view scaleConventionName(ScaleConvention convention);
std::optional<ScaleConvention> parseScaleConvention(std::string_view name);

struct Int8GroupOptions {
  int64_t groupSize = 64;
  ScaleConvention convention = ScaleConvention::Multiplier;
  /// Guards the division when a group is all zero: amax is raised to eps.
  float epsilon = 1e-8f;
};

/// kv_int8_g<G>: codes with the input's shape, scales with shape
/// shape[:-1] + [ceil(D / G)].
struct Int8GroupTensor {
  std::vector<int64_t> shape;
  Int8GroupOptions options;
  std::vector<int8_t> codes;
  std::vector<float> scales;

  std::vector<int64_t> scaleShape() const;
};

/// The scales' shape for an input `shape` and group size.
std::vector<int64_t> int8GroupScaleShape(std::span<const int64_t> shape,
                                         int64_t groupSize);

std::optional<Int8GroupTensor>
quantizeInt8Groups(std::span<const float> input, std::span<const int64_t> shape,
                   const Int8GroupOptions &options, std::string *error);
std::vector<float> dequantizeInt8Groups(const Int8GroupTensor &tensor);

/// kv_fp8_*: one static scale for the tensor, or one per index of
/// `headAxis` (per head: axis 1 of [batch, kv_heads, tokens, head_dim]).
struct Fp8KvOptions {
  explicit Fp8KvOptions(Format format, int headAxis = -1)
      : format(std::move(format)), headAxis(headAxis) {}

  Format format;
  /// -1: one scale for the tensor; else the axis the scales index.
  int headAxis = -1;
};

struct Fp8KvTensor {
  std::vector<int64_t> shape;
  Fp8KvOptions options;
  std::vector<uint8_t> codes;
  std::vector<float> scales;
};

/// code = encode(format, x / scale) with saturation (cvt.rn.satfinite).
/// `scales` holds 1 entry (per tensor) or shape[headAxis] entries; each
/// must be finite and > 0.
std::optional<Fp8KvTensor> quantizeFp8Kv(std::span<const float> input,
                                         std::span<const int64_t> shape,
                                         const Fp8KvOptions &options,
                                         std::span<const float> scales,
                                         std::string *error);
/// x^ = decode(code) * scale.
std::vector<float> dequantizeFp8Kv(const Fp8KvTensor &tensor);

/// Mean squared error of `approx` against `exact` (same length), in f64.
double meanSquaredError(std::span<const float> exact,
                        std::span<const float> approx);

} // namespace lowbit::kv

#endif // LOWBIT_KV_KVQUANTIZE_H
