//===- CompilerLibrary.cpp - The commands that compile, as a library ------===//
//
// liblowbit-compiler.so: the commands that may compile a kernel (compile,
// quantize, dequantize, aot, demo, report) with MLIR, LLVM and lowbit::Jit.
// The lowbit executable (main.cpp) links none of them and loads this
// library with dlopen when a command needs it (runtime/jit/CompilerLoader.h
// names the C entry points). lowbit::Jit built with LowbitJitLoader loads
// it the same way and compiles through its third entry point, the linked
// compiler's table (runtime/jit/CompilerBackend.h).
//
//===----------------------------------------------------------------------===//

#include "runtime/cache/KernelKey.h"
#include "runtime/core/InterruptCleanup.h"
#include "runtime/driver/NvJitLink.h"
#include "runtime/jit/CompilerBackend.h"
#include "tools/lowbit/Commands.h"
#include "tools/lowbit/Diagnostics.h"
#include "tools/lowbit/JitBackend.h"

#include <cstdio>
#include <exception>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace lowbit::cli {
namespace {

struct LibraryCommand {
  std::string_view name;
  CommandResult (*run)(Arguments);
};

constexpr LibraryCommand kLibraryCommands[] = {
    {"compile", runCompile},
    {"quantize", runQuantize},
    {"dequantize", runDequantize},
    {"matmul", runMatmul},
    {"aot", runAot},
    {"demo", runDemo},
    {"report", runReport},
};

int runCommand(Arguments args) {
  // `eval --fused` compiles kernels; the front end sends it here.
  if (args.size() >= 2 && args[0] == "eval" && args[1] == "--fused") {
    if (CommandResult error = runEvalFused(args.subspan(2))) {
      printError(error->message);
      return kExitUsage;
    }
    return 0;
  }
  for (const LibraryCommand &command : kLibraryCommands) {
    if (args.empty() || command.name != args.front())
      continue;
    if (CommandResult error = command.run(args.subspan(1))) {
      printError(error->message);
      return kExitUsage;
    }
    return 0;
  }
  printError(fmt::format("the compiler library has no command '{}'",
                         args.empty() ? "" : args.front()));
  return kExitUsage;
}

} // namespace
} // namespace lowbit::cli

extern "C" __attribute__((visibility("default"))) const char *
lowbit_compiler_build() {
  return lowbit::runtime::compilerBuildHash().data();
}

extern "C" __attribute__((visibility("default"))) const void *
lowbit_compiler_backend() {
  return &lowbit::jit::linkedCompilerBackend();
}

extern "C" __attribute__((visibility("default"))) int
lowbit_compiler_run_command(int argc, const char *const *argv) {
  using namespace lowbit::cli;
  std::vector<std::string_view> args(argv, argv + argc);
  // This library holds its own copy of the runtime's write registry, so it
  // installs its own handlers too; they chain to the front end's
  // (runtime/core/InterruptCleanup.h).
  lowbit::runtime::installInterruptCleanup();
  // A last resort only (e.g. out of memory): commands report every expected
  // failure as a value, but the tool must still never abort.
  int exitCode = 0;
  try {
    exitCode = runCommand(args);
  } catch (const std::exception &exception) {
    printError(fmt::format("internal error: {}", exception.what()));
    exitCode = 1;
  }
  // JIT engines must go before LLVM's statics do (see JitBackend.h).
  releaseJitKernels();
  // nvJitLink's warm-up thread must be done before exit() runs nvJitLink's
  // exit handlers: a command that failed fast (a GPU compile refused) hung
  // or aborted at exit while the thread was still linking.
  (void)lowbit::runtime::waitForNvJitLinkWarmup();
  std::fflush(stdout);
  return exitCode;
}
