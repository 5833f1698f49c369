//===- KernelSpecFuzzer.cpp - Fuzz the kernel spec text
//--------------------===//
//
// Input: one spec line (`quantize mxfp4 rows=4 cols=64`, the compact
// `scheme(...)` form, ...). A spec that parses must print canonically and
// read back equal, and the validator must answer without crashing.
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzCheck.h"
#include "fuzz/SpecRoundTrip.h"
#include "runtime/spec/KernelSpec.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  lowbit::fuzz::checkSpecRoundTrip(text);
  std::string error;
  // The scheme text alone (the CLI's --scheme takes it).
  if (std::optional<lowbit::Scheme> scheme =
          lowbit::parseSchemeText(text, &error)) {
    std::string printed = lowbit::printSchemeText(*scheme);
    std::optional<lowbit::Scheme> reread =
        lowbit::parseSchemeText(printed, &error);
    LOWBIT_FUZZ_CHECK(reread.has_value(), "the printed scheme parses");
    LOWBIT_FUZZ_CHECK(lowbit::printSchemeText(*reread) == printed,
                      "the printed scheme reads back equal");
  }
  return 0;
}
