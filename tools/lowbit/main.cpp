//===- main.cpp - The lowbit command-line tool ----------------------------===//
//
// Dispatches to a subcommand and is the only place that turns an error into
// an exit code.
//
//===----------------------------------------------------------------------===//

#include "tools/lowbit/CommandLine.h"
#include "tools/lowbit/Commands.h"
#include "tools/lowbit/Diagnostics.h"
#include "tools/lowbit/JitBackend.h"

#include <cstdio>
#include <exception>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace lowbit::cli {

void printError(std::string_view message) {
  fmt::print(stderr, "lowbit: error: {}\n", message);
}

namespace {

/// Whether a command compiles kernels or manages their cache, and so reads
/// LOWBIT_CACHE: those refuse a value they do not know before they start,
/// instead of silently using the default.
enum class CacheUse : bool { None, Reads };

struct Subcommand {
  std::string_view name;
  std::string_view summary;
  CommandResult (*run)(Arguments);
  CacheUse cache;
};

constexpr Subcommand kSubcommands[] = {
    {"formats", "list the number formats and named schemes", runFormats,
     CacheUse::None},
    {"encode", "convert values to a format's codes", runEncode, CacheUse::None},
    {"decode", "convert codes of a format to values", runDecode,
     CacheUse::None},
    {"compile", "print a kernel spec's kernel: MLIR, loops, LLVM IR or PTX",
     runCompile, CacheUse::Reads},
    {"quantize", "quantize a .npy tensor with a scheme", runQuantize,
     CacheUse::Reads},
    {"dequantize", "turn a quantized directory back into a .npy tensor",
     runDequantize, CacheUse::Reads},
    {"eval", "error tables of the schemes on synthetic data", runEval,
     CacheUse::None},
    {"aot", "write PTX/cubin bundles with a manifest for the MLIR-free runtime",
     runAot, CacheUse::Reads},
    {"demo", "JIT every scheme for the CPU and sm_90a, check it bit-exact",
     runDemo, CacheUse::Reads},
    {"cache", "show, list or clear the disk kernel cache", runCache,
     CacheUse::Reads},
    {"report", "static report of each GPU kernel: widths, occupancy, bandwidth",
     runReport, CacheUse::Reads},
    {"kv", "a quantized KV cache on .npy files: init, append, dequantize, "
           "attend",
     runKv, CacheUse::None},
};

bool asksForHelp(Arguments args) {
  for (std::string_view arg : args) {
    if (arg == "--")
      return false;
    if (arg == "--help" || arg == "-h")
      return true;
  }
  return false;
}

void printUsage() {
  fmt::print("usage: lowbit <command> [options] [arguments]\n\n"
             "commands:\n");
  for (const Subcommand &subcommand : kSubcommands)
    fmt::print("  {:<10} {}\n", subcommand.name, subcommand.summary);
  fmt::print("\n'lowbit <command> --help' describes one command.\n");
}

CommandResult dispatch(Arguments args) {
  if (args.empty())
    return fail("no command given; 'lowbit --help' lists them");
  std::string_view name = args.front();
  if (name == "--help" || name == "-h" || name == "help") {
    printUsage();
    return std::nullopt;
  }
  for (const Subcommand &subcommand : kSubcommands) {
    if (subcommand.name != name)
      continue;
    if (subcommand.cache == CacheUse::Reads && !asksForHelp(args.subspan(1)))
      if (CommandResult invalid = checkCacheEnvironment())
        return invalid;
    return subcommand.run(args.subspan(1));
  }
  if (name.starts_with("-"))
    return fail(fmt::format("unknown option '{}'; 'lowbit --help' lists the "
                            "commands",
                            name));
  return fail(fmt::format(
      "unknown command '{}'; 'lowbit --help' lists the commands", name));
}

} // namespace
} // namespace lowbit::cli

int main(int argc, char **argv) {
  using namespace lowbit::cli;
  std::vector<std::string_view> args(argv + 1, argv + argc);
  // A last resort only (e.g. out of memory): commands report every expected
  // failure as a value, but the tool must still never abort.
  int exitCode = 0;
  try {
    if (CommandResult error = dispatch(args)) {
      printError(error->message);
      exitCode = kExitUsage;
    }
  } catch (const std::exception &exception) {
    printError(fmt::format("internal error: {}", exception.what()));
    exitCode = 1;
  }
  // JIT engines must go before LLVM's statics do (see JitBackend.h).
  releaseJitKernels();
  return exitCode;
}
