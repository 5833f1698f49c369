//===- CommandLine.cpp - Option parsing shared by the subcommands ---------===//

#include "tools/lowbit/CommandLine.h"

#include "runtime/cache/KernelCache.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

namespace lowbit::cli {

std::optional<ParsedCommandLine>
parseCommandLine(std::string_view command,
                 std::span<const std::string_view> args,
                 std::span<const OptionSpec> options, std::string *error) {
  ParsedCommandLine parsed;
  bool operandsOnly = false;
  for (size_t index = 0; index < args.size(); ++index) {
    std::string_view arg = args[index];
    if (operandsOnly || !arg.starts_with("--")) {
      if (!operandsOnly && arg == "-h") {
        parsed.help = true;
        continue;
      }
      parsed.operands.push_back(arg);
      continue;
    }
    if (arg == "--") {
      operandsOnly = true;
      continue;
    }
    if (arg == "--help") {
      parsed.help = true;
      continue;
    }

    std::string_view body = arg.substr(2);
    std::optional<std::string_view> inlineValue;
    if (size_t equals = body.find('='); equals != std::string_view::npos) {
      inlineValue = body.substr(equals + 1);
      body = body.substr(0, equals);
    }
    auto spec = std::find_if(
        options.begin(), options.end(),
        [&](const OptionSpec &option) { return option.name == body; });
    if (spec == options.end()) {
      *error = fmt::format("unknown option '--{}' for '{}'", body, command);
      return std::nullopt;
    }
    if (parsed.values.contains(body) || parsed.flags.contains(body)) {
      *error = fmt::format("option '--{}' given more than once", body);
      return std::nullopt;
    }
    if (!spec->takesValue) {
      if (inlineValue) {
        *error = fmt::format("option '--{}' takes no value", body);
        return std::nullopt;
      }
      parsed.flags.emplace(body);
      continue;
    }
    if (!inlineValue) {
      if (index + 1 == args.size()) {
        *error = fmt::format("option '--{}' needs a value", body);
        return std::nullopt;
      }
      inlineValue = args[++index];
    }
    if (spec->repeatable)
      parsed.lists[std::string(body)].emplace_back(*inlineValue);
    else
      parsed.values.emplace(std::string(body), std::string(*inlineValue));
  }
  return parsed;
}

std::optional<ParsedCommandLine>
parseCommandLineOrHelp(std::string_view command,
                       std::span<const std::string_view> args,
                       std::span<const OptionSpec> options,
                       std::string_view usage, CommandResult *done) {
  std::string error;
  std::optional<ParsedCommandLine> parsed =
      parseCommandLine(command, args, options, &error);
  if (!parsed) {
    *done = fail(error);
    return std::nullopt;
  }
  if (parsed->help) {
    fmt::print("{}", usage);
    *done = std::nullopt;
    return std::nullopt;
  }
  return parsed;
}

// Messages quote what users wrote, in arguments and in files (a JSON
// "\u001b" decodes to ESC): a control byte printed as it is would reach
// the terminal as a control sequence. Newlines and tabs lay messages out.
void printError(std::string_view message) {
  std::string printable;
  printable.reserve(message.size());
  for (char c : message) {
    auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && c != '\n' && c != '\t') || byte == 0x7f)
      printable +=
          c == '\r' ? std::string("\\r") : fmt::format("\\x{:02x}", byte);
    else
      printable += c;
  }
  fmt::print(stderr, "lowbit: error: {}\n", printable);
}

CommandResult checkCacheEnvironment() {
  Expected<runtime::CacheOptions> options =
      runtime::CacheOptions::fromEnvironment();
  if (!options)
    return fail(options.error().message);
  return std::nullopt;
}

std::optional<int64_t> integerOption(const ParsedCommandLine &parsed,
                                     std::string_view name, int64_t fallback,
                                     int64_t minimum, int64_t maximum,
                                     std::string *error) {
  const std::string *text = parsed.value(name);
  if (!text)
    return fallback;
  int64_t value = 0;
  auto [end, status] =
      std::from_chars(text->data(), text->data() + text->size(), value);
  if (text->empty() || status != std::errc() ||
      end != text->data() + text->size() || value < minimum ||
      value > maximum) {
    *error = fmt::format("--{} must be an integer from {} to {}, got '{}'",
                         name, minimum, maximum, *text);
    return std::nullopt;
  }
  return value;
}

} // namespace lowbit::cli
