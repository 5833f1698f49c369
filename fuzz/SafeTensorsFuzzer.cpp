//===- SafeTensorsFuzzer.cpp - Fuzz the safetensors header parser ---------===//
//
// Input: a whole safetensors file (length field, JSON header, buffer). A
// file the parser accepts must have every range inside its buffer, and
// must write back (serializeFile, tensors in buffer order) to a file that
// parses to the same header with the same bytes in each range.
//
//===----------------------------------------------------------------------===//

#include "checkpoint/SafeTensors.h"
#include "fuzz/FuzzCheck.h"

#include <cstddef>
#include <cstdint>
#include <cstring>

using namespace lowbit::checkpoint;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::span<const std::byte> file(reinterpret_cast<const std::byte *>(data),
                                  size);
  uint64_t dataOffset = 0;
  lowbit::Expected<Header> header = parseFileBytes(file, &dataOffset);
  if (!header) {
    LOWBIT_FUZZ_CHECK(!header.error().message.empty(),
                      "a refused file names its problem");
    return 0;
  }
  LOWBIT_FUZZ_CHECK(dataOffset <= size, "the buffer starts inside the file");
  std::vector<TensorData> tensors;
  for (const TensorInfo &info : header->tensors) {
    LOWBIT_FUZZ_CHECK(info.begin <= info.end && info.end <= size - dataOffset,
                      "every range lies inside the buffer");
    tensors.push_back({info.name, info.dtype, info.shape,
                       file.subspan(dataOffset + info.begin, info.byteSize())});
  }
  lowbit::Expected<std::string> written =
      serializeFile(tensors, header->metadata);
  LOWBIT_FUZZ_CHECK(written.ok(), "an accepted file writes back");
  uint64_t rereadOffset = 0;
  lowbit::Expected<Header> reread =
      parseFileBytes(std::as_bytes(std::span(written->data(), written->size())),
                     &rereadOffset);
  LOWBIT_FUZZ_CHECK(reread.ok(), "the written file parses");
  LOWBIT_FUZZ_CHECK(reread->metadata == header->metadata,
                    "the metadata reads back equal");
  LOWBIT_FUZZ_CHECK(reread->tensors.size() == header->tensors.size(),
                    "every tensor reads back");
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo &info = reread->tensors[i];
    LOWBIT_FUZZ_CHECK(info.name == tensors[i].name &&
                          info.dtype == tensors[i].dtype &&
                          info.shape == tensors[i].shape,
                      "each tensor reads back with its name, dtype and shape");
    LOWBIT_FUZZ_CHECK(
        info.byteSize() == tensors[i].bytes.size() &&
            std::memcmp(written->data() + rereadOffset + info.begin,
                        tensors[i].bytes.data(), info.byteSize()) == 0,
        "each tensor's bytes read back equal");
  }
  return 0;
}
