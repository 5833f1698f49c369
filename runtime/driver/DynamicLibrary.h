//===- DynamicLibrary.h - dlopen with errors as values ----------*- C++ -*-===//
//
// lowbit links none of the CUDA libraries: the driver (libcuda.so.1), NVRTC
// and nvJitLink are opened with dlopen the first time they are needed, so a
// binary built with lowbit starts on a machine without them and reports
// their absence as an Error only when a GPU path is used (as Jitify does).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_DRIVER_DYNAMICLIBRARY_H
#define LOWBIT_RUNTIME_DRIVER_DYNAMICLIBRARY_H

#include "lowbit/Expected.h"

#include <initializer_list>
#include <string>
#include <vector>

namespace lowbit::runtime {

/// How one library is found, from the environment by default.
struct LibraryLoadOptions {
  /// Set: only this path is tried (LOWBIT_LIBCUDA, LOWBIT_LIBNVRTC,
  /// LOWBIT_LIBNVJITLINK). A path that does not exist simulates a machine
  /// without the library.
  std::string overridePath;
  /// LOWBIT_DISABLE_CUDA=1: the library is treated as absent and dlopen is
  /// never called (tests of the "no driver" paths on a GPU machine).
  bool disabled = false;
  /// Set: the libraries the one opened pulls in bind their functions on
  /// first call (RTLD_LAZY) instead of all at dlopen. Only for a library
  /// linked with `-z now`, which glibc still binds whole at dlopen, so a
  /// symbol missing from it is dlopen's error, not a process killed later.
  bool lazyDependencies = false;

  /// Reads `overrideVariable` and LOWBIT_DISABLE_CUDA.
  static LibraryLoadOptions fromEnvironment(const char *overrideVariable);
};

/// An open shared library. The handle is never closed: the CUDA libraries
/// keep threads and state that must outlive every module and context.
class DynamicLibrary {
public:
  /// Tries `candidates` in order (sonames first, then toolkit paths).
  /// On failure the error lists every attempt and dlerror's text.
  static Expected<DynamicLibrary>
  open(const std::vector<std::string> &candidates,
       const LibraryLoadOptions &options, std::string_view absentMessage);

  void *symbol(const char *name) const;
  /// The first of `names` that exists, cast to the pointer's type.
  template <typename FunctionPointer>
  Status bind(FunctionPointer &pointer,
              std::initializer_list<const char *> names) const {
    for (const char *name : names) {
      if (void *address = symbol(name)) {
        pointer = reinterpret_cast<FunctionPointer>(address);
        return Status::success();
      }
    }
    return makeError(ErrorCode::SymbolNotFound,
                     std::string("'") + *names.begin() + "' not found in " +
                         loadedPath + " (library too old?)");
  }
  const std::string &path() const { return loadedPath; }

private:
  void *handle = nullptr;
  std::string loadedPath;
};

/// The CUDA toolkit's library directories, for NVRTC and nvJitLink when
/// they are not on the loader's path: $CUDA_HOME, $CUDA_PATH, /usr/local/cuda.
std::vector<std::string> cudaToolkitLibraryDirectories();

} // namespace lowbit::runtime

#endif // LOWBIT_RUNTIME_DRIVER_DYNAMICLIBRARY_H
