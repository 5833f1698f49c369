//===- Nvrtc.cpp - NVRTC, loaded with dlopen ------------------------------===//

#include "runtime/driver/Nvrtc.h"

#include <chrono>

namespace lowbit::runtime {

Expected<std::shared_ptr<const NvrtcApi>>
loadNvrtc(const LibraryLoadOptions &options) {
  std::vector<std::string> candidates = {"libnvrtc.so.13", "libnvrtc.so.12",
                                         "libnvrtc.so"};
  for (const std::string &directory : cudaToolkitLibraryDirectories())
    candidates.push_back(directory + "/libnvrtc.so");
  Expected<DynamicLibrary> library = DynamicLibrary::open(
      candidates, options,
      "libnvrtc.so not found: the CUDA toolkit's NVRTC is needed for the "
      "NVRTC reference kernels (set CUDA_HOME or LOWBIT_LIBNVRTC)");
  if (!library)
    return std::move(library).takeError();
  auto api = std::make_shared<NvrtcApi>();
  api->libraryPath = library->path();
  Status bound = Status::success();
  auto bind = [&](auto &pointer, const char *name) {
    if (bound)
      bound = library->bind(pointer, {name});
  };
  bind(api->nvrtcVersion, "nvrtcVersion");
  bind(api->nvrtcCreateProgram, "nvrtcCreateProgram");
  bind(api->nvrtcDestroyProgram, "nvrtcDestroyProgram");
  bind(api->nvrtcCompileProgram, "nvrtcCompileProgram");
  bind(api->nvrtcGetPTXSize, "nvrtcGetPTXSize");
  bind(api->nvrtcGetPTX, "nvrtcGetPTX");
  bind(api->nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize");
  bind(api->nvrtcGetProgramLog, "nvrtcGetProgramLog");
  bind(api->nvrtcGetErrorString, "nvrtcGetErrorString");
  if (!bound)
    return std::move(bound).takeError();
  return std::shared_ptr<const NvrtcApi>(std::move(api));
}

Expected<const NvrtcApi *> nvrtcLibrary() {
  static const Expected<std::shared_ptr<const NvrtcApi>> loaded =
      loadNvrtc(LibraryLoadOptions::fromEnvironment("LOWBIT_LIBNVRTC"));
  if (!loaded)
    return loaded.error();
  return loaded->get();
}

Expected<NvrtcOutput>
compileWithNvrtc(const NvrtcApi &api, const std::string &source,
                 const std::string &programName,
                 const std::vector<std::string> &options) {
  auto failure = [&](nvrtcResult result, std::string_view call) {
    return makeError(ErrorCode::CompileFailed,
                     std::string(call) +
                         " failed: " + api.nvrtcGetErrorString(result));
  };
  auto start = std::chrono::steady_clock::now();
  nvrtcProgram program = nullptr;
  if (nvrtcResult result = api.nvrtcCreateProgram(
          &program, source.c_str(), programName.c_str(), 0, nullptr, nullptr))
    return failure(result, "nvrtcCreateProgram");

  // The program is destroyed on every path out of here.
  struct ProgramGuard {
    const NvrtcApi &api;
    nvrtcProgram &program;
    ~ProgramGuard() { api.nvrtcDestroyProgram(&program); }
  } guard{api, program};

  std::vector<const char *> optionPointers;
  for (const std::string &option : options)
    optionPointers.push_back(option.c_str());
  nvrtcResult compiled = api.nvrtcCompileProgram(
      program, int(optionPointers.size()), optionPointers.data());

  NvrtcOutput output;
  size_t logSize = 0;
  if (api.nvrtcGetProgramLogSize(program, &logSize) == 0 && logSize > 1) {
    output.log.resize(logSize);
    api.nvrtcGetProgramLog(program, output.log.data());
    output.log.resize(logSize - 1); // the trailing NUL
  }
  if (compiled)
    return makeError(ErrorCode::CompileFailed,
                     "NVRTC could not compile '" + programName + "' (" +
                         api.nvrtcGetErrorString(compiled) + "):\n" +
                         output.log);
  size_t ptxSize = 0;
  if (nvrtcResult result = api.nvrtcGetPTXSize(program, &ptxSize))
    return failure(result, "nvrtcGetPTXSize");
  output.ptx.resize(ptxSize);
  if (nvrtcResult result = api.nvrtcGetPTX(program, output.ptx.data()))
    return failure(result, "nvrtcGetPTX");
  if (!output.ptx.empty() && output.ptx.back() == '\0')
    output.ptx.pop_back();
  output.compileMillis = std::chrono::duration<double, std::milli>(
                             std::chrono::steady_clock::now() - start)
                             .count();
  return output;
}

} // namespace lowbit::runtime
