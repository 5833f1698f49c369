//===- NpyFuzzer.cpp - Fuzz the .npy reader
//--------------------------------===//
//
// Input: the bytes of a .npy file. An array the reader accepts must
// serialize and read back with the same dtype, shape and bytes.
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzCheck.h"
#include "runtime/core/Npy.h"

#include <cstddef>
#include <cstdint>
#include <string>

using namespace lowbit;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view contents(reinterpret_cast<const char *>(data), size);
  std::string error;
  std::optional<npy::Array> array = npy::parseNpy(contents, &error);
  if (!array) {
    LOWBIT_FUZZ_CHECK(!error.empty(), "a refused file names its problem");
    return 0;
  }
  LOWBIT_FUZZ_CHECK(array->elementCount() >= 0, "the element count is sane");
  LOWBIT_FUZZ_CHECK(uint64_t(array->elementCount()) *
                            npy::dtypeSize(array->dtype) ==
                        array->bytes.size(),
                    "the data matches the shape");
  (void)array->shapeText();
  std::optional<std::string> serialized = npy::serializeNpy(*array, &error);
  LOWBIT_FUZZ_CHECK(serialized.has_value(), "an accepted array serializes");
  std::optional<npy::Array> reread = npy::parseNpy(*serialized, &error);
  LOWBIT_FUZZ_CHECK(reread.has_value(), "the serialized array parses");
  LOWBIT_FUZZ_CHECK(reread->dtype == array->dtype &&
                        reread->shape == array->shape &&
                        reread->bytes == array->bytes,
                    "the serialized array reads back equal");
  return 0;
}
