//===- DemoCommand.cpp - `lowbit demo`, the tour of what lowbit knows -----===//
//
// The demo must be fast and deterministic: it only asks the format model,
// and every input is a fixed function of the format's own parameters.
//
//===----------------------------------------------------------------------===//

#include "format/Format.h"
#include "tools/lowbit/CommandLine.h"
#include "tools/lowbit/Commands.h"
#include "tools/lowbit/ValueFormatting.h"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace lowbit::cli {

namespace {

constexpr std::string_view kUsage =
    "usage: lowbit demo\n\n"
    "Prints the formats table, a few round trips per named format\n"
    "(value -> code -> decoded value, saturating, round to nearest even)\n"
    "and the named schemes.\n";

struct RoundTripInput {
  std::string text; ///< as it would be typed to `lowbit encode`
  float value;
  std::string note;
};

RoundTripInput exactInput(double value, std::string note) {
  return {formatValue(float(value)), float(value), std::move(note)};
}

/// Inputs that show each rule at work: exact values, rounding, saturation,
/// the subnormal range and NaN. Each input is what `lowbit encode` would
/// read from the same decimal text.
std::vector<RoundTripInput> roundTripInputs(const Format &format) {
  std::vector<RoundTripInput> inputs = {
      exactInput(1.0, ""),
      exactInput(-2.5, ""),
      {"0.1", 0.1f, "not exact, rounds"},
      exactInput(format.maxValue(), "max"),
      // 2 * max overflows f32 for e8m0; the input then is inf, which
      // saturates the same way.
      exactInput(2 * format.maxValue(), "2 * max, saturates"),
  };
  if (format.hasSubnormals()) {
    inputs.push_back(exactInput(format.minSubnormal(), "min subnormal"));
    inputs.push_back(
        exactInput(format.minSubnormal() / 2, "half of it, tie to even"));
  } else if (format.isFloat()) {
    inputs.push_back(exactInput(format.minNormal(), "min normal"));
  }
  inputs.push_back({"nan", std::numeric_limits<float>::quiet_NaN(), ""});
  return inputs;
}

void printRoundTrips(const Format &format) {
  fmt::print("{} ({} bits)\n", format.name(), format.bits());
  std::vector<std::vector<std::string>> rows;
  size_t valueWidth = 0, codeWidth = 0, decodedWidth = 0;
  for (const RoundTripInput &input : roundTripInputs(format)) {
    uint32_t code = encode(format, input.value);
    rows.push_back({input.text, formatCode(format, code),
                    formatValue(format.decode(code)), input.note});
    valueWidth = std::max(valueWidth, rows.back()[0].size());
    codeWidth = std::max(codeWidth, rows.back()[1].size());
    decodedWidth = std::max(decodedWidth, rows.back()[2].size());
  }
  for (const auto &row : rows) {
    std::string line = fmt::format("  {:>{}} -> {:<{}} -> {}", row[0],
                                   valueWidth, row[1], codeWidth, row[2]);
    if (!row[3].empty())
      line +=
          fmt::format("{:{}}  ({})", "", decodedWidth - row[2].size(), row[3]);
    fmt::print("{}\n", line);
  }
}

} // namespace

CommandResult runDemo(Arguments args) {
  std::string error;
  auto parsed = parseCommandLine("demo", args, {}, &error);
  if (!parsed)
    return fail(error);
  if (parsed->help) {
    fmt::print("{}", kUsage);
    return std::nullopt;
  }
  if (!parsed->operands.empty())
    return fail(fmt::format("'demo' takes no arguments, got '{}'",
                            parsed->operands.front()));

  fmt::print("lowbit demo: the format model\n\n== Formats ==\n");
  printFormatsTable();
  fmt::print("\n== Round trips: f32 value -> code -> decoded value "
             "(saturating, round to nearest even) ==\n");
  for (const Format &format : namedFormats())
    printRoundTrips(format);
  fmt::print("\n== Schemes ==\n");
  printSchemesList();
  return std::nullopt;
}

} // namespace lowbit::cli
