//===- ScratchDirectory.h - An empty directory per test ---------*- C++ -*-===//

#ifndef LOWBIT_TESTS_CHECKPOINT_SCRATCHDIRECTORY_H
#define LOWBIT_TESTS_CHECKPOINT_SCRATCHDIRECTORY_H

#include <filesystem>
#include <string>
#include <unistd.h>

namespace lowbit::checkpoint::testing {

/// An empty directory under the system's temporary directory, named after
/// the test and the process (so parallel ctest runs do not share one).
inline std::filesystem::path scratchDirectory(const std::string &name) {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("lowbit-checkpoint-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
  return path;
}

} // namespace lowbit::checkpoint::testing

#endif // LOWBIT_TESTS_CHECKPOINT_SCRATCHDIRECTORY_H
