//===- MappedFile.h - A whole file mapped read-only -------------*- C++ -*-===//
//
// The one place checkpoint files are mapped (safetensors, GGUF): a regular
// file mapped private and read-only, unmapped when the object goes.
// Replacing the file by a rename (lowbit's writers) leaves the mapping
// intact; truncating it in place makes reads fault, as with any mapping.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_CHECKPOINT_MAPPEDFILE_H
#define LOWBIT_CHECKPOINT_MAPPEDFILE_H

#include "lowbit/Expected.h"

#include <cstddef>
#include <span>
#include <string>

namespace lowbit::checkpoint {

class MappedFile {
public:
  /// ErrorCode::Io when the file cannot be opened, stat'ed or mapped;
  /// InvalidArgument when it is not a regular file.
  static Expected<MappedFile> open(const std::string &path);

  MappedFile() = default;
  MappedFile(MappedFile &&other) noexcept;
  MappedFile &operator=(MappedFile &&other) noexcept;
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;
  ~MappedFile();

  std::span<const std::byte> bytes() const { return {mapping, size}; }

private:
  const std::byte *mapping = nullptr;
  size_t size = 0;
};

/// Drops the process's pages of `range`, a view into a mapping, once it
/// has been read: a reader that streams a file larger than memory keeps
/// its resident set at what it holds, not at what it has read. The pages
/// are the file's, unmodified, so a later read maps them again.
void releasePages(std::span<const std::byte> range);

/// Writes a serialized file (or passes its error on) through a temporary
/// file and a rename: `path` holds the old file or the whole new one.
Status writeFileAtomically(const std::string &path,
                           Expected<std::string> bytes);

} // namespace lowbit::checkpoint

#endif // LOWBIT_CHECKPOINT_MAPPEDFILE_H
