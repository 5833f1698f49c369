//===- AtomicFile.h - Writes that never leave half a file -------*- C++ -*-===//
//
// Output goes to a temporary file in the destination's directory and is
// renamed into place only once it is complete, so a reader (or a crashed
// run) sees the old file or the whole new one, never a prefix. StagedFiles
// does the same for a set of files: a command stages everything it will
// write and renames it all only when every write has succeeded. Each file
// is fsynced before its rename and the directory after, errors carry the
// system's reason, and the steps go through FileIo.h (and its test hook).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_CORE_ATOMICFILE_H
#define LOWBIT_RUNTIME_CORE_ATOMICFILE_H

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace lowbit::runtime {

/// Writes `bytes` to `path` through a temporary file and a rename.
bool writeFileAtomically(const std::string &path, std::string_view bytes,
                         std::string *error);

/// A set of files written to temporary names, renamed into place together
/// by commit(). Whatever is not committed is removed by the destructor.
class StagedFiles {
public:
  StagedFiles() = default;
  StagedFiles(const StagedFiles &) = delete;
  StagedFiles &operator=(const StagedFiles &) = delete;
  ~StagedFiles();

  /// Writes `bytes` to a temporary file next to `path`.
  bool stage(const std::string &path, std::string_view bytes,
             std::string *error);
  /// The same with the bytes produced piece by piece: `next` points its
  /// first argument at the next bytes (valid until the next call; empty at
  /// the end) or returns false with the error set (FileIo.h's PieceSource).
  /// A file larger than memory (a checkpoint shard) is never assembled.
  bool
  stageFrom(const std::string &path,
            const std::function<bool(std::string_view &, std::string *)> &next,
            std::string *error);

  /// Renames every staged file to its destination.
  bool commit(std::string *error);

private:
  struct Entry {
    std::string temporary, destination;
  };
  std::vector<Entry> entries;
};

/// Removes "<path>.tmp.<pid>.<n>" files whose writer process is gone (a
/// crash or kill between staging and rename). stage() calls it.
void sweepStaleTemporaries(const std::string &path);

/// Reads a whole file (or pipe); a directory, device or socket is refused.
bool readFile(const std::string &path, std::string &bytes, std::string *error);

} // namespace lowbit::runtime

#endif // LOWBIT_RUNTIME_CORE_ATOMICFILE_H
