//===- PackedDirectory.h - A directory as one fuzz input --------*- C++ -*-===//
//
// The directory readers (a `lowbit quantize` directory, a KV cache) read a
// fixed set of files. A fuzz input holds them in a fixed order, separated
// by kSeparator (fuzz/pack.py writes it); an empty or missing part is a
// missing file. The parts are written to a scratch directory of the
// process's own, which the reader under test then opens by path, as the
// CLI does.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_FUZZ_PACKEDDIRECTORY_H
#define LOWBIT_FUZZ_PACKEDDIRECTORY_H

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <string_view>
#include <unistd.h>

namespace lowbit::fuzz {

inline constexpr std::string_view kSeparator = "\n--lowbit-fuzz-file--\n";

/// A directory of its own for this process, removed when destroyed.
class ScratchDirectory {
public:
  explicit ScratchDirectory(std::string_view stem) {
    path = (std::filesystem::temp_directory_path() /
            (std::string(stem) + "-XXXXXX"))
               .string();
    if (!mkdtemp(path.data())) {
      std::perror("mkdtemp");
      std::abort();
    }
  }
  ScratchDirectory(const ScratchDirectory &) = delete;
  ScratchDirectory &operator=(const ScratchDirectory &) = delete;
  ~ScratchDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  const std::string &str() const { return path; }

private:
  std::string path;
};

/// Replaces the files `names` of `directory` with the parts of `input`, in
/// order; names of empty parts and past the last part are removed.
inline void unpackDirectory(std::string_view input,
                            const std::string &directory,
                            std::span<const char *const> names) {
  bool more = true;
  for (const char *name : names) {
    std::filesystem::path path = std::filesystem::path(directory) / name;
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
    if (!more)
      continue;
    size_t end = input.find(kSeparator);
    std::string_view part = input.substr(0, end);
    if (!part.empty())
      std::ofstream(path, std::ios::binary)
          .write(part.data(), std::streamsize(part.size()));
    more = end != std::string_view::npos;
    if (more)
      input.remove_prefix(end + kSeparator.size());
  }
}

} // namespace lowbit::fuzz

#endif // LOWBIT_FUZZ_PACKEDDIRECTORY_H
