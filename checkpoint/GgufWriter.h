//===- GgufWriter.h - Whole GGUF files, written -----------------*- C++ -*-===//
//
// The inverse of parseGguf (Gguf.h): version 3, the metadata in the order
// given, the tensor infos, each tensor's data at the previous one's end
// padded to the alignment (`general.alignment` when the metadata has it,
// else 32), zero padding, as the gguf package's GGUFWriter lays a file
// out. So a file lowbit reads is written back to the same bytes, and
// lowbit's Q8_0/Q4_0 blocks (exportGgufBlocks) become a file llama.cpp
// reads (docs/checkpoints.md, "Writing GGUF").
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_CHECKPOINT_GGUFWRITER_H
#define LOWBIT_CHECKPOINT_GGUFWRITER_H

#include "checkpoint/Gguf.h"
#include "lowbit/Expected.h"

#include <span>

namespace lowbit::checkpoint {

/// One tensor to write; the bytes are borrowed.
struct GgufTensorData {
  std::string name;
  /// ne[0..n_dims), ne[0] the fastest-varying.
  std::vector<int64_t> extents;
  uint32_t type = kGgmlF32;
  std::span<const std::byte> bytes;
};

/// The whole file. Refused before anything is produced: a key or name
/// given twice, an unknown ggml type, 1..4 extents none negative, ne[0]
/// not a multiple of the type's block, bytes other than the blocks'
/// size, a `general.alignment` that is not a u32 power of two, a value
/// whose type its fields contradict (an array of arrays).
Expected<std::string>
serializeGguf(std::span<const std::pair<std::string, GgufValue>> metadata,
              std::span<const GgufTensorData> tensors);

/// serializeGguf through a temporary file and a rename.
Status writeGguf(const std::string &path,
                 std::span<const std::pair<std::string, GgufValue>> metadata,
                 std::span<const GgufTensorData> tensors);

} // namespace lowbit::checkpoint

#endif // LOWBIT_CHECKPOINT_GGUFWRITER_H
