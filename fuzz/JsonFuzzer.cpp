//===- JsonFuzzer.cpp - Fuzz the JSON reader (meta.json, manifests)
//--------===//
//
// Input: a JSON document. One that parses must serialize and parse back
// to the same text, and the number accessors must not misbehave on any
// number text the reader lets through.
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzCheck.h"
#include "runtime/core/Json.h"

#include <cstddef>
#include <cstdint>
#include <string>

using lowbit::json::JsonValue;

namespace {

void touchNumbers(const JsonValue &value) {
  if (value.isNumber()) {
    (void)value.asInt();
    (void)value.asDouble();
  }
  for (const JsonValue &item : value.items())
    touchNumbers(item);
  for (const auto &[key, member] : value.members())
    touchNumbers(member);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  std::string error;
  std::optional<JsonValue> value = lowbit::json::parseJson(text, &error);
  if (!value) {
    LOWBIT_FUZZ_CHECK(!error.empty(), "a refused document names its problem");
    return 0;
  }
  touchNumbers(*value);
  std::string serialized = value->serialize();
  std::optional<JsonValue> reread = lowbit::json::parseJson(serialized, &error);
  LOWBIT_FUZZ_CHECK(reread.has_value(), "the serialized document parses");
  LOWBIT_FUZZ_CHECK(reread->serialize() == serialized,
                    "the serialized document reads back equal");
  return 0;
}
