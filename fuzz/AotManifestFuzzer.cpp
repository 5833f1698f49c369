//===- AotManifestFuzzer.cpp - Fuzz AOT bundle manifests
//-------------------===//
//
// Input: a manifest.json. A manifest that reads must write and read back
// to the same JSON, and every launch is evaluated (grid, block, scalar
// operands, packed arguments) against the shapes the manifest carries,
// exactly as the GPU runner does before a launch.
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzCheck.h"
#include "runtime/aot/Bundle.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

using namespace lowbit;

namespace {

void evaluateLaunches(const aot::BundleEntry &entry,
                      const aot::SizeInstance &size) {
  std::vector<uint64_t> addresses(size.shapes.size(), 0x1000);
  std::string error;
  for (const aot::Launch &launch : entry.launches) {
    (void)aot::evaluateLaunchFor(launch, size, &error, entry.workspaceWords);
    (void)aot::packArgumentsFor(launch, addresses, size, &error);
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  std::string error;
  std::optional<json::JsonValue> document = json::parseJson(text, &error);
  if (!document)
    return 0;
  std::optional<aot::Manifest> manifest =
      aot::manifestFromJson(*document, &error);
  if (!manifest) {
    LOWBIT_FUZZ_CHECK(!error.empty(), "a refused manifest names its problem");
    return 0;
  }
  std::string written = aot::toJson(*manifest).serialize();
  std::optional<json::JsonValue> rereadDocument =
      json::parseJson(written, &error);
  LOWBIT_FUZZ_CHECK(rereadDocument.has_value(), "the written manifest parses");
  std::optional<aot::Manifest> reread =
      aot::manifestFromJson(*rereadDocument, &error);
  LOWBIT_FUZZ_CHECK(reread.has_value(), "the written manifest reads");
  LOWBIT_FUZZ_CHECK(aot::toJson(*reread).serialize() == written,
                    "the written manifest reads back equal");
  for (const aot::BundleEntry &entry : manifest->entries) {
    if (entry.data)
      evaluateLaunches(entry, entry.data->size);
    if (entry.bench)
      evaluateLaunches(entry, *entry.bench);
  }
  return 0;
}
