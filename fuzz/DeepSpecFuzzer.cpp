//===- DeepSpecFuzzer.cpp - Fuzz the spec parsers with deep, long text ----===//
//
// Input: a short program that expands into a long spec line, so that the
// fuzzer reaches the sizes a byte-level mutator seldom builds: thousands
// of nested parentheses, unary minus signs or calls, chains of binary
// operators, and chains of prologues. Each pair of bytes is (fragment,
// repeat count); the fragments are the tokens of the `map(...)` grammar
// and of a prologue chain. Whatever comes out, the parsers must answer
// (docs/fusion.md lists the limits) and an accepted spec must print and
// read back equal.
//
//===----------------------------------------------------------------------===//

#include "fuzz/SpecRoundTrip.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace {

constexpr std::array<std::string_view, 16> kFragments = {
    "(",    ")",       "-",    "x",  "+",    "*",    "/",    "1.5",
    "abs(", "min(x, ", "max(", ", ", "exp(", "map(", ") | ", "rmsnorm | "};

/// Up to 15,361 repeats of a fragment per pair: 10,000 levels in 2 bytes.
/// The text stops growing at 1 MiB.
std::string expand(const uint8_t *data, size_t size) {
  std::string text;
  for (size_t index = 0; index + 1 < size && text.size() < (1u << 20);
       index += 2) {
    std::string_view fragment = kFragments[data[index] % kFragments.size()];
    size_t repeats =
        1 + size_t(data[index] / kFragments.size()) * (data[index + 1] + 1) * 4;
    for (size_t count = 0; count < repeats; ++count)
      text += fragment;
  }
  return text;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string body = expand(data, size);
  // As a map expression, then as the front of a kernel spec.
  for (const std::string &text :
       {"map(" + body + ") | quantize int8 rows=2 cols=16",
        body + " | quantize int8 rows=2 cols=16"})
    lowbit::fuzz::checkSpecRoundTrip(text);
  return 0;
}
