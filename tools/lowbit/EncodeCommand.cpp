//===- EncodeCommand.cpp - `lowbit encode` --------------------------------===//

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
    "usage: lowbit encode --format F [--from f32|f16|bf16] [--no-saturate] "
    "VALUE...\n\n"
    "Prints the code of each VALUE in format F, one per line, as 0x-hex.\n"
    "VALUE is a decimal or C hex-float (0x1.8p3), inf, -inf, nan or -0.\n"
    "It is first rounded to the --from type (default f32), round to nearest\n"
    "even, as a kernel fed that type sees it, then converted with PTX cvt\n"
    "semantics: round to nearest even; overflow and inf give the signed max\n"
    "(.satfinite), or with --no-saturate inf, or NaN where F has no inf.\n";

constexpr std::array<OptionSpec, 3> kOptions = {{
    {"format", true},
    {"from", true},
    {"no-saturate", false},
}};

} // namespace

CommandResult runEncode(Arguments args) {
  std::string error;
  CommandResult done;
  auto parsed = parseCommandLineOrHelp("encode", args, kOptions, kUsage, &done);
  if (!parsed)
    return done;

  const std::string *formatName = parsed->value("format");
  if (!formatName)
    return fail("'encode' needs --format");
  std::optional<Format> format = lookupFormat(*formatName, &error);
  if (!format)
    return fail(fmt::format("unknown format '{}': {}", *formatName, error));

  SourceType sourceType = SourceType::F32;
  if (const std::string *fromName = parsed->value("from")) {
    std::optional<SourceType> parsedType = parseSourceType(*fromName);
    if (!parsedType)
      return fail(fmt::format(
          "unknown --from type '{}': expected f32, f16 or bf16", *fromName));
    sourceType = *parsedType;
  }
  if (parsed->operands.empty())
    return fail("'encode' needs at least one VALUE");

  EncodeOptions options;
  options.saturate = !parsed->flag("no-saturate");
  std::vector<uint32_t> codes;
  for (std::string_view text : parsed->operands) {
    std::optional<float> value = parseValue(text, sourceType, &error);
    if (!value)
      return fail(error);
    codes.push_back(encode(*format, *value, options));
  }
  for (uint32_t code : codes)
    fmt::print("{}\n", formatCode(*format, code));
  return std::nullopt;
}

} // namespace lowbit::cli
