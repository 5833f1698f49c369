//===- CudaDriver.cpp - The CUDA driver API, loaded with dlopen -----------===//

#include "runtime/driver/CudaDriver.h"

#include <mutex>

namespace lowbit::runtime {

Expected<std::shared_ptr<const CudaDriverApi>>
loadCudaDriver(const LibraryLoadOptions &options) {
  // libcuda.so.1 is the driver's soname; the unversioned libcuda.so exists
  // only with development packages (and in the toolkit, as a stub).
  Expected<DynamicLibrary> library =
      DynamicLibrary::open({"libcuda.so.1"}, options, kNoDriverMessage);
  if (!library)
    return std::move(library).takeError();

  auto api = std::make_shared<CudaDriverApi>();
  api->libraryPath = library->path();
  // The _v2 names are the 64-bit-pointer ABI that cuda.h maps the plain
  // names to; the plain names are the same functions in old drivers.
  Status bound = Status::success();
  auto bind = [&](auto &pointer, std::initializer_list<const char *> names) {
    if (bound)
      bound = library->bind(pointer, names);
  };
  bind(api->cuInit, {"cuInit"});
  bind(api->cuDriverGetVersion, {"cuDriverGetVersion"});
  bind(api->cuDeviceGetCount, {"cuDeviceGetCount"});
  bind(api->cuDeviceGet, {"cuDeviceGet"});
  bind(api->cuDeviceGetAttribute, {"cuDeviceGetAttribute"});
  bind(api->cuDeviceGetName, {"cuDeviceGetName"});
  bind(api->cuDevicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"});
  bind(api->cuDevicePrimaryCtxRelease,
       {"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"});
  bind(api->cuCtxSetCurrent, {"cuCtxSetCurrent"});
  bind(api->cuCtxSynchronize, {"cuCtxSynchronize"});
  bind(api->cuModuleLoadData, {"cuModuleLoadData"});
  bind(api->cuModuleUnload, {"cuModuleUnload"});
  bind(api->cuModuleGetFunction, {"cuModuleGetFunction"});
  bind(api->cuLaunchKernel, {"cuLaunchKernel"});
  bind(api->cuMemAlloc, {"cuMemAlloc_v2", "cuMemAlloc"});
  bind(api->cuMemFree, {"cuMemFree_v2", "cuMemFree"});
  bind(api->cuMemcpyHtoD, {"cuMemcpyHtoD_v2", "cuMemcpyHtoD"});
  bind(api->cuMemcpyDtoH, {"cuMemcpyDtoH_v2", "cuMemcpyDtoH"});
  bind(api->cuStreamSynchronize, {"cuStreamSynchronize"});
  bind(api->cuEventCreate, {"cuEventCreate"});
  bind(api->cuEventRecord, {"cuEventRecord"});
  bind(api->cuEventSynchronize, {"cuEventSynchronize"});
  bind(api->cuEventElapsedTime,
       {"cuEventElapsedTime_v2", "cuEventElapsedTime"});
  bind(api->cuEventDestroy, {"cuEventDestroy_v2", "cuEventDestroy"});
  bind(api->cuGetErrorString, {"cuGetErrorString"});
  bind(api->cuGetErrorName, {"cuGetErrorName"});
  if (!bound)
    return std::move(bound).takeError();
  return std::shared_ptr<const CudaDriverApi>(std::move(api));
}

Expected<const CudaDriverApi *> cudaDriver() {
  static const Expected<std::shared_ptr<const CudaDriverApi>> loaded =
      loadCudaDriver(LibraryLoadOptions::fromEnvironment("LOWBIT_LIBCUDA"));
  if (!loaded)
    return loaded.error();
  return loaded->get();
}

std::string describeCudaError(const CudaDriverApi &api, CUresult result,
                              std::string_view call) {
  const char *name = nullptr, *text = nullptr;
  if (api.cuGetErrorName)
    api.cuGetErrorName(result, &name);
  if (api.cuGetErrorString)
    api.cuGetErrorString(result, &text);
  std::string message = std::string(call) + " failed: " +
                        (name ? name : "CUDA error " + std::to_string(result));
  if (text)
    message += std::string(" (") + text + ")";
  return message;
}

namespace {

Status check(const CudaDriverApi &api, CUresult result, std::string_view call,
             ErrorCode code = ErrorCode::CudaError) {
  if (result == kCudaSuccess)
    return Status::success();
  return makeError(code, describeCudaError(api, result, call));
}

} // namespace

Expected<CudaContext> CudaContext::open(const CudaDriverApi &api, int ordinal) {
  CUresult initialized = api.cuInit(0);
  if (initialized != kCudaSuccess) {
    // The toolkit's stub libcuda, a machine without a GPU and a driver
    // older than the toolkit all fail here: for the caller it is one
    // situation, "no usable CUDA device".
    return makeError(
        ErrorCode::NoDevice,
        "no CUDA device: " + describeCudaError(api, initialized, "cuInit") +
            " [driver " + api.libraryPath + "]");
  }
  int count = 0;
  if (Status status = check(api, api.cuDeviceGetCount(&count),
                            "cuDeviceGetCount", ErrorCode::NoDevice);
      !status)
    return std::move(status).takeError();
  if (ordinal < 0 || ordinal >= count)
    return makeError(ErrorCode::NoDevice,
                     "no CUDA device " + std::to_string(ordinal) + ": " +
                         std::to_string(count) + " device(s) present");
  CudaContext context;
  context.driver = &api;
  if (Status status =
          check(api, api.cuDeviceGet(&context.device, ordinal), "cuDeviceGet");
      !status)
    return std::move(status).takeError();
  if (Status status = check(
          api,
          api.cuDeviceGetAttribute(
              &context.major, kAttributeComputeCapabilityMajor, context.device),
          "cuDeviceGetAttribute");
      !status)
    return std::move(status).takeError();
  if (Status status = check(
          api,
          api.cuDeviceGetAttribute(
              &context.minor, kAttributeComputeCapabilityMinor, context.device),
          "cuDeviceGetAttribute");
      !status)
    return std::move(status).takeError();
  char name[256] = {};
  if (api.cuDeviceGetName(name, int(sizeof(name)) - 1, context.device) ==
      kCudaSuccess)
    context.name = name;
  if (Status status = check(
          api, api.cuDevicePrimaryCtxRetain(&context.context, context.device),
          "cuDevicePrimaryCtxRetain");
      !status)
    return std::move(status).takeError();
  if (Status status = context.makeCurrent(); !status)
    return std::move(status).takeError();
  return context;
}

CudaContext::CudaContext(CudaContext &&other) noexcept
    : driver(other.driver), device(other.device), context(other.context),
      major(other.major), minor(other.minor), name(std::move(other.name)) {
  other.context = nullptr;
}

CudaContext::~CudaContext() {
  if (context)
    driver->cuDevicePrimaryCtxRelease(device);
}

std::string CudaContext::chip() const {
  return "sm_" + std::to_string(major) + std::to_string(minor);
}

Status CudaContext::makeCurrent() const {
  return check(*driver, driver->cuCtxSetCurrent(context), "cuCtxSetCurrent");
}

Expected<CudaModule> CudaModule::load(const CudaContext &context,
                                      const std::string &image,
                                      const std::string &entryName) {
  const CudaDriverApi &api = context.api();
  CudaModule loaded;
  loaded.driver = &api;
  // std::string keeps a NUL after the bytes, which PTX images need.
  if (Status status =
          check(api, api.cuModuleLoadData(&loaded.module, image.c_str()),
                "cuModuleLoadData");
      !status)
    return std::move(status).takeError();
  if (Status status =
          check(api,
                api.cuModuleGetFunction(&loaded.function, loaded.module,
                                        entryName.c_str()),
                "cuModuleGetFunction('" + entryName + "')");
      !status)
    return std::move(status).takeError();
  return loaded;
}

CudaModule::CudaModule(CudaModule &&other) noexcept
    : driver(other.driver), module(other.module), function(other.function) {
  other.module = nullptr;
}

CudaModule::~CudaModule() {
  if (module)
    driver->cuModuleUnload(module);
}

Status CudaModule::launch(LaunchDims grid, LaunchDims block,
                          unsigned sharedBytes, CUstream stream,
                          void **arguments) const {
  if (grid.x == 0 || grid.y == 0 || grid.z == 0)
    return Status::success(); // an empty tensor: nothing to launch
  return check(*driver,
               driver->cuLaunchKernel(function, grid.x, grid.y, grid.z, block.x,
                                      block.y, block.z, sharedBytes, stream,
                                      arguments, nullptr),
               "cuLaunchKernel");
}

Expected<DeviceBuffer> DeviceBuffer::allocate(const CudaContext &context,
                                              size_t bytes) {
  DeviceBuffer buffer;
  buffer.driver = &context.api();
  buffer.bytes = bytes;
  if (bytes == 0)
    return buffer;
  if (Status status = check(*buffer.driver,
                            buffer.driver->cuMemAlloc(&buffer.pointer, bytes),
                            "cuMemAlloc(" + std::to_string(bytes) + ")");
      !status)
    return std::move(status).takeError();
  return buffer;
}

DeviceBuffer::DeviceBuffer(DeviceBuffer &&other) noexcept
    : driver(other.driver), pointer(other.pointer), bytes(other.bytes) {
  other.pointer = 0;
}

DeviceBuffer::~DeviceBuffer() {
  if (pointer)
    driver->cuMemFree(pointer);
}

Status DeviceBuffer::upload(const void *source, size_t count) {
  if (count > bytes)
    return makeError(ErrorCode::InvalidArgument,
                     "upload of " + std::to_string(count) +
                         " bytes into a buffer of " + std::to_string(bytes));
  if (count == 0)
    return Status::success();
  return check(*driver, driver->cuMemcpyHtoD(pointer, source, count),
               "cuMemcpyHtoD");
}

Status DeviceBuffer::download(void *destination, size_t count) const {
  if (count > bytes)
    return makeError(ErrorCode::InvalidArgument,
                     "download of " + std::to_string(count) +
                         " bytes from a buffer of " + std::to_string(bytes));
  if (count == 0)
    return Status::success();
  return check(*driver, driver->cuMemcpyDtoH(destination, pointer, count),
               "cuMemcpyDtoH");
}

} // namespace lowbit::runtime
