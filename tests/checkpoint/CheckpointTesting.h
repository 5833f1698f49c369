//===- CheckpointTesting.h - Helpers of the checkpoint tests ----*- C++ -*-===//

#ifndef LOWBIT_TESTS_CHECKPOINT_CHECKPOINTTESTING_H
#define LOWBIT_TESTS_CHECKPOINT_CHECKPOINTTESTING_H

#include "checkpoint/ImportedWeight.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <unistd.h>
#include <vector>

namespace lowbit::checkpoint::testing {

/// The scratch directories of this process, removed when it exits: a test
/// binary used to leave them in the temporary directory, dozens a run.
struct ScratchDirectories {
  std::vector<std::filesystem::path> paths;
  ~ScratchDirectories() {
    for (const std::filesystem::path &path : paths) {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  }
};

inline ScratchDirectories &scratchDirectories() {
  static ScratchDirectories directories;
  return directories;
}

/// An empty directory under the system's temporary directory, named after
/// the test and the process (so parallel ctest runs do not share one), and
/// removed at exit.
inline std::filesystem::path scratchDirectory(const std::string &name) {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("lowbit-checkpoint-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
  scratchDirectories().paths.push_back(path);
  return path;
}

template <typename T>
std::vector<std::byte> bytesOf(const std::vector<T> &values) {
  std::vector<std::byte> out(values.size() * sizeof(T));
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

/// `tensors` written as a checkpoint in a scratch directory, opened, and
/// the directory removed.
inline Checkpoint writeAndOpen(const std::string &test,
                               const std::vector<OwnedTensor> &tensors) {
  std::filesystem::path directory = scratchDirectory(test);
  std::vector<TensorData> views;
  for (const OwnedTensor &tensor : tensors)
    views.push_back(tensor.view());
  REQUIRE(writeCheckpoint(directory.string(), views, 1 << 30).ok());
  Expected<Checkpoint> checkpoint = Checkpoint::open(directory.string());
  REQUIRE(checkpoint.ok());
  // The mappings outlive the names: nothing is left in the temporary
  // directory.
  std::filesystem::remove_all(directory);
  return std::move(checkpoint).value();
}

/// An exporter's tensors equal, by name, to those a test packed.
inline void checkSameTensors(const std::vector<OwnedTensor> &exported,
                             const std::vector<OwnedTensor> &packed) {
  REQUIRE(exported.size() == packed.size());
  for (const OwnedTensor &tensor : exported) {
    const OwnedTensor *expected = nullptr;
    for (const OwnedTensor &candidate : packed)
      if (candidate.name == tensor.name)
        expected = &candidate;
    REQUIRE(expected);
    CHECK(tensor.dtype == expected->dtype);
    CHECK(tensor.shape == expected->shape);
    CHECK(tensor.bytes == expected->bytes);
  }
}

} // namespace lowbit::checkpoint::testing

#endif // LOWBIT_TESTS_CHECKPOINT_CHECKPOINTTESTING_H
