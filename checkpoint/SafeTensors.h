//===- SafeTensors.h - The safetensors file format ---------------*- C++
//-*-===//
//
// A safetensors file is an 8-byte little-endian header length N, N bytes of
// JSON naming each tensor's dtype, shape and [begin, end) byte range in the
// data buffer that follows, then that buffer. Users' checkpoints come in
// this format, so lowbit reads it without MLIR, maps the file and hands
// out views of the buffer (no copy), and checks every header against the
// spec before a byte of data is touched: the header and every range must lie
// inside the file, the ranges must tile the buffer exactly (no gap, no
// overlap), each range must hold exactly its shape's bytes, and names are
// unique. A file that breaks any of these is refused with a message naming
// the tensor and the numbers (docs/checkpoints.md).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_CHECKPOINT_SAFETENSORS_H
#define LOWBIT_CHECKPOINT_SAFETENSORS_H

#include "checkpoint/MappedFile.h"
#include "lowbit/Expected.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lowbit::checkpoint {

/// Every dtype the safetensors format names (its Rust crate's Dtype, in
/// the same order: increasing alignment).
enum class DType : uint8_t {
  Bool,
  F4,      ///< float4 e2m1, two per byte
  F6_E2M3, ///< float6, packed four per three bytes
  F6_E3M2,
  U8,
  I8,
  F8_E5M2,
  F8_E4M3,
  F8_E8M0,
  I16,
  U16,
  F16,
  BF16,
  I32,
  U32,
  F32,
  C64, ///< complex64: two f32
  F64,
  I64,
  U64,
};

/// The header's spelling ("F8_E4M3").
std::string_view dtypeName(DType dtype);
std::optional<DType> dtypeFromName(std::string_view name);
/// Bits one element occupies (4, 6, 8, 16, 32 or 64).
int dtypeBits(DType dtype);

struct TensorInfo {
  std::string name;
  DType dtype = DType::U8;
  std::vector<int64_t> shape;
  /// Byte range in the data buffer (after the header), begin <= end.
  uint64_t begin = 0, end = 0;

  uint64_t byteSize() const { return end - begin; }
  /// The product of the shape (1 for a scalar).
  int64_t elementCount() const;
};

struct Header {
  /// In the order of their data (begin, then end, then name).
  std::vector<TensorInfo> tensors;
  /// "__metadata__": string keys and values, in the file's order.
  std::vector<std::pair<std::string, std::string>> metadata;

  const TensorInfo *find(std::string_view name) const;
};

/// The largest header accepted, as the reference implementation's limit:
/// a length field past it is refused before anything is read or allocated.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

/// Parses and checks the JSON header `json` of a file whose data buffer
/// holds `dataBytes` bytes. Errors are ErrorCode::InvalidArgument with the
/// offending tensor and numbers.
Expected<Header> parseHeader(std::string_view json, uint64_t dataBytes);

/// Parses a whole file held in memory: the length field, the header and the
/// buffer's size. Returns the header and, in `dataOffset`, where the
/// buffer starts (8 + N).
Expected<Header> parseFileBytes(std::span<const std::byte> file,
                                uint64_t *dataOffset = nullptr);

/// A safetensors file mapped read-only. Views stay valid while the object
/// lives (it is movable, not copyable). The mapping is private: a writer
/// that replaces the file (lowbit's writers rename a new one into place)
/// does not change what is mapped; one that truncates it in place makes
/// reads fault, as with any mapped file.
class SafeTensorsFile {
public:
  static Expected<SafeTensorsFile> open(const std::string &path);


  const std::string &path() const { return filePath; }
  const Header &header() const { return parsed; }
  /// The tensor's bytes, in place in the mapping.
  std::span<const std::byte> data(const TensorInfo &tensor) const;
  /// The named tensor's bytes; an error naming the file if it is absent.
  Expected<std::span<const std::byte>> data(std::string_view name) const;

private:
  SafeTensorsFile() = default;
  std::string filePath;
  Header parsed;
  MappedFile mapped;
  uint64_t dataOffset = 0;
};

/// One tensor to write: the bytes are borrowed, not copied.
struct TensorData {
  std::string name;
  DType dtype = DType::U8;
  std::vector<int64_t> shape;
  std::span<const std::byte> bytes;
};

/// A tensor's entry without its bytes: what a header needs, known before
/// the data is (a streamed shard's header is written first).
struct TensorSpec {
  std::string name;
  DType dtype = DType::U8;
  std::vector<int64_t> shape;

  bool operator==(const TensorSpec &other) const = default;
};

/// The bytes a tensor of `dtype` and `shape` occupies, or an error (a
/// negative or overflowing shape, or a sub-byte dtype that does not fill
/// whole bytes).
Expected<uint64_t> tensorByteSize(DType dtype, std::span<const int64_t> shape,
                                  std::string_view name);

/// The header's JSON for `tensors` laid out in their order, padded with
/// spaces so the data buffer starts 8-byte aligned.
Expected<std::string>
serializeHeader(std::span<const TensorData> tensors,
                std::span<const std::pair<std::string, std::string>> metadata);

/// The same from the tensors' specs, each laid out with its shape's bytes.
Expected<std::string>
serializeHeader(std::span<const TensorSpec> tensors,
                std::span<const std::pair<std::string, std::string>> metadata);

/// What precedes the data buffer: the 8-byte length and the header.
Expected<std::string> serializeFileHeader(
    std::span<const TensorSpec> tensors,
    std::span<const std::pair<std::string, std::string>> metadata);

/// A whole file: the length, the header and the tensors' bytes in order.
Expected<std::string>
serializeFile(std::span<const TensorData> tensors,
              std::span<const std::pair<std::string, std::string>> metadata);

/// Writes one safetensors file through a temporary file and a rename:
/// `path` holds the old file or the whole new one, never a prefix.
Status writeSafeTensors(
    const std::string &path, std::span<const TensorData> tensors,
    std::span<const std::pair<std::string, std::string>> metadata = {});

} // namespace lowbit::checkpoint

#endif // LOWBIT_CHECKPOINT_SAFETENSORS_H
