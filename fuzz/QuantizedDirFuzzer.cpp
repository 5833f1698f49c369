//===- QuantizedDirFuzzer.cpp - Fuzz meta.json and a quantized directory
//---===//
//
// Input: a quantized directory packed into one byte string (fuzz/pack.py
// writes it): the files meta.json, q.npy, scales.npy, zeros.npy and
// global_scale.npy in that order, separated by kSeparator. A missing part
// is a missing file. The parts are written to a scratch directory and read
// back through the runtime/files reader (QuantizedFiles), as
// `lowbit dequantize` does; what it accepts is valid for its scheme and
// dequantizes.
//
//===----------------------------------------------------------------------===//

#include "format/Quantize.h"
#include "fuzz/FuzzCheck.h"
#include "runtime/files/QuantizedFiles.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <unistd.h>

using namespace lowbit;

namespace {

constexpr std::string_view kSeparator = "\n--lowbit-fuzz-file--\n";
constexpr const char *kFiles[] = {"meta.json", "q.npy", "scales.npy",
                                  "zeros.npy", "global_scale.npy"};

/// A directory of its own for this process, removed at exit.
struct ScratchDirectory {
  std::string path;
  ScratchDirectory() {
    path = (std::filesystem::temp_directory_path() / "lowbit-fuzz-qdir-XXXXXX")
               .string();
    if (!mkdtemp(path.data())) {
      std::perror("mkdtemp");
      std::abort();
    }
  }
  ~ScratchDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

const std::string &scratchDirectory() {
  static const ScratchDirectory directory;
  return directory.path;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view input(reinterpret_cast<const char *>(data), size);
  const std::string &directory = scratchDirectory();
  for (const char *name : kFiles) {
    std::filesystem::path path = std::filesystem::path(directory) / name;
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
    if (input.data() == nullptr)
      continue;
    size_t end = input.find(kSeparator);
    std::string_view part = input.substr(0, end);
    std::ofstream(path, std::ios::binary)
        .write(part.data(), std::streamsize(part.size()));
    input = end == std::string_view::npos
                ? std::string_view()
                : input.substr(end + kSeparator.size());
  }
  std::string error;
  std::optional<QuantizedTensor> tensor =
      files::readQuantizedDirectory(directory, &error);
  if (!tensor) {
    LOWBIT_FUZZ_CHECK(!error.empty(), "a refused directory names its problem");
    return 0;
  }
  LOWBIT_FUZZ_CHECK(validateQuantized(*tensor, &error),
                    "an accepted directory holds a valid tensor");
  std::optional<std::vector<float>> values = dequantize(*tensor, &error);
  LOWBIT_FUZZ_CHECK(values && values->size() ==
                                  size_t(tensor->rows) * size_t(tensor->cols),
                    "an accepted directory dequantizes");
  return 0;
}
