//===- KernelSpecFuzzer.cpp - Fuzz the kernel spec text
//--------------------===//
//
// Input: one spec line (`quantize mxfp4 rows=4 cols=64`, the compact
// `scheme(...)` form, ...). A spec that parses must print canonically and
// read back equal, and the validator must answer without crashing.
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzCheck.h"
#include "runtime/spec/KernelSpec.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  std::string error;
  std::optional<lowbit::KernelSpec> spec =
      lowbit::parseKernelSpec(text, &error);
  if (!spec) {
    LOWBIT_FUZZ_CHECK(!error.empty(), "a refused spec names its problem");
  } else {
    (void)lowbit::validateKernelSpec(*spec, &error);
    std::string printed = lowbit::printKernelSpec(*spec);
    std::optional<lowbit::KernelSpec> reread =
        lowbit::parseKernelSpec(printed, &error);
    LOWBIT_FUZZ_CHECK(reread.has_value(), "the printed spec parses");
    LOWBIT_FUZZ_CHECK(*reread == *spec, "the printed spec reads back equal");
    LOWBIT_FUZZ_CHECK(lowbit::printKernelSpec(*reread) == printed,
                      "printing is canonical");
  }
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
