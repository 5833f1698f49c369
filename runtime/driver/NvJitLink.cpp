//===- NvJitLink.cpp - PTX to cubin in process ----------------------------===//

#include "runtime/driver/NvJitLink.h"

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <regex>
#include <thread>

namespace lowbit::runtime {

Expected<std::shared_ptr<const NvJitLinkApi>>
loadNvJitLink(const LibraryLoadOptions &options) {
  std::vector<std::string> candidates = {
      "libnvJitLink.so.13", "libnvJitLink.so.12", "libnvJitLink.so"};
  for (const std::string &directory : cudaToolkitLibraryDirectories())
    candidates.push_back(directory + "/libnvJitLink.so");
  Expected<DynamicLibrary> library = DynamicLibrary::open(
      candidates, options,
      "libnvJitLink.so not found: the CUDA toolkit's nvJitLink is needed to "
      "turn PTX into a cubin (PTX output still works; set CUDA_HOME or "
      "LOWBIT_LIBNVJITLINK)");
  if (!library)
    return std::move(library).takeError();
  auto api = std::make_shared<NvJitLinkApi>();
  api->libraryPath = library->path();
  // nvJitLink.h maps each function to a versioned symbol (__nvJitLinkCreate_
  // 13_0) through static inline wrappers; the plain names are exported too.
  // Prefer the versioned ones this code was written against.
  Status bound = Status::success();
  auto bind = [&](auto &pointer, const char *versioned, const char *plain) {
    if (bound)
      bound = library->bind(pointer, {versioned, plain});
  };
  bind(api->create, "__nvJitLinkCreate_13_0", "nvJitLinkCreate");
  bind(api->destroy, "__nvJitLinkDestroy_13_0", "nvJitLinkDestroy");
  bind(api->addData, "__nvJitLinkAddData_13_0", "nvJitLinkAddData");
  bind(api->complete, "__nvJitLinkComplete_13_0", "nvJitLinkComplete");
  bind(api->getLinkedCubinSize, "__nvJitLinkGetLinkedCubinSize_13_0",
       "nvJitLinkGetLinkedCubinSize");
  bind(api->getLinkedCubin, "__nvJitLinkGetLinkedCubin_13_0",
       "nvJitLinkGetLinkedCubin");
  bind(api->getErrorLogSize, "__nvJitLinkGetErrorLogSize_13_0",
       "nvJitLinkGetErrorLogSize");
  bind(api->getErrorLog, "__nvJitLinkGetErrorLog_13_0", "nvJitLinkGetErrorLog");
  bind(api->getInfoLogSize, "__nvJitLinkGetInfoLogSize_13_0",
       "nvJitLinkGetInfoLogSize");
  bind(api->getInfoLog, "__nvJitLinkGetInfoLog_13_0", "nvJitLinkGetInfoLog");
  if (!bound)
    return std::move(bound).takeError();
  return std::shared_ptr<const NvJitLinkApi>(std::move(api));
}

Expected<const NvJitLinkApi *> nvJitLinkLibrary() {
  // Never destroyed: the warm-up thread may still use it while the process
  // exits.
  static const auto *loaded =
      new Expected<std::shared_ptr<const NvJitLinkApi>>(loadNvJitLink(
          LibraryLoadOptions::fromEnvironment("LOWBIT_LIBNVJITLINK")));
  if (!*loaded)
    return loaded->error();
  return (*loaded)->get();
}

std::vector<KernelResources> parsePtxasInfoLog(std::string_view log) {
  // Two reports name a kernel: ptxas's "Compiling entry function 'f'" and
  // "Function properties for f", and nvJitLink's summary after linking,
  // "Function properties for 'f':". Each selects the kernel the numbers on
  // the following lines belong to; the linker's summary comes last, so its
  // shared memory (which on sm_90 includes the 1 KiB the system reserves)
  // is what a record ends with.
  static const std::regex selectPattern(
      R"((?:Compiling entry function|Function properties for) '?([A-Za-z_$][A-Za-z0-9_$.]*)'?)");
  static const std::regex numberPattern(
      R"((\d+) (registers|bytes stack frame|bytes spill stores|bytes spill loads|bytes smem|bytes cmem\[0\]))");
  std::vector<KernelResources> kernels;
  KernelResources *current = nullptr;
  size_t position = 0;
  while (position < log.size()) {
    size_t end = log.find('\n', position);
    if (end == std::string_view::npos)
      end = log.size();
    std::string line(log.substr(position, end - position));
    position = end + 1;
    std::smatch match;
    if (std::regex_search(line, match, selectPattern)) {
      std::string name = match[1];
      current = nullptr;
      for (KernelResources &kernel : kernels)
        if (kernel.function == name)
          current = &kernel;
      if (!current) {
        kernels.push_back(KernelResources{});
        kernels.back().function = name;
        current = &kernels.back();
      }
      continue;
    }
    if (!current)
      continue;
    for (auto it =
             std::sregex_iterator(line.begin(), line.end(), numberPattern);
         it != std::sregex_iterator(); ++it) {
      int value = std::stoi((*it)[1]);
      std::string what = (*it)[2];
      if (what == "registers")
        current->registers = value;
      else if (what == "bytes stack frame")
        current->stackBytes = value;
      else if (what == "bytes spill stores")
        current->spillStoreBytes = value;
      else if (what == "bytes spill loads")
        current->spillLoadBytes = value;
      else if (what == "bytes smem")
        current->sharedBytes = value;
      else if (what == "bytes cmem[0]")
        current->constantBytes = value;
    }
  }
  // ptxas omits "smem" when a kernel uses no shared memory.
  for (KernelResources &kernel : kernels)
    if (kernel.registers >= 0 && kernel.sharedBytes < 0)
      kernel.sharedBytes = 0;
  return kernels;
}

namespace {

bool isValidArch(std::string_view arch) {
  // sm_<digits>, optionally followed by 'a' or 'f' (arch- or
  // family-specific features).
  if (arch.size() < 4 || arch.substr(0, 3) != "sm_")
    return false;
  std::string_view rest = arch.substr(3);
  if (!rest.empty() && (rest.back() == 'a' || rest.back() == 'f'))
    rest.remove_suffix(1);
  if (rest.empty())
    return false;
  for (char digit : rest)
    if (digit < '0' || digit > '9')
      return false;
  return true;
}

std::string readLog(nvJitLinkHandle handle,
                    nvJitLinkResult (*getSize)(nvJitLinkHandle, size_t *),
                    nvJitLinkResult (*get)(nvJitLinkHandle, char *)) {
  size_t size = 0;
  if (getSize(handle, &size) != 0 || size <= 1)
    return {};
  std::string log(size, '\0');
  if (get(handle, log.data()) != 0)
    return {};
  log.resize(std::strlen(log.c_str()));
  return log;
}

} // namespace

Expected<Cubin> linkPtx(const NvJitLinkApi &api, std::string_view ptx,
                        std::string_view arch, const LinkOptions &options) {
  if (!isValidArch(arch))
    return makeError(ErrorCode::InvalidArgument,
                     "nvJitLink: '" + std::string(arch) +
                         "' is not a chip name like sm_90a");
  if (options.optimizationLevel < 0 || options.optimizationLevel > 3)
    return makeError(ErrorCode::InvalidArgument,
                     "nvJitLink: optimization level must be 0..3");
  auto start = std::chrono::steady_clock::now();
  // -verbose makes ptxas report registers, spills and shared memory in the
  // info log, which is how the resources reach the cache receipt.
  std::vector<std::string> optionText = {
      "-arch=" + std::string(arch), "-verbose",
      "-O" + std::to_string(options.optimizationLevel)};
  if (options.lineInfo)
    optionText.push_back("-lineinfo");
  optionText.insert(optionText.end(), options.extraOptions.begin(),
                    options.extraOptions.end());
  std::vector<const char *> optionPointers;
  for (const std::string &option : optionText)
    optionPointers.push_back(option.c_str());

  nvJitLinkHandle handle = nullptr;
  if (nvJitLinkResult result = api.create(
          &handle, uint32_t(optionPointers.size()), optionPointers.data()))
    return makeError(ErrorCode::LinkFailed, "nvJitLinkCreate failed (error " +
                                                std::to_string(result) +
                                                ") for " + std::string(arch));
  struct HandleGuard {
    const NvJitLinkApi &api;
    nvJitLinkHandle &handle;
    ~HandleGuard() { api.destroy(&handle); }
  } guard{api, handle};

  auto failed = [&](std::string_view call, nvJitLinkResult result) {
    std::string log = readLog(handle, api.getErrorLogSize, api.getErrorLog);
    return makeError(ErrorCode::LinkFailed,
                     std::string(call) + " failed (error " +
                         std::to_string(result) + ") for " + std::string(arch) +
                         (log.empty() ? "" : ":\n") + log);
  };
  if (nvJitLinkResult result = api.addData(handle, kNvJitLinkInputPtx,
                                           ptx.data(), ptx.size(), "lowbit"))
    return failed("nvJitLinkAddData", result);
  if (nvJitLinkResult result = api.complete(handle))
    return failed("nvJitLinkComplete", result);

  Cubin cubin;
  cubin.arch = std::string(arch);
  size_t size = 0;
  if (nvJitLinkResult result = api.getLinkedCubinSize(handle, &size))
    return failed("nvJitLinkGetLinkedCubinSize", result);
  cubin.bytes.resize(size);
  if (nvJitLinkResult result = api.getLinkedCubin(handle, cubin.bytes.data()))
    return failed("nvJitLinkGetLinkedCubin", result);
  cubin.infoLog = readLog(handle, api.getInfoLogSize, api.getInfoLog);
  cubin.allKernels = parsePtxasInfoLog(cubin.infoLog);
  if (!cubin.allKernels.empty())
    cubin.resources = cubin.allKernels.front();
  cubin.linkMillis = std::chrono::duration<double, std::milli>(
                         std::chrono::steady_clock::now() - start)
                         .count();
  return cubin;
}

Expected<Cubin> linkPtx(std::string_view ptx, std::string_view arch,
                        const LinkOptions &options) {
  // The warm-up's link and a real one never overlap: the first use of
  // nvJitLink in a process is not safe to race (a concurrent first link
  // once came back without its kernel's resources).
  (void)waitForNvJitLinkWarmup();
  Expected<const NvJitLinkApi *> api = nvJitLinkLibrary();
  if (!api)
    return api.error();
  return linkPtx(**api, ptx, arch, options);
}

namespace {

/// The warm-up's state. Never destroyed: the thread may outlive main.
struct Warmup {
  std::mutex mutex;
  std::condition_variable finished;
  bool started = false;
  bool running = false;
  bool loaded = false;

