//===- JitImpl.h - lowbit::Jit's shared state (internal) ---------*- C++
//-*-===//
//
// Jit::Impl and what it holds, shared by Jit.cpp (quantize kernels) and
// KvJit.cpp (KV-cache kernels): the caches, the compiler's entry points
// through them, and the loaded CUDA modules. Internal to runtime/jit.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_JIT_JITIMPL_H
#define LOWBIT_RUNTIME_JIT_JITIMPL_H

#include "lowbit/Jit.h"

#include "runtime/aot/LaunchProgram.h"
#include "runtime/aot/WorkspacePool.h"
#include "runtime/driver/CudaDriver.h"
#include "runtime/jit/CompilerBackend.h"
#include "runtime/jit/LruMap.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <mutex>

namespace lowbit {

using runtime::CacheEntry;
using runtime::CompiledKernel;
using runtime::KernelKey;
using runtime::KernelKeyHasher;
using runtime::PreparedSignature;

struct CpuEntry {
  std::unique_ptr<jit::CpuKernelHandle> kernel;
  double compileMillis = 0;
};
using CpuResult = Expected<std::shared_ptr<CpuEntry>>;

/// A KV kernel's host engine (Jit::getKv), held in memory only.
struct KvCpuEntry {
  std::unique_ptr<jit::KvCpuKernelHandle> kernel;
  double compileMillis = 0;
};
using KvCpuResult = Expected<std::shared_ptr<KvCpuEntry>>;

/// A CUmodule with its functions and compiled launches, loaded once per
/// (Jit, key).
struct LoadedModule {
  const runtime::CudaDriverApi *api = nullptr;
  std::shared_ptr<runtime::CudaContext> context;
  runtime::CUmodule module = nullptr;
  std::vector<runtime::CUfunction> functions;
  std::shared_ptr<const launch::LaunchProgram> program;
  ~LoadedModule() {
    if (module)
      api->cuModuleUnload(module);
  }
};

/// The memory map key of get() and getKv(): target and spec text as the
/// caller wrote them (a different spelling of the same spec is a second
/// entry of the same kernel).
inline std::string memoKeyOf(std::string_view specText, const Target &target) {
  std::string key;
  key.reserve(specText.size() + target.chip.size() + 8);
  key += target.isCpu() ? "cpu" : target.chip;
  key += '+';
  key += std::to_string(target.ptxVersion);
  key += '\n';
  key += specText;
  return key;
}

/// The host CPU's name and feature hash (the compiler's host detection,
/// asked once per process): what a CPU kernel's key is specialized on.
Expected<std::string> hostCpuFeatures();
/// The features a kernel's key holds for `target` (hostCpuFeatures on the
/// CPU, "" for a GPU, whose PTX version is the signature's); an NVIDIA
/// target the target table refuses is InvalidArgument.
Expected<std::string> targetFeatures(const Target &target);

/// What get() and getKv() keep of a resolved GPU entry (for ptx(),
/// resources() and the launches).
struct ResolvedGpuKernel {
  std::shared_ptr<const CacheEntry> gpuEntry;
  std::string ptx;
  bool fromDisk = false;
  double compileMillis = 0;
  /// Read from the entry: nothing here needs the compiler.
  int64_t workspaceWords = 0;
  /// The part of the workspace that grows with X (a matmul's prologues);
  /// only KvKernel's launches size one per call.
  workspace_abi::RowWords workspaceRows = {};

  /// Takes `entry` (its payload decoded); returns the launch plan's text.
  Expected<std::string> take(std::shared_ptr<const CacheEntry> entry);
  KernelResources resources() const;
};

/// Builds a GPU kernel on a miss: the compiler's table and whether a cubin
/// follows (false: PTX only, nvJitLink not loaded).
using GpuCompileFn = std::function<Expected<jit::GpuCompileResult>(
    const jit::CompilerBackend &, bool startLinker)>;

struct Jit::Impl {
  JitOptions options;
  /// options.cubinMaker, else LOWBIT_CUBIN (checked at create()).
  runtime::CubinMaker cubinMaker = runtime::CubinMaker::NvJitLink;
  runtime::KernelCache cache;
  std::atomic<uint64_t> cpuCompiles{0}, gpuCompiles{0}, evictions{0};

  std::mutex cpuMutex;
  jit::LruMap<KernelKey, std::shared_future<CpuResult>, KernelKeyHasher>
      cpuKernels;

  /// The GPU keys whose entries the cache holds in memory, to bound it.
  std::mutex gpuKeysMutex;
  jit::LruMap<KernelKey, bool, KernelKeyHasher> gpuKeys;

  std::mutex cudaMutex;
  std::optional<Expected<std::shared_ptr<runtime::CudaContext>>> cudaContext;
  jit::LruMap<KernelKey, std::shared_ptr<LoadedModule>, KernelKeyHasher>
      modules;
  /// After the context: freed before it.
  launch::WorkspacePool workspaces;
  /// JitOptions::warmUpCompiler's thread (std::async: ~Impl waits for it).
  std::future<void> warmUpDone;
  std::shared_future<Status> warmUp;

  /// getKv()'s host engines, and its answers by spec text and target
  /// (KvJit.cpp).
  jit::LruMap<KernelKey, std::shared_future<KvCpuResult>, KernelKeyHasher>
      kvCpuKernels;
  std::mutex kvKernelsMutex;
  jit::LruMap<std::string, std::shared_ptr<const KvKernel::State>> kvKernels;

  /// get()'s answers by memoKeyOf. The states hold this Impl, so ~Jit
  /// clears the map.
  std::mutex kernelsMutex;
  jit::LruMap<std::string, std::shared_ptr<const Kernel::State>> kernels;

