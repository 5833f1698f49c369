//===- Nvrtc.h - NVRTC, loaded with dlopen ----------------------*- C++ -*-===//
//
// CUDA C++ to PTX in process. Loaded on first use from the CUDA toolkit
// (libnvrtc.so.13; override with LOWBIT_LIBNVRTC). NVRTC needs no driver
// and no GPU.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_DRIVER_NVRTC_H
#define LOWBIT_RUNTIME_DRIVER_NVRTC_H

#include "lowbit/Expected.h"
#include "runtime/driver/DynamicLibrary.h"

#include <memory>
#include <string>
#include <vector>

namespace lowbit::runtime {

using nvrtcProgram = struct _nvrtcProgram *;
using nvrtcResult = int;

struct NvrtcApi {
  std::string libraryPath;
  nvrtcResult (*nvrtcVersion)(int *major, int *minor) = nullptr;
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram *program, const char *source,
                                    const char *name, int headerCount,
                                    const char *const *headers,
                                    const char *const *includeNames) = nullptr;
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram *program) = nullptr;
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram program, int optionCount,
                                     const char *const *options) = nullptr;
  nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram program, size_t *size) = nullptr;
  nvrtcResult (*nvrtcGetPTX)(nvrtcProgram program, char *ptx) = nullptr;
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram program,
                                        size_t *size) = nullptr;
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram program, char *log) = nullptr;
  const char *(*nvrtcGetErrorString)(nvrtcResult result) = nullptr;
};

Expected<std::shared_ptr<const NvrtcApi>>
loadNvrtc(const LibraryLoadOptions &options);
/// Process-wide, from LOWBIT_LIBNVRTC / LOWBIT_DISABLE_CUDA; remembered.
Expected<const NvrtcApi *> nvrtcLibrary();

struct NvrtcOutput {
  std::string ptx;
  std::string log;
  double compileMillis = 0;
};

/// Compiles one CUDA C++ source to PTX. `options` are NVRTC's
/// ("--gpu-architecture=compute_90a", "--include-path=...", "-std=c++17").
/// A failed compile is CompileFailed with NVRTC's log in the message.
Expected<NvrtcOutput> compileWithNvrtc(const NvrtcApi &api,
                                       const std::string &source,
                                       const std::string &programName,
                                       const std::vector<std::string> &options);

} // namespace lowbit::runtime

#endif // LOWBIT_RUNTIME_DRIVER_NVRTC_H
