//===- CacheCommand.cpp - lowbit cache stats|list|clear -------------------===//
//
// The disk kernel cache (runtime/cache/KernelCache.h) from the command
// line. The directory is LOWBIT_CACHE_DIR (default ~/.cache/lowbit), as for
// every other use of the cache. `clear` asks no question and prints what it
// removed.
//
//===----------------------------------------------------------------------===//

#include "runtime/cache/KernelCache.h"
#include "tools/lowbit/Commands.h"

#include <fmt/format.h>

namespace lowbit::cli {

namespace {

constexpr std::string_view kCacheUsage =
    "usage: lowbit cache stats|list|clear\n\n"
    "The disk kernel cache in LOWBIT_CACHE_DIR (default ~/.cache/lowbit):\n"
    "  stats  the directory, the number of entries, valid and invalid, and\n"
    "         their total size\n"
    "  list   one line per entry: hash, kind, bytes, valid, chip, spec\n"
    "  clear  removes every entry, lock and stale temp file; prints the\n"
    "         count, and names (and exits non-zero for) any it cannot remove\n";

} // namespace

CommandResult runCache(Arguments args) {
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    fmt::print("{}", kCacheUsage);
    return std::nullopt;
  }
  if (args.size() != 1)
    return fail("lowbit cache takes one of stats, list, clear");
  std::string_view action = args[0];
  if (action != "stats" && action != "list" && action != "clear")
    return fail(fmt::format("unknown cache action '{}'; expected stats, list "
                            "or clear",
                            action));
  Expected<runtime::CacheOptions> options =
      runtime::CacheOptions::fromEnvironment();
  if (!options)
    return fail(options.error().message);
  const std::string &directory = options->directory;

  if (action == "clear") {
    Expected<runtime::ClearResult> cleared = runtime::clearDiskCache(directory);
    if (!cleared)
      return fail(cleared.error().message);
    fmt::print("removed {} file{} from {}\n", cleared->removed,
               cleared->removed == 1 ? "" : "s", directory);
    // Every file that could be removed was; each one that could not is
    // named, and the command fails.
    if (!cleared->failures.empty()) {
      std::string message;
      for (const std::string &failure : cleared->failures)
        message += (message.empty() ? "" : "\n") + failure;
      return fail(message);
    }
    return std::nullopt;
  }

  Expected<std::vector<runtime::DiskEntryInfo>> entries =
      runtime::listDiskCache(directory);
  if (!entries)
    return fail(entries.error().message);
  if (action == "list") {
    for (const runtime::DiskEntryInfo &entry : *entries) {
      if (!entry.valid) {
        fmt::print("{} invalid {} bytes: {}\n", entry.hashHex, entry.fileBytes,
                   entry.problem);
        continue;
      }
      fmt::print("{} {} {} bytes {} {}\n", entry.hashHex,
                 runtime::binaryKindName(entry.kind), entry.fileBytes,
                 entry.chip, entry.spec);
    }
    return std::nullopt;
  }
  size_t valid = 0;
  uint64_t bytes = 0;
  for (const runtime::DiskEntryInfo &entry : *entries) {
    valid += entry.valid;
    bytes += entry.fileBytes;
  }
  fmt::print("directory: {}\nmode: {}\nentries: {}\nvalid: {}\ninvalid: "
             "{}\nbytes: {}\n",
             directory, runtime::cacheModeName(options->mode), entries->size(),
             valid, entries->size() - valid, bytes);
  return std::nullopt;
}

} // namespace lowbit::cli
