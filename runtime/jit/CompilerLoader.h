//===- CompilerLoader.h - The compiler library, loaded on demand -*- C++
//-*-===//
//
// The `lowbit` executable links no MLIR and no LLVM: it answers what needs
// no compiler (formats, encode, decode, eval, cache, --help, and `compile`
// on a disk-cache hit) itself, and loads the compiler library
// (liblowbit-compiler.so: MLIR, LLVM, lowbit::Jit and the commands that
// compile) with dlopen only when it must. Loading 80k relocations of
// libMLIR and libLLVM is most of a cached compile's time otherwise
// (docs/runtime.md, "The front end").
//
// The library is found relative to the binary holding this code (the
// executable, or the shared object an engine loads: liblowbit.so, the C
// API, finds it beside itself in lib/; the Python module in its package
// directory), which works in the build tree (bin/ and lib/) and in an
// install (the same layout). An explicit LOWBIT_COMPILER_LIBRARY wins, so
// that an engine can point at a library kept elsewhere:
//   $LOWBIT_COMPILER_LIBRARY, else <dir>/liblowbit-compiler.so, else
//   <dir>/../lib/liblowbit-compiler.so, where <dir> is that binary's
//   directory (dladdr), else the executable's (/proc/self/exe)
// Its build must be the front end's: it exports the compiler source hash
// it was built from, and a library from other sources is refused (the two
// would compute different cache keys).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_JIT_COMPILERLOADER_H
#define LOWBIT_RUNTIME_JIT_COMPILERLOADER_H

#include "lowbit/Expected.h"

#include <string>

namespace lowbit::jit {

/// The C entry points the compiler library exports (CompilerLibrary.cpp in
/// tools/lowbit defines them).
inline constexpr const char *kCompilerLibraryName = "liblowbit-compiler.so";
inline constexpr const char *kCompilerBuildSymbol = "lowbit_compiler_build";
inline constexpr const char *kRunCommandSymbol = "lowbit_compiler_run_command";
inline constexpr const char *kCompilerBackendSymbol = "lowbit_compiler_backend";

/// `lowbit_compiler_build()`: compilerBuildHash() of the library's build.
using CompilerBuildFn = const char *(*)();
/// `lowbit_compiler_run_command(argc, argv)`: runs the CLI command
/// argv[0] with its arguments, prints its output and errors, returns the
/// exit code.
using RunCommandFn = int (*)(int argc, const char *const *argv);
/// `lowbit_compiler_backend()`: the library's jit::CompilerBackend
/// (CompilerBackend.h), for lowbit::Jit built with LowbitJitLoader.
using CompilerBackendFn = const void *(*)();

struct CompilerBackend;

struct CompilerLibrary {
  std::string path;
  RunCommandFn runCommand = nullptr;
  const CompilerBackend *backend = nullptr;
};

/// Where the library is looked for: LOWBIT_COMPILER_LIBRARY if set, else
/// the first that exists of the places above (the executable's ../lib/ if
/// none does, for the error). Empty if no directory can be found.
std::string compilerLibraryPath();

/// Loads the library once per process and remembers the outcome. Errors:
/// LibraryNotFound (missing, or dlopen failed: the message has dlerror's
/// text), SymbolNotFound, InvalidArgument (built from other sources).
Expected<const CompilerLibrary *> compilerLibrary();

} // namespace lowbit::jit

#endif // LOWBIT_RUNTIME_JIT_COMPILERLOADER_H
