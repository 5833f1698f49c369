//===- Npy.h - Reading and writing NumPy .npy files -------------*- C++ -*-===//
//
// The format of numpy.lib.format, versions 1.0 and 2.0, C order only, for
// the few little-endian dtypes lowbit exchanges: float32, float16, uint16
// (bf16 bit patterns), uint8 (codes), int8 and int32, in 1-D or 2-D.
// Reading is strict: anything else (bad magic, a truncated header or data,
// Fortran order, another dtype, a shape that does not match the data) is an
// error value that names the problem, never a guess.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_CORE_NPY_H
#define LOWBIT_RUNTIME_CORE_NPY_H

#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lowbit::npy {

// The data is kept as raw little-endian bytes and read with memcpy.
static_assert(std::endian::native == std::endian::little,
              "lowbit's .npy I/O assumes a little-endian host");

enum class DType : uint8_t { F32, F16, U16, U8, I8, I32 };

/// The .npy descr string ("<f4", "|u1", ...).
std::string_view dtypeDescr(DType dtype);
/// NumPy's name ("float32", "uint8", ...), for messages.
std::string_view dtypeName(DType dtype);
size_t dtypeSize(DType dtype);
std::optional<DType> parseDescr(std::string_view descr);

struct Array {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes; ///< C order, little-endian

  int64_t elementCount() const;
  std::string shapeText() const; ///< "(3, 4)", as NumPy prints it

  /// The elements as T, which must have the dtype's size.
  template <typename T> std::vector<T> values() const {
    std::vector<T> result(bytes.size() / sizeof(T));
    if (!bytes.empty())
      std::memcpy(result.data(), bytes.data(), result.size() * sizeof(T));
    return result;
  }
  template <typename T>
  static Array fromValues(DType dtype, std::vector<int64_t> shape,
                          std::span<const T> values) {
    Array array;
    array.dtype = dtype;
    array.shape = std::move(shape);
    array.bytes.resize(values.size() * sizeof(T));
    if (!values.empty())
      std::memcpy(array.bytes.data(), values.data(), array.bytes.size());
    return array;
  }
};

/// The highest rank any reader accepts (KV caches are 4-D).
constexpr int kMaxNpyRank = 8;

/// Parses the contents of a .npy file of rank 1 to `maxRank` (at most
/// kMaxNpyRank); the 2-D default is what the quantize commands take.
std::optional<Array> parseNpy(std::string_view contents, std::string *error,
                              int maxRank = 2);
/// Reads a .npy file; messages start with the path.
std::optional<Array> readNpy(const std::string &path, std::string *error,
                             int maxRank = 2);

/// The .npy bytes of `array` (version 1.0, or 2.0 if the header needs it).
/// Fails if the rank is not 1 to kMaxNpyRank or the shape does not match
/// the data.
std::optional<std::string> serializeNpy(const Array &array, std::string *error);
/// Writes a .npy file through a temporary file and a rename.
bool writeNpy(const std::string &path, const Array &array, std::string *error);

} // namespace lowbit::npy

#endif // LOWBIT_RUNTIME_CORE_NPY_H
