//===- Gguf.h - GGUF files (llama.cpp's checkpoints) ------------*- C++ -*-===//
//
// A GGUF file, all little-endian:
//
//   magic "GGUF", u32 version (2 or 3), u64 tensor count, u64 KV count,
//   KV pairs:      string key, u32 value type, value
//   tensor infos:  string name, u32 n_dims (1..4), u64 ne[n_dims] (ne[0]
//                  the fastest-varying extent), u32 ggml type, u64 offset
//   padding to `general.alignment` (u32, a power of two; 32 if absent),
//   the data section: each tensor at its offset, which is the previous
//   tensor's end padded to the alignment (the reference reader's rule).
//
// where a string is a u64 length and its bytes, and an array value is a
// u32 element type, a u64 count and the elements. Reading maps the file
// and hands out views of it; every count, length, extent and offset is
// checked against what remains of the file before anything is allocated
// or read, so a bad file gets an error naming the field, never a crash
// (docs/checkpoints.md, "GGUF").
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_CHECKPOINT_GGUF_H
#define LOWBIT_CHECKPOINT_GGUF_H

#include "checkpoint/MappedFile.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lowbit::checkpoint {

/// gguf_type: the metadata value types.
enum class GgufValueType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};

std::string_view ggufValueTypeName(GgufValueType type);

/// Bytes of a scalar value type; 0 for string and array.
size_t ggufScalarBytes(GgufValueType type);

/// One metadata value. A scalar keeps its little-endian bits zero-extended
/// in `bits` (read it with the accessors); a string its bytes; an array
/// its element type and elements (arrays of arrays are refused).
struct GgufValue {
  GgufValueType type = GgufValueType::U8;
  uint64_t bits = 0;
  std::string string;
  GgufValueType elementType = GgufValueType::U8;
  std::vector<GgufValue> elements;

  /// The value as an unsigned integer: any unsigned type, or a signed one
  /// that is not negative; nullopt otherwise.
  std::optional<uint64_t> asUnsigned() const;

  /// Values for a writer to put in a file.
  static GgufValue u32(uint32_t value);
  static GgufValue f32(float value);
  static GgufValue text(std::string value);
  /// An array of `elementType`; each element must be of that type.
  static GgufValue array(GgufValueType elementType,
                         std::vector<GgufValue> elements);
};

/// The ggml tensor types GGUF files hold: id, name, elements per block and
/// bytes per block (ggml's type traits).
struct GgmlType {
  uint32_t id;
  std::string_view name;
  int64_t blockSize;
  int64_t blockBytes;
};
/// The type of id `id`, or nullptr for an id ggml does not define.
const GgmlType *ggmlType(uint32_t id);
constexpr uint32_t kGgmlF32 = 0, kGgmlF16 = 1, kGgmlQ4_0 = 2, kGgmlQ8_0 = 8;

struct GgufTensorInfo {
  std::string name;
  /// ne[0..n_dims): ne[0] varies fastest (a [rows, cols] matrix is
  /// {cols, rows}).
  std::vector<int64_t> extents;
  const GgmlType *type = nullptr;
  /// Relative to the data section.
  uint64_t offset = 0;
  uint64_t byteSize = 0;
};

struct GgufHeader {
  uint32_t version = 0;
  uint64_t alignment = 32;
  /// Keys in the file's order (a key given twice is refused).
  std::vector<std::pair<std::string, GgufValue>> metadata;
  std::vector<GgufTensorInfo> tensors;
  /// Where the data section starts in the file.
  uint64_t dataOffset = 0;

  const GgufValue *find(std::string_view key) const;
  const GgufTensorInfo *findTensor(std::string_view name) const;
};

constexpr uint32_t kGgufDefaultAlignment = 32;

/// Parses and checks a whole file held in memory. Errors are
/// ErrorCode::InvalidArgument naming the field, its byte offset and the
/// numbers.
Expected<GgufHeader> parseGguf(std::span<const std::byte> file);

/// A GGUF file mapped read-only; views live as long as the object.
class GgufFile {
public:
  static Expected<GgufFile> open(const std::string &path);

  const std::string &path() const { return filePath; }
  const GgufHeader &header() const { return parsed; }
  /// The tensor's bytes, in place in the mapping.
  std::span<const std::byte> data(const GgufTensorInfo &tensor) const;

private:
  GgufFile() = default;
  std::string filePath;
  GgufHeader parsed;
  MappedFile mapped;
};

} // namespace lowbit::checkpoint

#endif // LOWBIT_CHECKPOINT_GGUF_H
