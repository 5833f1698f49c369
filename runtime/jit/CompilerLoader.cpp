//===- CompilerLoader.cpp - The compiler library, loaded on demand --------===//

#include "runtime/jit/CompilerLoader.h"

#include "runtime/cache/KernelKey.h"
#include "runtime/driver/DynamicLibrary.h"

#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>
#include <mutex>
#include <optional>
#include <vector>

namespace lowbit::jit {

std::string compilerLibraryPath() {
  if (const char *path = std::getenv("LOWBIT_COMPILER_LIBRARY"); path && *path)
    return path;
  namespace fs = std::filesystem;
  std::error_code code;
  std::vector<fs::path> candidates;
  // The binary holding this code: an engine's shared object (the Python
  // module, a plugin) may live far from the executable.
  Dl_info info{};
  if (dladdr(reinterpret_cast<void *>(&compilerLibraryPath), &info) &&
      info.dli_fname && *info.dli_fname) {
    fs::path self = fs::weakly_canonical(info.dli_fname, code);
    if (!code) {
      candidates.push_back(self.parent_path() / kCompilerLibraryName);
      candidates.push_back(self.parent_path().parent_path() / "lib" /
                           kCompilerLibraryName);
    }
  }
  fs::path executable = fs::read_symlink("/proc/self/exe", code);
  if (!code)
    candidates.push_back(executable.parent_path().parent_path() / "lib" /
                         kCompilerLibraryName);
  for (const fs::path &candidate : candidates)
    if (fs::exists(candidate, code))
      return candidate.string();
  return candidates.empty() ? "" : candidates.back().string();
}

namespace {

Expected<CompilerLibrary> load() {
  std::string path = compilerLibraryPath();
  if (path.empty())
    return makeError(ErrorCode::LibraryNotFound,
                     "cannot find the compiler library: /proc/self/exe is "
                     "unreadable; set LOWBIT_COMPILER_LIBRARY to its path");
  runtime::LibraryLoadOptions options;
  options.overridePath = path;
  // libMLIR and libLLVM hold ~30k function relocations, and a compile
  // calls a few thousand of them: binding them on first call instead of
  // at dlopen takes ~45M instructions (a fifth) off an empty-cache
  // `lowbit compile`. The compiler library itself is linked with -z now
  // (tools/lowbit/CMakeLists.txt), so its own symbols are still all bound,
  // or refused, here.
  options.lazyDependencies = true;
  Expected<runtime::DynamicLibrary> library = runtime::DynamicLibrary::open(
      {path}, options,
      std::string("the compiler library ") + kCompilerLibraryName +
          " cannot be loaded (a cache miss and the commands that compile "
          "need it; it is built and installed in lib/, next to liblowbit.so "
          "and in ../lib from the lowbit executable; LOWBIT_COMPILER_LIBRARY "
          "names another path)");
  if (!library)
    return std::move(library).takeError();
  CompilerBuildFn build = nullptr;
  CompilerLibrary result;
  result.path = library->path();
  if (Status bound = library->bind(build, {kCompilerBuildSymbol}); !bound)
    return std::move(bound).takeError();
  if (Status bound = library->bind(result.runCommand, {kRunCommandSymbol});
      !bound)
    return std::move(bound).takeError();
  CompilerBackendFn backend = nullptr;
  if (Status bound = library->bind(backend, {kCompilerBackendSymbol}); !bound)
    return std::move(bound).takeError();
  std::string_view theirs = build(), ours = runtime::compilerBuildHash();
  if (theirs != ours)
    return makeError(ErrorCode::InvalidArgument,
                     "the compiler library " + result.path +
                         " was built from other sources (compiler " +
                         std::string(theirs) + ", this lowbit " +
                         std::string(ours) + "); rebuild or reinstall both");
  // Only after the build check: the table's C++ types are this build's.
  result.backend = static_cast<const CompilerBackend *>(backend());
  return result;
}

} // namespace

Expected<const CompilerLibrary *> compilerLibrary() {
  static std::once_flag once;
  static std::optional<Expected<CompilerLibrary>> loaded;
  std::call_once(once, [] { loaded.emplace(load()); });
  if (!loaded->ok())
    return loaded->error();
  return &loaded->value();
}

} // namespace lowbit::jit
