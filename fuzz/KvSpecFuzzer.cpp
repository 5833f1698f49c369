//===- KvSpecFuzzer.cpp - Fuzz the KV and attention kernel spec texts -----===//
//
// Input: one spec line, as lowbit::Jit, the C API, `lowbit aot` and a
// bundle manifest take it: kv_append/kv_dequantize (parseKvKernelSpec),
// kivi_* (parseKiviKernelSpec), kv_attend (parseKvAttentionSpec) and
// kivi_attend (parseKiviAttentionSpec). Every parser sees every input; a
// spec one accepts must print to a text that parses back equal and prints
// the same, and a refusal names its problem.
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzCheck.h"
#include "kv/KiviAttentionSpec.h"
#include "kv/KvAttentionSpec.h"
#include "kv/KvKernelSpec.h"
#include "kv/KvKiviKernelSpec.h"

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

using namespace lowbit::kv;

namespace {

/// parse, print, parse again: equal, and printing is canonical.
template <typename Spec, typename Parse, typename Print>
void checkRoundTrip(std::string_view text, Parse parse, Print print) {
  std::string error;
  std::optional<Spec> spec = parse(text, &error);
  if (!spec) {
    LOWBIT_FUZZ_CHECK(!error.empty(), "a refused spec names its problem");
    return;
  }
  std::string printed = print(*spec);
  std::optional<Spec> reread = parse(printed, &error);
  LOWBIT_FUZZ_CHECK(reread.has_value(), "the printed spec parses");
  // KvAttentionSpec has no operator==: its printed text (every field) is
  // compared instead, below.
  if constexpr (std::equality_comparable<Spec>)
    LOWBIT_FUZZ_CHECK(*reread == *spec, "the printed spec reads back equal");
  LOWBIT_FUZZ_CHECK(print(*reread) == printed, "printing is canonical");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  checkRoundTrip<KvKernelSpec>(text, parseKvKernelSpec, formatKvKernelSpec);
  checkRoundTrip<KiviKernelSpec>(text, parseKiviKernelSpec,
                                 formatKiviKernelSpec);
  checkRoundTrip<KvAttentionSpec>(text, parseKvAttentionSpec,
                                  printKvAttentionSpec);
  checkRoundTrip<KiviAttentionSpec>(text, parseKiviAttentionSpec,
                                    printKiviAttentionSpec);
  return 0;
}
