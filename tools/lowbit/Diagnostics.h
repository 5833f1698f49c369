//===- Diagnostics.h - How lowbit's commands report errors ------*- C++ -*-===//
//
// Commands return errors as values; only main() prints them and turns them
// into an exit code, so a command never exits or aborts half-way.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TOOLS_LOWBIT_DIAGNOSTICS_H
#define LOWBIT_TOOLS_LOWBIT_DIAGNOSTICS_H

#include <optional>
#include <string>
#include <string_view>

namespace lowbit::cli {

/// Exit code for a bad command line or a bad argument value, as getopt-style
/// tools use, so scripts can tell "you asked wrongly" from a crash.
inline constexpr int kExitUsage = 2;

struct CommandError {
  std::string message;
};

/// nullopt means the command succeeded.
using CommandResult = std::optional<CommandError>;

inline CommandResult fail(std::string message) {
  return CommandError{std::move(message)};
}

/// Prints "lowbit: error: <message>" on stderr.
void printError(std::string_view message);

} // namespace lowbit::cli

#endif // LOWBIT_TOOLS_LOWBIT_DIAGNOSTICS_H
