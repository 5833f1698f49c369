//===- Scheme.h - Quantization schemes: format + scales + packing -*- C++
//-*-===//
//
// A scheme says how a tensor is quantized: the element format, how scales
// are shared and picked, and how codes are packed. The named schemes
// (fp8_e4m3, mxfp4, nvfp4, int4_g128, ...) are defined here once; the
// dialect's `#lowbit.scheme<"name">` shorthand, the CLI and the lowering all
// expand names through lookupScheme().
//
// Tensors are 2-D [rows, cols] in C order: rows are tokens or output
// channels, and the last axis (cols) is the one groups and blocks run along.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_FORMAT_SCHEME_H
#define LOWBIT_FORMAT_SCHEME_H

#include "format/Format.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lowbit {

/// Which elements share one scale.
enum class Granularity : uint8_t {
  PerTensor,  ///< one scale for the whole tensor
  PerChannel, ///< one scale per index along `axis` (reduce the other axis)
  PerToken,   ///< one scale per row
  Group,      ///< groups of `groupSize` consecutive elements along `axis`
  Block,      ///< 2-D tiles of blockRows x blockCols
};

/// Type the scale is stored in.
enum class ScaleType : uint8_t { F32, F16, BF16, E8M0, UE4M3 };

/// How a dynamic scale is picked from the group's statistics.
enum class ScaleRule : uint8_t {
  AbsMax,    ///< scale = amax / qmax (symmetric)
  MinMax,    ///< scale = (max - min) / (2^b - 1), zero = rne(-min / scale)
  E8M0Floor, ///< OCP MX: 2^(floor(log2 amax) - emax_elem)
  E8M0RCeil, ///< cuBLAS/CUTLASS: smallest 2^k >= amax / max_elem
  /// llama.cpp's Q8_0 (quantize_row_q8_0_ref): d = amax / qmax in f32,
  /// stored rounded; code = roundf(x * (1 / d)) with the unrounded f32 d
  /// (ties away from zero; 1 / d taken as 0 when d = 0, so an all-zero
  /// group stores d = 0).
  AbsMaxReciprocal,
  /// llama.cpp's Q4_0 (quantize_row_q4_0_ref): d = m / -2^(b-1), m the
  /// group's value of largest magnitude (the first on ties), so d is
  /// negative when m is positive; code = min(2^b - 1, trunc(x * (1 / d) +
  /// 2^(b-1) + 0.5)) - 2^(b-1) with the unrounded f32 d, each step an f32
  /// operation.
  SignedMaxReciprocal,
};

enum class ScaleMode : uint8_t { Static, Dynamic };

/// Memory layout of the scale tensor.
enum class ScaleLayout : uint8_t {
  RowMajor,
  Swizzle128x4, ///< the Blackwell tensor-core scale-factor tile
};

/// Meaning of NVFP4's second-level per-tensor f32 scale. Never guessed: a
/// scheme with a global scale names its convention.
enum class GlobalScale : uint8_t {
  None,
  /// torchao: g = amax / (6 * 448) is stored; dequant is q * s * g.
  DecodeMultiplier,
  /// vLLM, TensorRT-LLM, FlashInfer: 2688 / amax is passed; dequant divides.
  EncodeReciprocal,
};

/// How codes are laid out in memory.
enum class Packing : uint8_t {
  Byte,   ///< one code per byte (FP6: the 2 high bits are zero)
  Nibble, ///< two codes per byte, element 0 in the low nibble
  /// Two codes per byte, paired across the halves of each group of g along
  /// the last axis: byte j of a group holds element j (low nibble) and
  /// element j + g/2 (high nibble). llama.cpp's Q4_0.
  NibbleHalves,
};

struct ScaleSpec {
  Granularity granularity = Granularity::PerTensor;
  /// Axis of PerChannel and Group (0 = rows, 1 = cols).
  int axis = 1;
  int groupSize = 0;
  int blockRows = 0, blockCols = 0;
  /// Group and Block: whether the last group along an axis may be short.
  bool allowTail = false;
  ScaleType type = ScaleType::F32;
  ScaleRule rule = ScaleRule::AbsMax;
  ScaleMode mode = ScaleMode::Dynamic;
  /// Asymmetric schemes store one integer zero point per scale.
  bool zeroPoint = false;
  GlobalScale globalScale = GlobalScale::None;
  ScaleLayout layout = ScaleLayout::RowMajor;

  bool operator==(const ScaleSpec &other) const = default;
};

struct Scheme {
  std::string name; ///< empty for a scheme that is not a named one
  Format element;
  ScaleSpec scale;
  Packing packing = Packing::Byte;

  bool operator==(const Scheme &other) const {
    return element == other.element && scale == other.scale &&
           packing == other.packing;
  }
};

/// The named schemes, in a stable order.
const std::vector<Scheme> &namedSchemes();
std::optional<Scheme> lookupScheme(std::string_view name,
                                   std::string *error = nullptr);
/// The named scheme equal to `scheme` (ignoring its name), if any.
const Scheme *findNamedScheme(const Scheme &scheme);