  Impl(JitOptions options, runtime::CubinMaker cubinMaker,
       runtime::CacheOptions cacheOptions)
      : options(std::move(options)), cubinMaker(cubinMaker),
        cache(std::move(cacheOptions)),
        cpuKernels(this->options.memoryCapacity),
        gpuKeys(this->options.memoryCapacity),
        modules(this->options.memoryCapacity),
        kvCpuKernels(this->options.memoryCapacity),
        kvKernels(this->options.memoryCapacity),
        kernels(this->options.memoryCapacity) {}

  ~Impl() {
    // Modules before the context; engines before anything static of LLVM.
    modules.clear();
    cpuKernels.clear();
    kvCpuKernels.clear();
  }

  template <typename Evicted> void countEvictions(const Evicted &evicted) {
    evictions.fetch_add(evicted.size(), std::memory_order_relaxed);
  }

  /// get()/getKv() through their memory map: the state handed out for
  /// `memoKey`, else `make()`'s, remembered (the bound may push older
  /// ones out).
  template <typename State, typename Make>
  Expected<std::shared_ptr<const State>>
  memoized(jit::LruMap<std::string, std::shared_ptr<const State>> &map,
           std::mutex &mutex, const std::string &memoKey, Make make) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (auto *found = map.find(memoKey))
        return *found;
    }
    Expected<std::shared_ptr<const State>> state = make();
    if (!state)
      return state;
    std::vector<std::pair<std::string, std::shared_ptr<const State>>> evicted;
    {
      std::lock_guard<std::mutex> lock(mutex);
      evicted = map.insert(memoKey, *state);
    }
    countEvictions(evicted);
    return state;
  }

  /// The CPU engine of `key` in `map`: found, or compiled by
  /// `compile(backend)` once however many threads ask (errors are not
  /// cached: the next request tries again). must-hit refuses a miss.
  template <typename Entry, typename Compile>
  Expected<std::shared_ptr<Entry>>
  resolveCpuIn(jit::LruMap<KernelKey,
                           std::shared_future<Expected<std::shared_ptr<Entry>>>,
                           KernelKeyHasher> &map,
               const KernelKey &key, Compile compile);

  CpuResult resolveCpu(const KernelKey &key, const KernelSpec &spec);
  Expected<std::shared_ptr<const CacheEntry>> resolveGpu(const KernelKey &key,
                                                         const KernelSpec &spec,
                                                         const Target &target);
  /// The GPU cache entry of `key`: memory, disk, or `build` once (then
  /// the cubin, and the disk write).
  Expected<std::shared_ptr<const CacheEntry>>
  resolveGpu(const KernelKey &key, const Target &target,
             const GpuCompileFn &build);
  /// `entry`'s image loaded (once per key) with the functions
  /// `kernelNames`, in launch order; `program` is kept with it.
  Expected<std::shared_ptr<LoadedModule>>
  loadImage(const KernelKey &key, const CacheEntry &entry,
            std::shared_ptr<const launch::LaunchProgram> program,
            const std::vector<std::string> &kernelNames);
  /// `program`: the launches compiled at get() for this entry; nullptr:
  /// compile them from the entry's plan.
  Expected<std::shared_ptr<LoadedModule>>
  loadModule(const KernelKey &key, const CacheEntry &entry,
             std::shared_ptr<const launch::LaunchProgram> program,
             size_t paramCount);
};

using JitClock = std::chrono::steady_clock;

inline double millisSince(JitClock::time_point start) {
  return std::chrono::duration<double, std::milli>(JitClock::now() - start)
      .count();
}

template <typename Entry, typename Compile>
Expected<std::shared_ptr<Entry>> Jit::Impl::resolveCpuIn(
    jit::LruMap<KernelKey, std::shared_future<Expected<std::shared_ptr<Entry>>>,
                KernelKeyHasher> &map,
    const KernelKey &key, Compile compile) {
  using Result = Expected<std::shared_ptr<Entry>>;
  std::shared_future<Result> future;
  std::promise<Result> promise;
  bool compileHere = false;
  std::vector<std::pair<KernelKey, std::shared_future<Result>>> evicted;
  {
    std::lock_guard<std::mutex> lock(cpuMutex);
    if (auto *found = map.find(key)) {
      future = *found;
    } else if (cache.options().mode == runtime::CacheMode::MustHit) {
      return makeError(ErrorCode::CacheMiss,
                       "LOWBIT_CACHE=must-hit: CPU kernels are cached in "
                       "memory only, and '" +
                           key.signature().spec +
                           "' was not compiled in this process");
    } else {
      future = promise.get_future().share();
      evicted = map.insert(key, future);
      compileHere = true;
    }
  }
  countEvictions(evicted);
  evicted.clear(); // Engines are released outside the lock.
  if (!compileHere)
    return future.get();

  // Compile outside the lock; other threads wait on the future.
  JitClock::time_point start = JitClock::now();
  Expected<const jit::CompilerBackend *> backend = jit::compilerBackend();
  auto compiled = backend ? compile(**backend)
                          : decltype(compile(**backend))(backend.error());
  Result result = makeError(ErrorCode::CompileFailed, "");
  if (!compiled) {
    result = std::move(compiled).takeError();
  } else {
    auto entry = std::make_shared<Entry>();
    entry->kernel = std::move(*compiled);
    entry->compileMillis = millisSince(start);
    result = std::move(entry);
  }
  cpuCompiles.fetch_add(1);
  promise.set_value(result);
  if (!result.ok()) {
    // Errors are not cached: the next request tries again.
    std::lock_guard<std::mutex> lock(cpuMutex);
    map.erase(key);
  }
  return result;
}

} // namespace lowbit

#endif // LOWBIT_RUNTIME_JIT_JITIMPL_H