  static Warmup &get() {
    static Warmup *warmup = new Warmup();
    return *warmup;
  }
};

/// Registered (after nvJitLink is loaded, so it runs before nvJitLink's own
/// exit handlers) to keep exit from tearing nvJitLink down mid-link.
void waitForWarmupAtExit() { (void)waitForNvJitLinkWarmup(); }

/// The smallest PTX nvJitLink accepts for every chip lowbit targets
/// (sm_80 PTX is valid input for sm_80 and newer).
constexpr std::string_view kWarmupPtx = ".version 7.0\n"
                                        ".target sm_80\n"
                                        ".address_size 64\n"
                                        ".visible .entry lowbit_warmup()\n"
                                        "{\n"
                                        "  ret;\n"
                                        "}\n";

} // namespace

void startNvJitLinkWarmup(std::string_view arch) {
  if (!isValidArch(arch))
    return;
  Warmup &warmup = Warmup::get();
  {
    std::lock_guard<std::mutex> lock(warmup.mutex);
    if (warmup.started)
      return;
    warmup.started = true;
    warmup.running = true;
  }
  // Registered here too, before the thread exists: a process that exits
  // before the thread has loaded nvJitLink must still wait for it.
  std::atexit(waitForWarmupAtExit);
  auto finish = [&warmup](bool loaded) {
    std::lock_guard<std::mutex> lock(warmup.mutex);
    warmup.running = false;
    warmup.loaded = loaded;
    warmup.finished.notify_all();
  };
  try {
    std::thread([finish, chip = std::string(arch)] {
      Expected<const NvJitLinkApi *> api = nvJitLinkLibrary();
      if (api) {
        std::atexit(waitForWarmupAtExit);
        (void)linkPtx(**api, kWarmupPtx, chip);
      }
      finish(api.ok());
    }).detach();
  } catch (...) {
    // No thread to be had: the first link pays the setup itself.
    finish(false);
  }
}

bool waitForNvJitLinkWarmup() {
  Warmup &warmup = Warmup::get();
  std::unique_lock<std::mutex> lock(warmup.mutex);
  warmup.finished.wait(lock, [&] { return !warmup.running; });
  return warmup.loaded;
}

std::string_view cubinMakerName(CubinMaker maker) {
  return maker == CubinMaker::Driver ? "driver" : "nvjitlink";
}

Expected<CubinMaker> parseCubinMaker(std::string_view name) {
  if (name == "nvjitlink")
    return CubinMaker::NvJitLink;
  if (name == "driver")
    return CubinMaker::Driver;
  return makeError(ErrorCode::InvalidArgument,
                   "unknown cubin maker '" + std::string(name) +
                       "': expected 'nvjitlink' (PTX -> cubin at compile "
                       "time) or 'driver' (the driver JIT-compiles the PTX "
                       "when a launch loads it)");
}

Expected<CubinMaker> cubinMakerFromEnvironment() {
  const char *value = std::getenv("LOWBIT_CUBIN");
  if (!value || !*value)
    return CubinMaker::NvJitLink;
  Expected<CubinMaker> maker = parseCubinMaker(value);
  if (!maker)
    return makeError(ErrorCode::InvalidArgument,
                     "LOWBIT_CUBIN: " + maker.error().message);
  return maker;
}

std::optional<Cubin> makeCubin(const NvJitLinkApi *api, std::string_view ptx,
                               std::string_view arch, CubinMaker maker) {
  if (maker == CubinMaker::Driver || !api)
    return std::nullopt;
  Expected<Cubin> cubin = linkPtx(*api, ptx, arch);
  if (!cubin)
    return std::nullopt;
  return std::move(*cubin);
}

} // namespace lowbit::runtime
