//===- Quantize.h - The reference quantizer, the kernels' oracle -*- C++
//-*-===//
//
// Plain, obviously correct quantization and dequantization of a 2-D
// row-major [rows, cols] tensor for any valid Scheme. The JIT kernels are
// compared against it bit for bit, so every arithmetic step and its order is
// fixed here and written down in docs/quantization.md. All arithmetic is
// f32 with IEEE round-to-nearest-even; element and scale conversions go
// through lowbit::encode (saturating, PTX cvt semantics).
//
// Errors are values: a function that can fail returns nullopt (or false)
// and a message in `error`. Nothing here throws for control flow or aborts.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_FORMAT_QUANTIZE_H
#define LOWBIT_FORMAT_QUANTIZE_H

#include "format/Scheme.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace lowbit {

/// What a quantized tensor is made of.
///
/// Scales are kept as raw codes of the scale type, one uint32_t per entry:
/// the IEEE bits for f32, the 16-bit pattern for f16 and bf16, the byte for
/// e8m0 and ue4m3. One representation for every type keeps static scales
/// (read back from a file) and dynamic ones bit-identical; decodeScale()
/// gives the value.
struct QuantizedTensor {
  explicit QuantizedTensor(Scheme scheme) : scheme(std::move(scheme)) {}

  Scheme scheme;
  int64_t rows = 0, cols = 0;
  /// Packed codes, codesShape(scheme, rows, cols), row-major bytes.
  std::vector<uint8_t> codes;
  /// scaleShape(scheme, rows, cols) entries in the scheme's scale layout
  /// (for swizzle_128x4 the flat index is the byte offset of the tile
  /// layout, padding zero).
  std::vector<uint32_t> scaleCodes;
  /// Zero points, same shape as the scales (row-major); empty without a
  /// zero point.
  std::vector<uint8_t> zeros;
  /// The stored second-level scale: g (decode convention) or 2688 / amax
  /// (encode convention). 0 when the scheme has none.
  float globalScale = 0;
};

/// Stored scales for static mode, in the same representation and layout
/// that quantize() produces. Also lets a dynamic scheme use a fixed global
/// scale (the block scales are still computed).
struct StaticScales {
  std::optional<std::vector<uint32_t>> scaleCodes;
  std::optional<std::vector<uint8_t>> zeros;
  std::optional<float> globalScale;
};

/// The value of a stored scale code of `type`.
float decodeScale(ScaleType type, uint32_t code);
/// Bits one stored scale occupies (32, 16 or 8).
int scaleStorageBits(ScaleType type);

/// Byte offset of the scale for row `row` and scale column `scaleCol` in the
/// Blackwell 128x4 scale-factor layout, with `scaleCols` (K_sf) logical
/// scale columns.
int64_t swizzle128x4Offset(int64_t row, int64_t scaleCol, int64_t scaleCols);

/// Quantizes f32 data (rows * cols values, row-major). Scales come from
/// `given` when the scheme is static (required then), else from the data.
std::optional<QuantizedTensor>
quantize(const Scheme &scheme, std::span<const float> input, int64_t rows,
         int64_t cols, const StaticScales &given, std::string *error);
inline std::optional<QuantizedTensor> quantize(const Scheme &scheme,
                                               std::span<const float> input,
                                               int64_t rows, int64_t cols,
                                               std::string *error) {
  return quantize(scheme, input, rows, cols, StaticScales{}, error);
}

/// f16 or bf16 input, given as bit patterns; widened exactly to f32 first.
enum class HalfType : uint8_t { F16, BF16 };
std::vector<float> widenToFloat(HalfType type, std::span<const uint16_t> bits);
std::optional<QuantizedTensor> quantizeHalf(const Scheme &scheme, HalfType type,
                                            std::span<const uint16_t> input,
                                            int64_t rows, int64_t cols,
                                            const StaticScales &given,
                                            std::string *error);

/// Checks that the parts of `tensor` have the sizes its scheme and shape
/// need and that every scale it will use is finite and positive.
bool validateQuantized(const QuantizedTensor &tensor, std::string *error);

/// Back to f32 (rows * cols values).
std::optional<std::vector<float>> dequantize(const QuantizedTensor &tensor,
                                             std::string *error);
/// Back to f16 or bf16 bits: the f32 result rounded to nearest even; a NaN
/// becomes the canonical NaN 0x7fff (docs/numerics.md).
std::optional<std::vector<uint16_t>>
dequantizeHalf(const QuantizedTensor &tensor, HalfType type,
               std::string *error);

/// How the stored scales enter the element conversion (docs/quantization.md).
/// The reference and the lowering (lowering/ScaleMath) both dispatch on it.
enum class ScaleKind {
  /// q = encode(x / s), x' = q * s. absmax with f32/f16/bf16/ue4m3 scales
  /// and both MX rules (s = 2^k; x / 2^k equals x * 2^-k bit for bit).
  Symmetric,
  /// q = clamp(rne(x / s) + zero), x' = (q - zero) * s.
  Asymmetric,
  /// q = encode(x / (s * g)), x' = q * (s * g). torchao's NVFP4.
  GlobalDecode,
  /// q = encode(x * gInv / s), x' = q * s / gInv. vLLM's NVFP4.
  GlobalEncode,
};
ScaleKind scaleKindOf(const Scheme &scheme);

/// Where the code of element (row, col) of a tensor of `cols` columns
/// lives in the packed codes: the byte and the bit shift (0 or 4 for
/// nibble packings, 0 for Byte).
struct CodePosition {
  int64_t byte = 0;
  int shift = 0;
};
CodePosition codePosition(const Scheme &scheme, int64_t cols, int64_t row,
                          int64_t col);

/// The unpacked code of element (row, col).
uint32_t codeAt(const QuantizedTensor &tensor, int64_t row, int64_t col);

/// Index into QuantizedTensor::scaleCodes (and zeros) of the scale that
/// element (row, col) uses, layout included.
int64_t scaleIndexOf(const Scheme &scheme, int64_t rows, int64_t cols,
                     int64_t row, int64_t col);

/// Storage of a quantized tensor in bits: codes, scales, zero points (at
/// the element's width, as packed checkpoints hold them) and the global
/// scale.
int64_t storageBits(const QuantizedTensor &tensor);

} // namespace lowbit

#endif // LOWBIT_FORMAT_QUANTIZE_H
