//===- QuantizedFiles.h - A quantized tensor as a directory -----*- C++ -*-===//
//
// `lowbit quantize` writes, and `lowbit dequantize` reads, a directory:
//   q.npy             uint8 packed codes, codesShape
//   scales.npy        scaleShape: float32 (f32 scales), float16 (f16),
//                     uint16 bit patterns (bf16), uint8 codes (e8m0, ue4m3)
//   zeros.npy         uint8 zero points (schemes with a zero point)
//   global_scale.npy  float32 (1,), the stored second-level scale
//   meta.json         the full scheme, the shape and the input dtype
// meta.json spells the scheme out field by field, so a scheme changed on
// the command line (--rule, --global, --layout) reads back exactly.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TOOLS_LOWBIT_QUANTIZEDFILES_H
#define LOWBIT_TOOLS_LOWBIT_QUANTIZEDFILES_H

#include "format/Quantize.h"
#include "runtime/core/Json.h"
#include "runtime/core/Npy.h"

#include <optional>
#include <string>

namespace lowbit::cli {

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
json::JsonValue makeMeta(const QuantizedTensor &tensor, std::string_view inputDType);

/// Writes the directory: everything is staged to temporary files and
/// renamed at the end, and files of a previous run that this scheme does
/// not have (zeros.npy, global_scale.npy) are removed.
bool writeQuantizedDirectory(const std::string &directory,
                             const QuantizedTensor &tensor,
                             std::string_view inputDType, std::string *error);

/// Reads and checks a directory written by writeQuantizedDirectory.
std::optional<QuantizedTensor>
readQuantizedDirectory(const std::string &directory, std::string *error);

} // namespace lowbit::cli

#endif // LOWBIT_TOOLS_LOWBIT_QUANTIZEDFILES_H
