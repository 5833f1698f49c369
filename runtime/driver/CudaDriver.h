//===- CudaDriver.h - The CUDA driver API, loaded with dlopen ---*- C++ -*-===//
//
// The few driver functions the runtime needs, declared here (not from
// cuda.h) and bound from libcuda.so.1 on first use. Everything the launch
// path needs: a device's primary context, module load from PTX or cubin,
// cuLaunchKernel, device memory and events for timing.
//
// A machine without the driver gets LibraryNotFound with a message that
// says what still works. A driver without a usable device (the toolkit's
// stub libcuda, no GPU, a driver too old) gets NoDevice.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_DRIVER_CUDADRIVER_H
#define LOWBIT_RUNTIME_DRIVER_CUDADRIVER_H

#include "lowbit/Expected.h"
#include "runtime/driver/DynamicLibrary.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace lowbit::runtime {

// The driver ABI types, as cuda.h declares them.
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;

inline constexpr CUresult kCudaSuccess = 0;
inline constexpr CUresult kCudaErrorStubLibrary = 34;
inline constexpr CUresult kCudaErrorInsufficientDriver = 35;
inline constexpr CUresult kCudaErrorNoDevice = 100;
inline constexpr int kAttributeComputeCapabilityMajor = 75;
inline constexpr int kAttributeComputeCapabilityMinor = 76;

struct CudaDriverApi {
  std::string libraryPath;
  CUresult (*cuInit)(unsigned flags) = nullptr;
  CUresult (*cuDriverGetVersion)(int *version) = nullptr;
  CUresult (*cuDeviceGetCount)(int *count) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice *device, int ordinal) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int *value, int attribute,
                                   CUdevice device) = nullptr;
  CUresult (*cuDeviceGetName)(char *name, int length,
                              CUdevice device) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *context,
                                       CUdevice device) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice device) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext context) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuModuleLoadData)(CUmodule *module, const void *image) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule module) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction *function, CUmodule module,
                                  const char *name) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction function, unsigned gridX,
                             unsigned gridY, unsigned gridZ, unsigned blockX,
                             unsigned blockY, unsigned blockZ,
                             unsigned sharedBytes, CUstream stream,
                             void **parameters, void **extra) = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr *pointer, size_t bytes) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr pointer) = nullptr;
  CUresult (*cuMemcpyHtoD)(CUdeviceptr destination, const void *source,
                           size_t bytes) = nullptr;
  CUresult (*cuMemcpyDtoH)(void *destination, CUdeviceptr source,
                           size_t bytes) = nullptr;
  CUresult (*cuStreamSynchronize)(CUstream stream) = nullptr;
  CUresult (*cuEventCreate)(CUevent *event, unsigned flags) = nullptr;
  CUresult (*cuEventRecord)(CUevent event, CUstream stream) = nullptr;
  CUresult (*cuEventSynchronize)(CUevent event) = nullptr;
  CUresult (*cuEventElapsedTime)(float *millis, CUevent start,
                                 CUevent end) = nullptr;
  CUresult (*cuEventDestroy)(CUevent event) = nullptr;
  CUresult (*cuGetErrorString)(CUresult error, const char **text) = nullptr;
  CUresult (*cuGetErrorName)(CUresult error, const char **text) = nullptr;
};

/// The message every "no driver" error carries.
inline constexpr std::string_view kNoDriverMessage =
    "libcuda.so.1 not found: no NVIDIA driver on this machine; the CPU "
    "backend and PTX output still work";

/// Loads and binds the driver without caching (tests use this to try
/// several options in one process).
Expected<std::shared_ptr<const CudaDriverApi>>
loadCudaDriver(const LibraryLoadOptions &options);

/// The process-wide driver, loaded on the first call with the options from
/// the environment (LOWBIT_LIBCUDA, LOWBIT_DISABLE_CUDA). The outcome,
/// success or error, is remembered.
Expected<const CudaDriverApi *> cudaDriver();

/// "cuModuleLoadData failed: CUDA_ERROR_INVALID_PTX (a PTX JIT compilation
/// failed)".
std::string describeCudaError(const CudaDriverApi &api, CUresult result,
                              std::string_view call);

/// A device and its primary context (the context the CUDA runtime and
/// PyTorch use, so lowbit's kernels share their allocations and streams).
class CudaContext {
public:
  /// cuInit, the device count, the device and its primary context, made
  /// current on this thread.
  static Expected<CudaContext> open(const CudaDriverApi &api, int ordinal = 0);
  CudaContext(CudaContext &&other) noexcept;
  CudaContext &operator=(CudaContext &&) = delete;
  ~CudaContext();

  const CudaDriverApi &api() const { return *driver; }
  /// "sm_90", from the compute capability. (The "a" variants are a choice
  /// of the compiler, not a property of the device.)
  std::string chip() const;
  int computeMajor() const { return major; }
  int computeMinor() const { return minor; }
  const std::string &deviceName() const { return name; }
  Status makeCurrent() const;

private:
  CudaContext() = default;
  const CudaDriverApi *driver = nullptr;
  CUdevice device = 0;
  CUcontext context = nullptr;
  int major = 0, minor = 0;
  std::string name;
};

struct LaunchDims {
  unsigned x = 1, y = 1, z = 1;
};

/// A loaded module and one kernel function in it.
class CudaModule {
public:
  /// `image`: PTX text or cubin bytes (PTX is JIT-compiled by the driver).
  static Expected<CudaModule> load(const CudaContext &context,
                                   const std::string &image,
                                   const std::string &entryName);
  CudaModule(CudaModule &&other) noexcept;
  CudaModule &operator=(CudaModule &&) = delete;
  ~CudaModule();

  /// `arguments[i]` points at the i-th kernel parameter's value.
  Status launch(LaunchDims grid, LaunchDims block, unsigned sharedBytes,
                CUstream stream, void **arguments) const;

private:
  CudaModule() = default;
  const CudaDriverApi *driver = nullptr;
  CUmodule module = nullptr;
  CUfunction function = nullptr;
};

/// Device memory, freed on destruction.
class DeviceBuffer {
public:
  static Expected<DeviceBuffer> allocate(const CudaContext &context,
                                         size_t bytes);
  DeviceBuffer(DeviceBuffer &&other) noexcept;
  DeviceBuffer &operator=(DeviceBuffer &&) = delete;
  ~DeviceBuffer();

  Status upload(const void *source, size_t bytes);
  Status download(void *destination, size_t bytes) const;
  CUdeviceptr address() const { return pointer; }
  size_t size() const { return bytes; }

private:
  DeviceBuffer() = default;
  const CudaDriverApi *driver = nullptr;
  CUdeviceptr pointer = 0;
  size_t bytes = 0;
};

/// Milliseconds between two events recorded around `work` on `stream`.
template <typename Work>
Expected<float> timeOnStream(const CudaDriverApi &api, CUstream stream,
                             Work &&work);

} // namespace lowbit::runtime

#include "runtime/driver/CudaDriverTiming.h"

#endif // LOWBIT_RUNTIME_DRIVER_CUDADRIVER_H
