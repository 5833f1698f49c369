//===- GgufFuzzer.cpp - Fuzz the GGUF reader ------------------------------===//
//
// Input: a whole GGUF file. A file the parser accepts must have its data
// section and every tensor inside the file, tiled at the aligned offsets;
// each 2-D Q8_0 / Q4_0 tensor that imports into lowbit's scheme must
// export back to its very bytes.
//
//===----------------------------------------------------------------------===//

#include "checkpoint/GgufWeights.h"
#include "fuzz/FuzzCheck.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>

using namespace lowbit::checkpoint;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::span<const std::byte> file(reinterpret_cast<const std::byte *>(data),
                                  size);
  lowbit::Expected<GgufHeader> header = parseGguf(file);
  if (!header) {
    LOWBIT_FUZZ_CHECK(!header.error().message.empty(),
                      "a refused file names its problem");
    return 0;
  }
  LOWBIT_FUZZ_CHECK(header->alignment != 0 &&
                        header->dataOffset % header->alignment == 0,
                    "the data section is aligned");
  for (const GgufTensorInfo &tensor : header->tensors) {
    LOWBIT_FUZZ_CHECK(header->dataOffset <= size &&
                          tensor.offset <= size - header->dataOffset &&
                          tensor.byteSize <=
                              size - header->dataOffset - tensor.offset,
                      "every tensor lies inside the file");
    LOWBIT_FUZZ_CHECK(tensor.offset % header->alignment == 0,
                      "every tensor is aligned");
    if (tensor.type->id != kGgmlQ8_0 && tensor.type->id != kGgmlQ4_0)
      continue;
    std::span<const std::byte> blocks =
        file.subspan(header->dataOffset + tensor.offset, tensor.byteSize);
    lowbit::Expected<lowbit::QuantizedTensor> imported =
        importGgufBlocks(tensor, blocks);
    if (!imported)
      continue;
    lowbit::Expected<std::vector<std::byte>> exported =
        exportGgufBlocks(*imported, tensor.type->id);
    LOWBIT_FUZZ_CHECK(exported.ok(), "an imported tensor exports");
    LOWBIT_FUZZ_CHECK(std::equal(exported->begin(), exported->end(),
                                 blocks.begin(), blocks.end()),
                      "an imported tensor exports to its bytes");
  }
  return 0;
}
