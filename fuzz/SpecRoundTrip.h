//===- SpecRoundTrip.h - A kernel spec line must round-trip -----*- C++ -*-===//
//
// What the spec fuzzers check of one line: a refused spec names its
// problem, and an accepted one validates without crashing, prints
// canonically and reads back equal.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_FUZZ_SPECROUNDTRIP_H
#define LOWBIT_FUZZ_SPECROUNDTRIP_H

#include "fuzz/FuzzCheck.h"
#include "runtime/spec/KernelSpec.h"

#include <optional>
#include <string>
#include <string_view>

namespace lowbit::fuzz {

inline void checkSpecRoundTrip(std::string_view text) {
  std::string error;
  std::optional<KernelSpec> spec = parseKernelSpec(text, &error);
  if (!spec) {
    LOWBIT_FUZZ_CHECK(!error.empty(), "a refused spec names its problem");
    return;
  }
  (void)validateKernelSpec(*spec, &error);
  std::string printed = printKernelSpec(*spec);
  std::optional<KernelSpec> reread = parseKernelSpec(printed, &error);
  LOWBIT_FUZZ_CHECK(reread.has_value(), "the printed spec parses");
  LOWBIT_FUZZ_CHECK(*reread == *spec, "the printed spec reads back equal");
  LOWBIT_FUZZ_CHECK(printKernelSpec(*reread) == printed,
                    "printing is canonical");
}

} // namespace lowbit::fuzz

#endif // LOWBIT_FUZZ_SPECROUNDTRIP_H
