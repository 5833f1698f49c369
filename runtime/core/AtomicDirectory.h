//===- AtomicDirectory.h - A set of files replaced as one unit --*- C++ -*-===//
//
// `lowbit quantize --out DIR` writes several files that are only meaningful
// together. They are written, fsynced, into a sibling temporary directory
// ".DIR.lowbit-tmp.<pid>.<n>" and that directory is swapped with DIR in one
// renameat2(RENAME_EXCHANGE) (plain rename when DIR does not exist yet), so
// DIR holds the whole old set or the whole new one at every instant, also
// under concurrent writers and after a crash. The old set is then removed.
// Temporaries of writers that died are swept by the next write beside them.
// On a file system without RENAME_EXCHANGE the swap is two renames (DIR
// moved aside, then the new set in), and a crash between them leaves no DIR
// at all, never a mixed one (docs/quantization.md, "Quantized
// directories").
//
// Readers open DIR once and read every file relative to that descriptor, so
// a swap during the read cannot mix two sets either.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_CORE_ATOMICDIRECTORY_H
#define LOWBIT_RUNTIME_CORE_ATOMICDIRECTORY_H

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lowbit::runtime {

struct DirectoryFile {
  std::string name; ///< a plain file name, no '/'
  std::string bytes;
};

/// Replaces the directory `target` by one holding exactly `files`. An
/// existing `target` is replaced only if every entry in it is accepted by
/// `isReplaceable` (so a mistyped --out never swallows someone's folder).
/// Missing parent directories are created, and removed again on failure;
/// on failure nothing else is left behind and `target` is as it was.
bool replaceDirectory(
    const std::string &target, const std::vector<DirectoryFile> &files,
    const std::function<bool(std::string_view)> &isReplaceable,
    std::string *error);

/// Removes ".NAME.lowbit-tmp.<pid>.<n>" siblings of `target` whose writer
/// process is gone. replaceDirectory calls it first.
void sweepStaleDirectories(const std::string &target);

/// A directory opened once; files are read relative to it.
class DirectoryReader {
public:
  DirectoryReader() = default;
  DirectoryReader(const DirectoryReader &) = delete;
  DirectoryReader &operator=(const DirectoryReader &) = delete;
  ~DirectoryReader();

  bool open(const std::string &path, std::string *error);
  /// The names in the directory (files and anything else), sorted.
  std::vector<std::string> names() const;
  /// Reads the regular file `name`, at most `maxBytes`.
  bool read(const std::string &name, size_t maxBytes, std::string &bytes,
            std::string *error, int *errnoOut = nullptr) const;
  /// Whether `path` still names the directory that was opened (false after
  /// a writer swapped a new set in).
  bool stillAt() const;

private:
  std::string path;
  int fd = -1;
};

} // namespace lowbit::runtime

#endif // LOWBIT_RUNTIME_CORE_ATOMICDIRECTORY_H
