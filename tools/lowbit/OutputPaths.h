//===- OutputPaths.h - Outputs that never alias inputs ----------*- C++ -*-===//
//
// Every command that writes lists the paths it reads and writes here before
// it writes anything. An output that is an input, lies inside an input
// directory (a quantized set, a KV cache) or holds one, or that overlaps
// another output of the same command, is refused by option name: writing
// it would destroy what the command reads, or one output would overwrite
// the other (docs/runtime.md, "Output paths").
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TOOLS_LOWBIT_OUTPUTPATHS_H
#define LOWBIT_TOOLS_LOWBIT_OUTPUTPATHS_H

#include "tools/lowbit/Diagnostics.h"

#include <string>
#include <string_view>
#include <vector>

namespace lowbit::cli {

class CommandPaths {
public:
  /// A file or directory the command reads (`path` null: option absent).
  CommandPaths &reads(std::string_view option, const std::string *path);
  /// A file or directory the command writes or replaces.
  CommandPaths &writes(std::string_view option, const std::string *path);
  /// The first overlap of an output with an input or another output, as an
  /// error naming both options and the resolved path; nullopt if none.
  CommandResult check() const;

private:
  struct Entry {
    std::string option, given;
    bool output;
  };
  std::vector<Entry> entries;
};

/// `path` made absolute, with every existing component's symbolic links
/// resolved (realpath) and the rest, which may not exist yet, normalized
/// lexically: two spellings of one file give the same text.
std::string resolvePath(const std::string &path);

} // namespace lowbit::cli

#endif // LOWBIT_TOOLS_LOWBIT_OUTPUTPATHS_H
