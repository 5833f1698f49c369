//===- CommandLine.h - Option parsing shared by the subcommands -*- C++ -*-===//
//
// A deliberately small parser: long options only ("--name value" or
// "--name=value"), because operands such as "-2.5" and "-inf" start with a
// single dash and must stay operands.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TOOLS_LOWBIT_COMMANDLINE_H
#define LOWBIT_TOOLS_LOWBIT_COMMANDLINE_H

#include "tools/lowbit/Diagnostics.h"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lowbit::cli {

struct OptionSpec {
  std::string_view name; ///< without the leading "--"
  bool takesValue;
  /// May be given more than once (each value kept, in order, in
  /// ParsedCommandLine::lists); other options may not.
  bool repeatable = false;
};

struct ParsedCommandLine {
  bool help = false;
  std::map<std::string, std::string, std::less<>> values;
  std::set<std::string, std::less<>> flags;
  /// The values of repeatable options, in the order given.
  std::map<std::string, std::vector<std::string>, std::less<>> lists;
  std::vector<std::string_view> operands;

  const std::string *value(std::string_view name) const {
    auto it = values.find(name);
    return it == values.end() ? nullptr : &it->second;
  }
  bool flag(std::string_view name) const { return flags.contains(name); }
  std::span<const std::string> list(std::string_view name) const {
    auto it = lists.find(name);
    return it == lists.end() ? std::span<const std::string>() : it->second;
  }
};

/// Parses `args` (the words after the subcommand). "-h"/"--help" set
/// `help`; "--" makes every later word an operand. An unknown, repeated or
/// incomplete option gives nullopt and a message in `error`.
std::optional<ParsedCommandLine>
parseCommandLine(std::string_view command,
                 std::span<const std::string_view> args,
                 std::span<const OptionSpec> options, std::string *error);

/// The prologue every command shares: parses `args` and answers --help by
/// printing `usage`. Returns nullopt when the command is done already;
/// `*done` then holds the error to report, or nothing after the usage.
std::optional<ParsedCommandLine>
parseCommandLineOrHelp(std::string_view command,
                       std::span<const std::string_view> args,
                       std::span<const OptionSpec> options,
                       std::string_view usage, CommandResult *done);

/// LOWBIT_CACHE and the cache directory, read as lowbit::Jit reads them
/// (runtime::CacheOptions::fromEnvironment): an unknown value is an error
/// naming it, not a silent default. main() checks it before every command
/// that compiles kernels or manages the cache.
CommandResult checkCacheEnvironment();

/// The integer option --`name`: decimal, in [minimum, maximum], else an
/// error naming the option, the range and the text; `fallback` when the
/// option is absent. Never wraps or narrows.
std::optional<int64_t> integerOption(const ParsedCommandLine &parsed,
                                     std::string_view name, int64_t fallback,
                                     int64_t minimum, int64_t maximum,
                                     std::string *error);

} // namespace lowbit::cli

#endif // LOWBIT_TOOLS_LOWBIT_COMMANDLINE_H
