//===- DecodeCommand.cpp - `lowbit decode` --------------------------------===//

#include "format/Format.h"
#include "tools/lowbit/CommandLine.h"
#include "tools/lowbit/Commands.h"
#include "tools/lowbit/NumberParsing.h"
#include "tools/lowbit/ValueFormatting.h"

#include <array>
#include <vector>

#include <fmt/format.h>

namespace lowbit::cli {

namespace {

constexpr std::string_view kUsage =
    "usage: lowbit decode --format F [--hex] CODE...\n\n"
    "Prints the exact value of each CODE of format F, one per line: the\n"
    "shortest decimal that reads back as the same number, or nan, inf,\n"
    "-inf, -0. --hex prints C hex-floats (0x1.cp+8) instead.\n"
    "CODE is 0x-hex or decimal and must fit in F's bits.\n";

constexpr std::array<OptionSpec, 2> kOptions = {{
    {"format", true},
    {"hex", false},
}};

} // namespace

CommandResult runDecode(Arguments args) {
  std::string error;
  CommandResult done;
  auto parsed = parseCommandLineOrHelp("decode", args, kOptions, kUsage, &done);
  if (!parsed)
    return done;

  const std::string *formatName = parsed->value("format");
  if (!formatName)
    return fail("'decode' needs --format");
  std::optional<Format> format = lookupFormat(*formatName, &error);
  if (!format)
    return fail(fmt::format("unknown format '{}': {}", *formatName, error));
  if (parsed->operands.empty())
    return fail("'decode' needs at least one CODE");

  // Format::decode masks wide codes; a CLI user who typed one made a
  // mistake, so it is rejected instead.
  std::vector<double> values;
  for (std::string_view text : parsed->operands) {
    std::optional<uint64_t> code = parseCode(text, &error);
    if (!code)
      return fail(error);
    if (*code >= format->codeCount())
      return fail(fmt::format("code {} does not fit in {} ({} bits)", text,
                              format->name(), format->bits()));
    values.push_back(format->decode(uint32_t(*code)));
  }
  bool hex = parsed->flag("hex");
  for (double value : values)
    fmt::print("{}\n", hex ? formatHexValue(value) : formatValue(value));
  return std::nullopt;
}

} // namespace lowbit::cli
