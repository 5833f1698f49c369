//===- NvJitLink.h - PTX to cubin in process --------------------*- C++ -*-===//
//
// nvJitLink assembles PTX into a cubin for one chip without a driver or a
// GPU (8-15 ms for a small kernel), so kernels can be compiled ahead of time
// here and shipped to a GPU machine. Loaded on first use (libnvJitLink.so.13;
// override with LOWBIT_LIBNVJITLINK).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_DRIVER_NVJITLINK_H
#define LOWBIT_RUNTIME_DRIVER_NVJITLINK_H

#include "lowbit/Expected.h"
#include "runtime/driver/DynamicLibrary.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lowbit::runtime {

using nvJitLinkHandle = struct nvJitLink *;
using nvJitLinkResult = int;
inline constexpr int kNvJitLinkInputPtx = 2;

struct NvJitLinkApi {
  std::string libraryPath;
  nvJitLinkResult (*create)(nvJitLinkHandle *handle, uint32_t optionCount,
                            const char **options) = nullptr;
  nvJitLinkResult (*destroy)(nvJitLinkHandle *handle) = nullptr;
  nvJitLinkResult (*addData)(nvJitLinkHandle handle, int inputType,
                             const void *data, size_t size,
                             const char *name) = nullptr;
  nvJitLinkResult (*complete)(nvJitLinkHandle handle) = nullptr;
  nvJitLinkResult (*getLinkedCubinSize)(nvJitLinkHandle handle,
                                        size_t *size) = nullptr;
  nvJitLinkResult (*getLinkedCubin)(nvJitLinkHandle handle,
                                    void *cubin) = nullptr;
  nvJitLinkResult (*getErrorLogSize)(nvJitLinkHandle handle,
                                     size_t *size) = nullptr;
  nvJitLinkResult (*getErrorLog)(nvJitLinkHandle handle, char *log) = nullptr;
  nvJitLinkResult (*getInfoLogSize)(nvJitLinkHandle handle,
                                    size_t *size) = nullptr;
  nvJitLinkResult (*getInfoLog)(nvJitLinkHandle handle, char *log) = nullptr;
};

Expected<std::shared_ptr<const NvJitLinkApi>>
loadNvJitLink(const LibraryLoadOptions &options);
/// Process-wide, from LOWBIT_LIBNVJITLINK / LOWBIT_DISABLE_CUDA; remembered.
Expected<const NvJitLinkApi *> nvJitLinkLibrary();

/// Resource usage ptxas reports for one kernel (-1: not reported).
struct KernelResources {
  std::string function;
  int registers = -1;
  int sharedBytes = -1;
  int stackBytes = -1;
  int spillStoreBytes = -1;
  int spillLoadBytes = -1;
  int constantBytes = -1;
};

/// Parses ptxas's verbose info log ("Compiling entry function 'f' for
/// 'sm_90a'", "Used 12 registers, ...", "0 bytes stack frame, 0 bytes spill
/// stores, 0 bytes spill loads"), one record per function in log order.
std::vector<KernelResources> parsePtxasInfoLog(std::string_view log);

struct LinkOptions {
  /// -lineinfo: source lines in the cubin, for profilers.
  bool lineInfo = false;
  /// -O0..-O3 for ptxas.
  int optimizationLevel = 3;
  std::vector<std::string> extraOptions;
};

struct Cubin {
  std::string bytes;
  std::string arch;
  /// The first kernel's resources (most lowbit modules hold one kernel).
  KernelResources resources;
  std::vector<KernelResources> allKernels;
  std::string infoLog;
  double linkMillis = 0;
};

/// `arch` is "sm_80", "sm_89", "sm_90a", ... A PTX error is LinkFailed with
/// nvJitLink's error log.
Expected<Cubin> linkPtx(const NvJitLinkApi &api, std::string_view ptx,
                        std::string_view arch, const LinkOptions &options = {});
/// With the process-wide library.
Expected<Cubin> linkPtx(std::string_view ptx, std::string_view arch,
                        const LinkOptions &options = {});

/// Starts, once per process, a background thread that loads nvJitLink
/// (nvJitLinkLibrary()) and links a trivial kernel for `arch`. The first
/// link in a process otherwise pays ~10 ms of dlopen and ~60 ms of
/// nvJitLink's own first-use setup serially; started when a compile
/// begins, that overlaps with the lowering that produces the PTX. Later
/// calls, an invalid `arch` and LOWBIT_DISABLE_CUDA do nothing. The first
/// linkPtx waits for it; a caller that will not link (a failed build, a
/// warm-up) must waitForNvJitLinkWarmup before it returns: the at-exit
/// wait cannot cover statics nvJitLink creates during its first link,
/// whose destructors exit runs first.
void startNvJitLinkWarmup(std::string_view arch);

/// Blocks until a started warm-up has finished; true if one ran and loaded
/// nvJitLink. For tests and benchmarks.
bool waitForNvJitLinkWarmup();

/// Who turns a GPU kernel's PTX into machine code.
enum class CubinMaker {
  /// nvJitLink, at compile time: the cache entry holds the cubin (the
  /// default). Without nvJitLink, or when it cannot link for the chip, the
  /// entry holds PTX only, as with Driver.
  NvJitLink,
  /// The CUDA driver's PTX JIT (cuModuleLoadData on the PTX), when a
  /// launch first loads the kernel: compiling costs nothing until a launch
  /// needs it, and the driver's own compute cache (CUDA_CACHE_PATH) keeps
  /// the cubin for later processes.
  Driver,
};
std::string_view cubinMakerName(CubinMaker maker);
/// "nvjitlink" or "driver"; anything else is InvalidArgument.
Expected<CubinMaker> parseCubinMaker(std::string_view name);
/// From LOWBIT_CUBIN (unset or empty: NvJitLink); an unknown value is an
/// error, never a silent default.
Expected<CubinMaker> cubinMakerFromEnvironment();

/// The machine code a cache entry should hold for `ptx` on `arch`: a cubin
/// from nvJitLink (`api`, may be null when nvJitLink is missing), or
/// std::nullopt, meaning "store the PTX and let the driver JIT it at load":
/// always for Driver, and for NvJitLink when `api` is null or the link
/// fails (CUDA 13's nvJitLink does not know sm_101a; the driver's own error
/// then names any problem in the PTX at load).
std::optional<Cubin> makeCubin(const NvJitLinkApi *api, std::string_view ptx,
                               std::string_view arch, CubinMaker maker);

} // namespace lowbit::runtime

#endif // LOWBIT_RUNTIME_DRIVER_NVJITLINK_H
