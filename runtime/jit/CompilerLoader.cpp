//===- CompilerLoader.cpp - The compiler library, loaded on demand --------===//

#include "runtime/jit/CompilerLoader.h"

#include "runtime/cache/KernelKey.h"
#include "runtime/driver/DynamicLibrary.h"

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>

namespace lowbit::jit {

std::string compilerLibraryPath() {
  if (const char *path = std::getenv("LOWBIT_COMPILER_LIBRARY"); path && *path)
    return path;
  std::error_code code;
  std::filesystem::path executable =
      std::filesystem::read_symlink("/proc/self/exe", code);
  if (code)
    return "";
  return (executable.parent_path().parent_path() / "lib" / kCompilerLibraryName)
      .string();
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
  Expected<runtime::DynamicLibrary> library = runtime::DynamicLibrary::open(
      {path}, options,
      std::string("the compiler library ") + kCompilerLibraryName +
          " cannot be loaded (commands that compile need it; it is built "
          "and installed next to the lowbit executable, in ../lib)");
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
  std::string_view theirs = build(), ours = runtime::compilerBuildHash();
  if (theirs != ours)
    return makeError(ErrorCode::InvalidArgument,
                     "the compiler library " + result.path +
                         " was built from other sources (compiler " +
                         std::string(theirs) + ", this lowbit " +
                         std::string(ours) + "); rebuild or reinstall both");
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
