//===- OutputPaths.cpp - Outputs that never alias inputs ------------------===//

#include "tools/lowbit/OutputPaths.h"

#include <filesystem>

#include <fmt/format.h>

namespace lowbit::cli {

namespace fs = std::filesystem;

std::string resolvePath(const std::string &path) {
  std::error_code code;
  fs::path absolute = fs::absolute(path, code);
  if (code)
    return fs::path(path).lexically_normal().string();
  // weakly_canonical: realpath of the longest existing prefix, the rest
  // appended and normalized, so a path not yet created resolves too.
  fs::path resolved = fs::weakly_canonical(absolute, code);
  if (code)
    resolved = absolute.lexically_normal();
  std::string text = resolved.string();
  while (text.size() > 1 && text.back() == '/')
    text.pop_back();
  return text;
}

namespace {

/// Whether `inner` is `outer` or lies below it (both resolved).
bool within(const std::string &inner, const std::string &outer) {
  if (inner == outer)
    return true;
  std::string prefix = outer == "/" ? outer : outer + "/";
  return inner.starts_with(prefix);
}

/// Whether the two name one existing file by different names (a hard
/// link, a bind mount): the path text cannot tell.
bool sameFile(const std::string &first, const std::string &second) {
  std::error_code code;
  return fs::equivalent(first, second, code) && !code;
}

} // namespace

CommandPaths &CommandPaths::reads(std::string_view option,
                                  const std::string *path) {
  if (path)
    entries.push_back({std::string(option), *path, false});
  return *this;
}

CommandPaths &CommandPaths::writes(std::string_view option,
                                   const std::string *path) {
  if (path)
    entries.push_back({std::string(option), *path, true});
  return *this;
}

CommandResult CommandPaths::check() const {
  std::vector<std::string> resolved;
  for (const Entry &entry : entries)
    resolved.push_back(resolvePath(entry.given));
  for (size_t out = 0; out < entries.size(); ++out) {
    if (!entries[out].output)
      continue;
    for (size_t other = 0; other < entries.size(); ++other) {
      // Each pair of outputs once; every input against every output.
      if (other == out || (entries[other].output && other < out))
        continue;
      const std::string &path = resolved[out], &otherPath = resolved[other];
      bool overlap = within(path, otherPath) || within(otherPath, path) ||
                     sameFile(path, otherPath);
      if (!overlap)
        continue;
      const Entry &a = entries[out], &b = entries[other];
      std::string how = path == otherPath || sameFile(path, otherPath)
                            ? "is the same path as"
                        : within(path, otherPath) ? "lies inside"
                                                  : "contains";
      return fail(fmt::format(
          "--{} '{}' {} --{} '{}' ({}): the {} would {}; choose another "
          "path",
          a.option, a.given, how, b.option, b.given, otherPath,
          b.output ? "two outputs" : "output",
          b.output ? "overwrite each other" : "destroy the input"));
    }
  }
  return std::nullopt;
}

} // namespace lowbit::cli
