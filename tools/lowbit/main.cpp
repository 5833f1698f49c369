//===- main.cpp - The lowbit command-line tool ----------------------------===//
//
// Dispatches to a subcommand and turns an error into an exit code. This is
// the MLIR-free front end: the commands that never compile run here, and
// `compile` is answered from the disk cache when it can be
// (CachedCompile.cpp). Everything else goes to the compiler library,
// loaded with dlopen only then (runtime/jit/CompilerLoader.h), so
// `lowbit formats` or a cached `lowbit compile` never loads MLIR or LLVM.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/InterruptCleanup.h"
#include "tools/lowbit/CommandLine.h"
#include "tools/lowbit/Commands.h"
#include "tools/lowbit/Diagnostics.h"
#include "tools/lowbit/QuantizeModelCommand.h"

#include "runtime/jit/CompilerLoader.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace lowbit::cli {

namespace {

/// Whether a command compiles kernels or manages their cache, and so reads
/// LOWBIT_CACHE: those refuse a value they do not know before they start,
/// instead of silently using the default.
enum class CacheUse : bool { None, Reads };

struct Subcommand {
  std::string_view name;
  std::string_view summary;
  /// Runs here; nullptr: runs in the compiler library.
  CommandResult (*run)(Arguments);
  CacheUse cache;
};

/// A command of the compiler library (CompilerLibrary.cpp).
constexpr CommandResult (*kInCompilerLibrary)(Arguments) = nullptr;

constexpr Subcommand kSubcommands[] = {
    {"formats", "list the number formats and named schemes", runFormats,
     CacheUse::None},
    {"encode", "convert values to a format's codes", runEncode, CacheUse::None},
    {"decode", "convert codes of a format to values", runDecode,
     CacheUse::None},
    {"compile", "print a kernel spec's kernel: MLIR, loops, LLVM IR or PTX",
     kInCompilerLibrary, CacheUse::Reads},
    {"quantize", "quantize a .npy tensor with a scheme", kInCompilerLibrary,
     CacheUse::Reads},
    {"dequantize", "turn a quantized directory back into a .npy tensor",
     kInCompilerLibrary, CacheUse::Reads},
    {"matmul", "Y = X . dequant(W)^T: a .npy times a quantized weight set",
     kInCompilerLibrary, CacheUse::Reads},
    {"eval", "error tables of the schemes on synthetic data", runEval,
     CacheUse::None},
    {"aot", "write PTX/cubin bundles with a manifest for the MLIR-free runtime",
     kInCompilerLibrary, CacheUse::Reads},
    {"demo", "JIT every scheme for the CPU and sm_90a, check it bit-exact",
     kInCompilerLibrary, CacheUse::Reads},
    {"cache", "show, list or clear the disk kernel cache", runCache,
     CacheUse::Reads},
    {"report", "static report of each GPU kernel: widths, occupancy, bandwidth",
     kInCompilerLibrary, CacheUse::Reads},
    {"kv",
     "a quantized KV cache on .npy files: init, append, dequantize, "
     "attend",
     runKv, CacheUse::None},
    {"checkpoint", "list the tensors of a safetensors checkpoint",
     runCheckpoint, CacheUse::None},
    {"quantize-model",
     "quantize a Hugging Face checkpoint (compressed-tensors or lowbit sets)",
     runQuantizeModel, CacheUse::None},
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
  size_t width = 0;
  for (const Subcommand &subcommand : kSubcommands)
    width = std::max(width, subcommand.name.size());
  for (const Subcommand &subcommand : kSubcommands)
    fmt::print("  {:<{}} {}\n", subcommand.name, width, subcommand.summary);
  fmt::print("\n'lowbit <command> --help' describes one command.\n");
}

/// `lowbit eval --fused` runs fused kernels: a compiler library command.
bool isFusedEval(Arguments args) {
  return args.size() >= 2 && args[0] == "eval" && args[1] == "--fused";
}

/// Runs the command in the compiler library, loading it now.
int runInCompilerLibrary(Arguments args) {
  Expected<const jit::CompilerLibrary *> library = jit::compilerLibrary();
  if (!library) {
    printError(library.error().message);
    return 1;
  }
  std::vector<std::string> words(args.begin(), args.end());
  std::vector<const char *> argv;
  for (const std::string &word : words)
    argv.push_back(word.c_str());
  argv.push_back(nullptr);
  std::fflush(stdout);
  return (*library)->runCommand(int(words.size()), argv.data());
}

/// The exit code, or nullopt with the error in `result`.
std::optional<int> dispatch(Arguments args, CommandResult &result) {
  if (args.empty()) {
    result = fail("no command given; 'lowbit --help' lists them");
    return std::nullopt;
  }
  std::string_view name = args.front();
  if (name == "--help" || name == "-h" || name == "help") {
    printUsage();
    return 0;
  }
  for (const Subcommand &subcommand : kSubcommands) {
    if (subcommand.name != name)
      continue;
    if (subcommand.cache == CacheUse::Reads && !asksForHelp(args.subspan(1)))
      if ((result = checkCacheEnvironment()))
        return std::nullopt;
    // A PTX kernel on disk needs no compiler.
    if (subcommand.name == "compile" && runCachedCompile(args.subspan(1)))
      return 0;
    if (!subcommand.run || isFusedEval(args))
      return runInCompilerLibrary(args);
    if ((result = subcommand.run(args.subspan(1))))
      return std::nullopt;
    return 0;
  }
  if (name.starts_with("-"))
    result = fail(fmt::format("unknown option '{}'; 'lowbit --help' lists the "
                              "commands",
                              name));
  else
    result = fail(fmt::format(
        "unknown command '{}'; 'lowbit --help' lists the commands", name));
  return std::nullopt;
}

} // namespace
} // namespace lowbit::cli

int main(int argc, char **argv) {
  using namespace lowbit::cli;
  std::vector<std::string_view> args(argv + 1, argv + argc);
  // Ctrl-C or SIGTERM during a write removes its temporaries.
  lowbit::runtime::installInterruptCleanup();
  // A last resort only (e.g. out of memory): commands report every expected
  // failure as a value, but the tool must still never abort.
  int exitCode = 0;
  try {
    CommandResult error;
    if (std::optional<int> code = dispatch(args, error)) {
      exitCode = *code;
    } else {
      printError(error->message);
      exitCode = kExitUsage;
    }
  } catch (const std::exception &exception) {
    printError(fmt::format("internal error: {}", exception.what()));
    exitCode = 1;
  }
  return exitCode;
}
