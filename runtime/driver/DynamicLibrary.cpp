//===- DynamicLibrary.cpp - dlopen with errors as values ------------------===//

#include "runtime/driver/DynamicLibrary.h"

#include <cstdlib>
#include <string_view>

#include <dlfcn.h>
#include <sys/stat.h>

namespace lowbit::runtime {

namespace {

/// What to check when the loader fails on a file that exists.
std::string loadFailureHint(std::string_view reason) {
  if (reason.find("map segment") != std::string_view::npos ||
      reason.find("allocate memory") != std::string_view::npos)
    return " (the process could not map it into memory: check the address "
           "space limit, `ulimit -v`, and the free memory)";
  return "";
}

} // namespace

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
  std::string tried, present;
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
    std::string why = reason ? reason : "not found";
    // A file that is there but does not load is not a missing install:
    // name the loader's reason first (under a low `ulimit -v` it is a
    // failed mmap, "failed to map segment from shared object").
    struct stat info;
    if (present.empty() && candidate.find('/') != std::string::npos &&
        ::stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode))
      present = candidate + " is present but cannot be loaded: " + why +
                loadFailureHint(why);
    tried += "\n  " + candidate + ": " + why;
  }
  if (!present.empty())
    return makeError(ErrorCode::LibraryNotFound, present);
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
