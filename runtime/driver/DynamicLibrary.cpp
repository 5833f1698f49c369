//===- DynamicLibrary.cpp - dlopen with errors as values ------------------===//

#include "runtime/driver/DynamicLibrary.h"

#include <cstdlib>
#include <string_view>

#include <dlfcn.h>

namespace lowbit::runtime {

LibraryLoadOptions
LibraryLoadOptions::fromEnvironment(const char *overrideVariable) {
  LibraryLoadOptions options;
  if (const char *path = std::getenv(overrideVariable); path && *path)
    options.overridePath = path;
  if (const char *disable = std::getenv("LOWBIT_DISABLE_CUDA");
      disable && *disable && std::string_view(disable) != "0")
    options.disabled = true;
  return options;
}

Expected<DynamicLibrary>
DynamicLibrary::open(const std::vector<std::string> &candidates,
                     const LibraryLoadOptions &options,
                     std::string_view absentMessage) {
  if (options.disabled)
    return makeError(ErrorCode::LibraryNotFound,
                     std::string(absentMessage) +
                         " (disabled by LOWBIT_DISABLE_CUDA)");
  std::vector<std::string> attempts =
      options.overridePath.empty()
          ? candidates
          : std::vector<std::string>{options.overridePath};
  std::string tried;
  for (const std::string &candidate : attempts) {
    // RTLD_LOCAL: the CUDA libraries' symbols must not interpose on the
    // host program's (or on each other's).
    int binding = options.lazyDependencies ? RTLD_LAZY : RTLD_NOW;
    if (void *handle = ::dlopen(candidate.c_str(), binding | RTLD_LOCAL)) {
      DynamicLibrary library;
      library.handle = handle;
      library.loadedPath = candidate;
      return library;
    }
    const char *reason = ::dlerror();
    tried += "\n  " + candidate + ": " + (reason ? reason : "not found");
  }
  return makeError(ErrorCode::LibraryNotFound,
                   std::string(absentMessage) + "; tried:" + tried);
}

void *DynamicLibrary::symbol(const char *name) const {
  return handle ? ::dlsym(handle, name) : nullptr;
}

std::vector<std::string> cudaToolkitLibraryDirectories() {
  std::vector<std::string> directories;
  for (const char *variable : {"CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"}) {
    if (const char *root = std::getenv(variable); root && *root) {
      directories.push_back(std::string(root) + "/lib64");
      directories.push_back(std::string(root) + "/targets/x86_64-linux/lib");
    }
  }
  directories.push_back("/usr/local/cuda/lib64");
  directories.push_back("/usr/local/cuda/targets/x86_64-linux/lib");
  return directories;
}

} // namespace lowbit::runtime