/// Bounds on every size lowbit accepts, wherever it is read (the kernel
/// spec, the dialect's attributes, meta.json, a .npy shape). Sizes are read
/// as int64 and refused past these, never narrowed (docs/quantization.md,
/// "Sizes"): a dimension and a tensor's element count are at most 2^40, so
/// byte counts of any dtype and `size + divisor` fit in int64 with room to
/// spare; a group size or block dimension is at most 2^30, so it fits
/// ScaleSpec's int (and the attribute's i32) with the same headroom.
constexpr int64_t kMaxDimension = int64_t(1) << 40;
constexpr int64_t kMaxElements = int64_t(1) << 40;
constexpr int64_t kMaxScaleExtent = int64_t(1) << 30;

/// `value` as a group size or block dimension (`what` names it in the
/// message): in [1, kMaxScaleExtent], else nullopt and a message naming it.
std::optional<int> scaleExtentFromInt64(std::string_view what, int64_t value,
                                        std::string *error);
/// `value` as an axis: 0 or 1, else nullopt and a message naming it.
std::optional<int> axisFromInt64(int64_t value, std::string *error);
/// A static [rows, cols] (kDynamic passes): each dimension in
/// [1, kMaxDimension] and rows * cols at most kMaxElements.
bool validateShape(int64_t rows, int64_t cols, std::string *error);

/// Checks the parts of a scale description that stand alone (axis, group
/// size, block size). On failure returns false with a message in `error`.
bool validateScaleSpec(const ScaleSpec &scale, std::string *error);
/// Checks that a scheme can work, independent of tensor shapes. On failure
/// returns false with a message naming the problem in `error`.
bool validateScheme(const Scheme &scheme, std::string *error);
/// Checks a scheme against a 2-D shape (e.g. a group size that does not
/// divide the axis when no tail is allowed).
bool validateSchemeForShape(const Scheme &scheme, int64_t rows, int64_t cols,
                            std::string *error);

/// Shapes of a scheme's tensors for a [rows, cols] input. A dimension of
/// kDynamic stays dynamic.
constexpr int64_t kDynamic = -1;
struct Shape2D {
  int64_t rows = 0, cols = 0;
  bool operator==(const Shape2D &other) const = default;
};
/// The packed codes, in bytes: [rows, ceil(cols / 2)] for Nibble packing,
/// else [rows, cols].
Shape2D codesShape(const Scheme &scheme, int64_t rows, int64_t cols);
/// The scales (and zero points, which have the same shape), in elements of
/// the scale type: [1, 1] per tensor, [rows, 1] per token, [rows, ceil(cols
/// / g)] for groups along the last axis, ...; for Swizzle128x4 the rows are
/// padded to 128 and the scale columns to 4.
Shape2D scaleShape(const Scheme &scheme, int64_t rows, int64_t cols);
/// Whether the scales have one row per row of the tensor (per token, groups
/// along the last axis), so that an N-D tensor's scales keep its leading
/// axes: [d0, ..., dn, scale cols] (docs/quantization.md, N-D tensors).
bool scaleRowsFollowRows(const Scheme &scheme);

/// Bits of the container a code is stored in (4 for Nibble, else 8 or 16).
int containerBits(const Scheme &scheme);
/// Whether codes are packed two to a byte (Nibble, NibbleHalves).
bool isNibblePacked(Packing packing);
/// Why the compiler cannot lower `scheme` yet (the reference quantizer in
/// format/Quantize.h handles every valid scheme), or nullopt when it can:
/// the rules and packing of llama.cpp's Q8_0 / Q4_0 have no kernels yet.
std::optional<std::string> referenceOnlyReason(const Scheme &scheme);
/// The largest magnitude the element format's quantized values reach with
/// this scheme's rule: format max for floats, qmax for symmetric ints
/// (127 for int8: the symmetric range excludes -128), 2^b - 1 for
/// asymmetric ints.
double quantMax(const Scheme &scheme);
/// The OCP MX emax of an element format: floor(log2(max)).
int elementEmax(const Format &element);

std::string_view granularityName(Granularity granularity);
std::string_view scaleTypeName(ScaleType type);
std::string_view scaleRuleName(ScaleRule rule);
std::string_view scaleModeName(ScaleMode mode);
std::string_view scaleLayoutName(ScaleLayout layout);
std::string_view globalScaleName(GlobalScale global);
std::string_view packingName(Packing packing);
std::optional<Granularity> parseGranularity(std::string_view name);
std::optional<ScaleType> parseScaleType(std::string_view name);
std::optional<ScaleRule> parseScaleRule(std::string_view name);
std::optional<ScaleMode> parseScaleMode(std::string_view name);
std::optional<ScaleLayout> parseScaleLayout(std::string_view name);
std::optional<GlobalScale> parseGlobalScale(std::string_view name);
std::optional<Packing> parsePacking(std::string_view name);
/// The format a scale type stores its codes in (nullopt for f32).
std::optional<Format> scaleTypeFormat(ScaleType type);

} // namespace lowbit

#endif // LOWBIT_FORMAT_SCHEME_H
