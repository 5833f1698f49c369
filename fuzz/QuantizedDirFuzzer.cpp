//===- QuantizedDirFuzzer.cpp - Fuzz a `lowbit quantize` directory --------===//
//
// Input: a quantized directory packed into one byte string (fuzz/pack.py
// writes it; fuzz/PackedDirectory.h unpacks it): the files meta.json,
// q.npy, scales.npy, zeros.npy, global_scale.npy and manifest.json in that
// order. A set is read only through its manifest, which holds each file's
// size and SHA-256, so mutations of the other files would never get past
// the checksums: an input without a manifest.json part gets one written for
// the files it has (the seeds are packed so), an input with one keeps it
// (the manifest's own parser is fuzzed). The directory is read back through
// the runtime/files reader (QuantizedFiles), as `lowbit dequantize` does;
// what it accepts is valid for its scheme and dequantizes.
//
//===----------------------------------------------------------------------===//

#include "format/Quantize.h"
#include "fuzz/FuzzCheck.h"
#include "fuzz/PackedDirectory.h"
#include "runtime/core/Json.h"
#include "runtime/core/Sha256.h"
#include "runtime/files/QuantizedFiles.h"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>

using namespace lowbit;

namespace {

constexpr const char *kFiles[] = {"meta.json",        "q.npy",
                                  "scales.npy",       "zeros.npy",
                                  "global_scale.npy", "manifest.json"};

/// Writes the manifest `lowbit quantize` would write for the files present.
void writeManifest(const std::string &directory) {
  json::JsonValue listed = json::JsonValue::object();
  for (const char *name : kFiles) {
    std::ifstream file(std::filesystem::path(directory) / name,
                       std::ios::binary);
    if (!file)
      continue;
    std::string bytes((std::istreambuf_iterator<char>(file)),
                      std::istreambuf_iterator<char>());
    json::JsonValue entry = json::JsonValue::object();
    entry.set("bytes", json::JsonValue::number(int64_t(bytes.size())));
    entry.set("sha256", json::JsonValue::string(runtime::sha256Hex(bytes)));
    listed.set(name, std::move(entry));
  }
  json::JsonValue manifest = json::JsonValue::object();
  manifest.set("format", json::JsonValue::string("lowbit-quantized-set-1"));
  manifest.set("files", std::move(listed));
  std::string text = manifest.serialize();
  std::ofstream(std::filesystem::path(directory) / "manifest.json",
                std::ios::binary)
      .write(text.data(), std::streamsize(text.size()));
}

const std::string &scratchDirectory() {
  static const fuzz::ScratchDirectory directory("lowbit-fuzz-qdir");
  return directory.str();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &directory = scratchDirectory();
  fuzz::unpackDirectory(
      std::string_view(reinterpret_cast<const char *>(data), size), directory,
      kFiles);
  if (!std::filesystem::exists(std::filesystem::path(directory) /
                               "manifest.json"))
    writeManifest(directory);
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
