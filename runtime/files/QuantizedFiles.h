//===- QuantizedFiles.h - A quantized tensor as a directory -----*- C++ -*-===//
//
// `lowbit quantize` writes, and `lowbit dequantize` reads, a directory:
//   q.npy             uint8 packed codes, codesShape
//   scales.npy        scaleShape: float32 (f32 scales), float16 (f16),
//                     uint16 bit patterns (bf16), uint8 codes (e8m0, ue4m3)
//   zeros.npy         uint8 zero points (schemes with a zero point)
//   global_scale.npy  float32 (1,), the stored second-level scale
//   meta.json         the full scheme, the shape and the input dtype
// A tensor of rank > 2 is quantized as [rows, cols] with its leading axes
// flattened into rows; its set keeps the shape: meta.json has "shape",
// q.npy is [d0, ..., dn, code cols], and scales.npy / zeros.npy are
// [d0, ..., dn, scale cols] when the scales have one row per row
// (scaleRowsFollowRows), else 2-D. A 2-D set is written as it always was.
//   manifest.json     every other file's size and SHA-256
// meta.json spells the scheme out field by field, so a scheme changed on
// the command line (--rule, --global, --layout) reads back exactly.
//
// The directory is replaced as one unit (runtime/core/AtomicDirectory.h):
// a reader sees the whole old set or the whole new one. The manifest makes
// a set checkable on its own: a file copied in from another set, truncated
// or edited is refused, and so are a meta.json that disagrees with the
// arrays and codes outside the element format (docs/quantization.md,
// "Quantized directories").
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_FILES_QUANTIZEDFILES_H
#define LOWBIT_RUNTIME_FILES_QUANTIZEDFILES_H

#include "format/Quantize.h"
#include "runtime/core/Json.h"
#include "runtime/core/Npy.h"

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace lowbit::files {

/// The dtype scales of `type` are stored with in scales.npy.
npy::DType scaleFileDType(ScaleType type);

/// Scale codes <-> the scales.npy array (shape checked against the scheme).
npy::Array scalesToArray(const QuantizedTensor &tensor);
std::optional<std::vector<uint32_t>> scalesFromArray(const npy::Array &array,
                                                     const Scheme &scheme,
                                                     int64_t rows, int64_t cols,
                                                     std::string *error);
std::optional<std::vector<uint8_t>> zerosFromArray(const npy::Array &array,
                                                   const Scheme &scheme,
                                                   int64_t rows, int64_t cols,
                                                   std::string *error);
std::optional<float> globalFromArray(const npy::Array &array,
                                     std::string *error);

/// meta.json of a quantized tensor: a flat object of string, integer and
/// boolean values, keys in alphabetical order. It does not name the backend
/// that computed it: the backends agree bit for bit, and a directory must
/// not depend on which one ran (scripts compare and cache them by content).
/// `shape` is the tensor's N-D shape (rank > 2), written as "shape"; a 2-D
/// tensor passes none.
json::JsonValue makeMeta(const QuantizedTensor &tensor,
                         std::string_view inputDType,
                         std::span<const int64_t> shape = {});

/// An array of shape [leading..., width] reshaped to [product, width];
/// false (the array unchanged) when its shape does not start with
/// `leading` and have exactly one more axis.
bool flattenLeadingAxes(npy::Array &array, std::span<const int64_t> leading);

/// Whether `name` is a file a quantized set may hold (or an older lowbit's
/// temporary of one): an existing --out holding anything else is not
/// replaced.
bool isQuantizedSetName(std::string_view name);

/// Writes the directory as one unit: a sibling temporary directory, each
/// file fsynced, swapped with `directory`; the old set is removed. On
/// failure `directory` is as it was and nothing is left behind.
/// `shape`: the N-D shape of a tensor of rank > 2 (its product of leading
/// axes is tensor.rows, its last tensor.cols), or empty for 2-D.
bool writeQuantizedDirectory(const std::string &directory,
                             const QuantizedTensor &tensor,
                             std::string_view inputDType, std::string *error,
                             std::span<const int64_t> shape = {});

/// Reads and checks a directory written by writeQuantizedDirectory: the
/// manifest, each file against it, meta.json against the arrays, and every
/// code against the formats. `shape`, when given, receives the tensor's
/// shape: meta.json's "shape" for an N-D set, else [rows, cols].
std::optional<QuantizedTensor>
readQuantizedDirectory(const std::string &directory, std::string *error,
                       std::vector<int64_t> *shape = nullptr);

} // namespace lowbit::files

#endif // LOWBIT_RUNTIME_FILES_QUANTIZEDFILES_H
