//===- Jit.cpp - lowbit::Jit: key -> cache -> compile -> run/launch -------===//
//
// Reads top to bottom, as the launch path does:
//
//   get():    spec + target -> signature (once) -> key for the spec's sizes
//             and aligned buffers -> resolve (memory, disk, compile once)
//   run():    key from (rows, cols, pointers) -> CPU engine -> run
//   launch(): key -> cached entry -> loaded CUmodule -> evaluate the launch
//             plan -> cuLaunchKernel for each kernel, in order
//
//===----------------------------------------------------------------------===//

#include "lowbit/Jit.h"

#include "runtime/cache/GpuPayload.h"
#include "runtime/cache/Hash.h"
#include "runtime/compiler/Compiler.h"
#include "runtime/driver/CudaDriver.h"
#include "runtime/driver/NvJitLink.h"
#include "runtime/jit/KernelSignature.h"
#include "runtime/jit/LaunchPlan.h"

#include "llvm/Support/Error.h"
#include "llvm/TargetParser/Host.h"

#include <charconv>
#include <chrono>
#include <future>
#include <mutex>
#include <unordered_map>

namespace lowbit {

using runtime::CacheEntry;
using runtime::CompiledKernel;
using runtime::KernelKey;
using runtime::KernelKeyHasher;
using runtime::PreparedSignature;

std::string_view jitPipelineDescription() {
  // Generated from the compiler at build time (KernelSignature.h), so that
  // the MLIR-free front end computes the same keys.
  return jit::compilerPipelineDescription();
}

namespace {

using Clock = std::chrono::steady_clock;

double millisSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start)
      .count();
}

//===----------------------------------------------------------------------===//
// The GPU payload: launch plan, PTX and cubin in one cache entry.
//===----------------------------------------------------------------------===//

using runtime::GpuPayload;

/// The host CPU's name and a hash of its features: what a CPU binary is
/// specialized on.
std::string hostFeatures() {
  std::string features;
  for (const auto &feature : llvm::sys::getHostCPUFeatures())
    if (feature.getValue())
      features += "+" + feature.getKey().str() + ",";
  return llvm::sys::getHostCPUName().str() + " features#" +
         runtime::toHex64(runtime::xxh64(features.data(), features.size(), 0));
}

Error llvmError(ErrorCode code, llvm::Error error) {
  return makeError(code, llvm::toString(std::move(error)));
}

struct CpuEntry {
  std::unique_ptr<compiler::CpuKernel> kernel;
  double compileMillis = 0;
};
using CpuResult = Expected<std::shared_ptr<CpuEntry>>;

/// A CUmodule with its functions, loaded once per (Jit, key).
struct LoadedModule {
  const runtime::CudaDriverApi *api = nullptr;
  runtime::CUmodule module = nullptr;
  std::vector<runtime::CUfunction> functions;
  jit::LaunchPlan plan;
  /// Launches of one module are serialized on the host: the reduction
  /// globals live in the module (docs/gpu.md).
  std::mutex launchMutex;
  ~LoadedModule() {
    if (module)
      api->cuModuleUnload(module);
  }
};

} // namespace

//===----------------------------------------------------------------------===//
// Jit::Impl
//===----------------------------------------------------------------------===//

struct Jit::Impl {
  JitOptions options;
  runtime::KernelCache cache;
  std::atomic<uint64_t> cpuCompiles{0}, gpuCompiles{0};

  std::mutex cpuMutex;
  std::unordered_map<KernelKey, std::shared_future<CpuResult>, KernelKeyHasher>
      cpuKernels;

  std::mutex cudaMutex;
  std::optional<Expected<std::shared_ptr<runtime::CudaContext>>> cudaContext;
  std::unordered_map<KernelKey, std::shared_ptr<LoadedModule>, KernelKeyHasher>
      modules;

  Impl(JitOptions options, runtime::CacheOptions cacheOptions)
      : options(std::move(options)), cache(std::move(cacheOptions)) {}

  ~Impl() {
    // Modules before the context; engines before anything static of LLVM.
    modules.clear();
    cpuKernels.clear();
  }

  CpuResult resolveCpu(const KernelKey &key, const KernelSpec &spec);
  Expected<std::shared_ptr<const CacheEntry>> resolveGpu(const KernelKey &key,
                                                         const KernelSpec &spec,
                                                         const Target &target);
  Expected<std::shared_ptr<LoadedModule>>
  loadModule(const KernelKey &key, const CacheEntry &entry);
};

CpuResult Jit::Impl::resolveCpu(const KernelKey &key, const KernelSpec &spec) {
  std::shared_future<CpuResult> future;
  std::promise<CpuResult> promise;
  bool compileHere = false;
  {
    std::lock_guard<std::mutex> lock(cpuMutex);
    auto found = cpuKernels.find(key);
    if (found != cpuKernels.end()) {
      future = found->second;
    } else if (cache.options().mode == runtime::CacheMode::MustHit) {
      return makeError(ErrorCode::CacheMiss,
                       "LOWBIT_CACHE=must-hit: CPU kernels are cached in "
                       "memory only, and '" +
                           key.signature().spec +
                           "' was not compiled in this process");
    } else {
      future = promise.get_future().share();
      cpuKernels.emplace(key, future);
      compileHere = true;
    }
  }
  if (!compileHere)
    return future.get();

  // Compile outside the lock; other threads wait on the future.
  Clock::time_point start = Clock::now();
  auto compiled = compiler::compileForCpu(spec);
  CpuResult result = makeError(ErrorCode::CompileFailed, "");
  if (!compiled) {
    result = llvmError(ErrorCode::CompileFailed, compiled.takeError());
  } else {
    auto entry = std::make_shared<CpuEntry>();
    entry->kernel = std::move(*compiled);
    entry->compileMillis = millisSince(start);
    result = std::move(entry);
  }
  cpuCompiles.fetch_add(1);
  promise.set_value(result);
  if (!result.ok()) {
    // Errors are not cached: the next request tries again.
    std::lock_guard<std::mutex> lock(cpuMutex);
    cpuKernels.erase(key);
  }
  return result;
}

Expected<std::shared_ptr<const CacheEntry>>
Jit::Impl::resolveGpu(const KernelKey &key, const KernelSpec &spec,
                      const Target &target) {
  auto compile = [&](const KernelKey &) -> Expected<CompiledKernel> {
    gpuCompiles.fetch_add(1);
    Expected<jit::GpuBuild> build = jit::buildGpuKernel(spec, target);
    if (!build)
      return std::move(build).takeError();
    CompiledKernel kernel;
    kernel.entryName =
        build->kernelNames.empty() ? "" : build->kernelNames.front();
    GpuPayload payload{build->plan.serialize(), std::move(build->ptx), ""};
    // nvJitLink is optional: without it, or when it cannot link for this
    // chip (CUDA 13's nvJitLink does not know sm_101a, which CUDA 13 calls
    // sm_110a), the entry holds PTX only and the driver JIT-compiles it at
    // load time, where its own error names any problem. PTX is the
    // product; the cubin only saves the driver that work.
    kernel.kind = runtime::BinaryKind::Ptx;
    if (runtime::nvJitLinkLibrary().ok()) {
      Expected<runtime::Cubin> cubin =
          runtime::linkPtx(payload.ptx, target.chip);
      if (cubin) {
        kernel.kind = runtime::BinaryKind::Cubin;
        kernel.registers = cubin->resources.registers;
        kernel.spillStoreBytes = cubin->resources.spillStoreBytes;
        kernel.spillLoadBytes = cubin->resources.spillLoadBytes;
        kernel.sharedBytes = cubin->resources.sharedBytes;
        kernel.stackBytes = cubin->resources.stackBytes;
        payload.cubin = std::move(cubin->bytes);
      }
    }
    kernel.binary = runtime::encodeGpuPayload(payload);
    kernel.payloadFormat = runtime::PayloadFormat::JitGpu;
    return kernel;
  };
  return cache.getOrCompile(key, compile);
}

Expected<std::shared_ptr<LoadedModule>>
Jit::Impl::loadModule(const KernelKey &key, const CacheEntry &entry) {
  std::lock_guard<std::mutex> lock(cudaMutex);
  if (auto found = modules.find(key); found != modules.end())
    return found->second;
  if (!cudaContext) {
    Expected<const runtime::CudaDriverApi *> api = runtime::cudaDriver();
    if (!api) {
      cudaContext.emplace(std::move(api).takeError());
    } else {
      Expected<runtime::CudaContext> context =
          runtime::CudaContext::open(**api);
      if (!context)
        cudaContext.emplace(std::move(context).takeError());
      else
        cudaContext.emplace(
            std::make_shared<runtime::CudaContext>(std::move(*context)));
    }
  }
  if (!cudaContext->ok())
    return cudaContext->error();
  runtime::CudaContext &context = *cudaContext->value();
  if (Status current = context.makeCurrent(); !current)
    return std::move(current).takeError();

  Expected<GpuPayload> payload = runtime::decodeGpuPayload(entry.kernel.binary);
  if (!payload)
    return std::move(payload).takeError();
  Expected<jit::LaunchPlan> plan = jit::LaunchPlan::parse(payload->plan);
  if (!plan)
    return std::move(plan).takeError();
  if (!plan->unsupported.empty())
    return makeError(ErrorCode::Unsupported,
                     "the JIT cannot launch this kernel: " +
                         plan->unsupported);
  const runtime::CudaDriverApi &api = context.api();
  auto module = std::make_shared<LoadedModule>();
  module->api = &api;
  module->plan = std::move(*plan);
  const std::string &image =
      payload->cubin.empty() ? payload->ptx : payload->cubin;
  if (runtime::CUresult result =
          api.cuModuleLoadData(&module->module, image.c_str());
      result != runtime::kCudaSuccess)
    return makeError(ErrorCode::CudaError,
                     runtime::describeCudaError(api, result,
                                                "cuModuleLoadData"));
  for (const jit::LaunchStep &step : module->plan.steps) {
    runtime::CUfunction function = nullptr;
    if (runtime::CUresult result = api.cuModuleGetFunction(
            &function, module->module, step.kernelName.c_str());
        result != runtime::kCudaSuccess)
      return makeError(ErrorCode::CudaError,
                       runtime::describeCudaError(api, result,
                                                  "cuModuleGetFunction(" +
                                                      step.kernelName + ")"));
    module->functions.push_back(function);
  }
  modules.emplace(key, module);
  return module;
}

//===----------------------------------------------------------------------===//
// Kernel
//===----------------------------------------------------------------------===//

struct Kernel::State {
  std::shared_ptr<Jit::Impl> jit;
  KernelSpec spec;
  Target target;
  std::shared_ptr<const PreparedSignature> signature;
  size_t paramCount = 0;
  /// The key get() compiled: the spec's sizes, every buffer aligned.
  KernelKey primaryKey;
  // What get() resolved (for ptx(), resources()).
  std::shared_ptr<const CacheEntry> gpuEntry;
  std::string ptx;
  std::shared_ptr<CpuEntry> cpuEntry;
  bool fromDisk = false;
  double compileMillis = 0;

  Expected<KernelKey> keyFor(int64_t rows, int64_t cols,
                             std::span<const void *const> pointers) const {
    if (pointers.size() != paramCount)
      return makeError(ErrorCode::InvalidArgument,
                       "the kernel takes " + std::to_string(paramCount) +
                           " buffers, got " + std::to_string(pointers.size()));
    if (rows < 0 || cols < 0)
      return makeError(ErrorCode::InvalidArgument, "negative size");
    if ((spec.rows != kDynamic && spec.rows != rows) ||
        (spec.cols != kDynamic && spec.cols != cols))
      return makeError(ErrorCode::InvalidArgument,
                       "the spec has static sizes " +
                           std::to_string(spec.rows) + "x" +
                           std::to_string(spec.cols) + "; called with " +
                           std::to_string(rows) + "x" + std::to_string(cols));
    return runtime::makeKernelKey(signature, spec.rows == kDynamic ? 0 : rows,
                                  spec.cols == kDynamic ? 0 : cols, pointers);
  }

  jit::ParamShapes shapes(int64_t rows, int64_t cols) const {
    jit::ParamShapes result;
    for (const Shape2D &shape : compiler::bufferShapes(spec, rows, cols))
      result.push_back({shape.rows, shape.cols});
    return result;
  }
};

const KernelSpec &Kernel::spec() const { return state->spec; }
const Target &Kernel::target() const { return state->target; }
size_t Kernel::bufferCount() const { return state->paramCount; }
std::string_view Kernel::ptx() const { return state->ptx; }
bool Kernel::loadedFromDisk() const { return state->fromDisk; }
double Kernel::compileMillis() const { return state->compileMillis; }

KernelResources Kernel::resources() const {
  KernelResources resources;
  if (!state->gpuEntry)
    return resources;
  const CompiledKernel &kernel = state->gpuEntry->kernel;
  resources.registers = kernel.registers;
  resources.spillStoreBytes = kernel.spillStoreBytes;
  resources.spillLoadBytes = kernel.spillLoadBytes;
  resources.sharedBytes = kernel.sharedBytes;
  resources.stackBytes = kernel.stackBytes;
  return resources;
}

Status Kernel::run(std::span<void *const> buffers, int64_t rows,
                   int64_t cols) const {
  if (!state->target.isCpu())
    return makeError(ErrorCode::InvalidArgument,
                     "run() is for CPU kernels; this one is for " +
                         state->target.str() + " (use launch())");
  Expected<KernelKey> key = state->keyFor(
      rows, cols,
      std::span<const void *const>(
          const_cast<const void *const *>(buffers.data()), buffers.size()));
  if (!key)
    return std::move(key).takeError();
  CpuResult entry = state->cpuEntry;
  if (!(*key == state->primaryKey))
    entry = state->jit->resolveCpu(*key, state->spec);
  if (!entry)
    return std::move(entry).takeError();
  std::vector<compiler::HostBuffer> hostBuffers;
  jit::ParamShapes shapes = state->shapes(rows, cols);
  for (size_t i = 0; i < buffers.size(); ++i)
    hostBuffers.push_back({buffers[i], shapes[i][0], shapes[i][1]});
  if (llvm::Error error = (*entry)->kernel->run(hostBuffers))
    return llvmError(ErrorCode::InvalidArgument, std::move(error));
  return Status::success();
}

Status Kernel::launch(void *stream, std::span<const uint64_t> buffers,
                      int64_t rows, int64_t cols) const {
  if (!state->target.isNvidia())
    return makeError(ErrorCode::InvalidArgument,
                     "launch() is for GPU kernels; this one is for the CPU "
                     "(use run())");
  std::array<const void *, 32> pointers{};
  if (buffers.size() > pointers.size())
    return makeError(ErrorCode::InvalidArgument, "too many buffers");
  for (size_t i = 0; i < buffers.size(); ++i)
    pointers[i] = reinterpret_cast<const void *>(uintptr_t(buffers[i]));
  Expected<KernelKey> key = state->keyFor(
      rows, cols, std::span<const void *const>(pointers.data(), buffers.size()));
  if (!key)
    return std::move(key).takeError();
  Expected<std::shared_ptr<const CacheEntry>> entry = state->gpuEntry;
  if (!(*key == state->primaryKey))
    entry = state->jit->resolveGpu(*key, state->spec, state->target);
  if (!entry)
    return std::move(entry).takeError();
  Expected<std::shared_ptr<LoadedModule>> module =
      state->jit->loadModule(*key, **entry);
  if (!module)
    return std::move(module).takeError();

  // Pack each kernel's parameters: a memref is its expanded descriptor
  // {allocated, aligned, offset, sizes[2], strides[2]} (docs/kernel-abi.md,
  // MLIR's default memref lowering for kernel arguments).
  jit::ParamShapes shapes = state->shapes(rows, cols);
  LoadedModule &loaded = **module;
  std::lock_guard<std::mutex> lock(loaded.launchMutex);
  for (size_t s = 0; s < loaded.plan.steps.size(); ++s) {
    const jit::LaunchStep &step = loaded.plan.steps[s];
    Expected<jit::ResolvedLaunch> resolved =
        jit::resolveLaunch(step, shapes, buffers);
    if (!resolved)
      return std::move(resolved).takeError();
    if (resolved->empty())
      continue; // An empty tensor: nothing to launch.
    const std::array<int64_t, 7> &sizes = resolved->sizes;
    std::vector<uint64_t> &values = resolved->values;
    // Each parameter's address; 32-bit scalars read the low half (little
    // endian).
    std::vector<void *> arguments;
    for (uint64_t &value : values)
      arguments.push_back(&value);
    const runtime::CudaDriverApi &api = *loaded.api;
    if (runtime::CUresult result = api.cuLaunchKernel(
            loaded.functions[s], unsigned(sizes[0]), unsigned(sizes[1]),
            unsigned(sizes[2]), unsigned(sizes[3]), unsigned(sizes[4]),
            unsigned(sizes[5]), unsigned(sizes[6]),
            static_cast<runtime::CUstream>(stream), arguments.data(), nullptr);
        result != runtime::kCudaSuccess)
      return makeError(ErrorCode::CudaError,
                       runtime::describeCudaError(api, result,
                                                  "cuLaunchKernel(" +
                                                      step.kernelName + ")"));
  }
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Jit
//===----------------------------------------------------------------------===//

Jit::Jit(std::shared_ptr<Impl> impl) : impl(std::move(impl)) {}
Jit::~Jit() = default;

Expected<std::unique_ptr<Jit>> Jit::create(JitOptions options) {
  Expected<runtime::CacheOptions> environment =
      runtime::CacheOptions::fromEnvironment();
  runtime::CacheOptions cacheOptions;
  if (environment)
    cacheOptions = *environment;
  else if (options.cacheDirectory.empty() || !options.cacheMode)
    return std::move(environment).takeError();
  if (!options.cacheDirectory.empty())
    cacheOptions.directory = options.cacheDirectory;
  if (options.cacheMode)
    cacheOptions.mode = *options.cacheMode;
  return std::unique_ptr<Jit>(
      new Jit(std::make_shared<Impl>(std::move(options), cacheOptions)));
}

Expected<Kernel> Jit::get(std::string_view specText, const Target &target) {
  std::string error;
  std::optional<KernelSpec> spec = parseKernelSpec(specText, &error);
  if (!spec)
    return makeError(ErrorCode::InvalidArgument, "kernel spec: " + error);
  return get(*spec, target);
}

Expected<Kernel> Jit::get(std::string_view specText) {
  return get(specText, impl->options.target);
}

Expected<Kernel> Jit::get(const KernelSpec &spec, const Target &target) {
  std::string error;
  if (!validateKernelSpec(spec, &error))
    return makeError(ErrorCode::InvalidArgument, "kernel spec: " + error);
  if (target.isNvidia() && !validateTarget(target, &error))
    return makeError(ErrorCode::InvalidArgument, "target: " + error);

  static const std::string features = hostFeatures();
  runtime::KernelSignature signature =
      jit::kernelSignature(spec, target, features);
  size_t paramCount = size_t(signature.pointerCount);
  auto prepared = runtime::prepareSignature(std::move(signature));
  if (!prepared)
    return std::move(prepared).takeError();

  auto state = std::make_shared<Kernel::State>();
  state->jit = impl;
  state->spec = spec;
  state->target = target;
  state->signature = *prepared;
  state->paramCount = paramCount;
  state->primaryKey = jit::primaryKernelKey(spec, state->signature);

  if (target.isCpu()) {
    CpuResult entry = impl->resolveCpu(state->primaryKey, spec);
    if (!entry)
      return std::move(entry).takeError();
    state->cpuEntry = *entry;
    state->compileMillis = (*entry)->compileMillis;
    return Kernel(std::move(state));
  }
  auto entry = impl->resolveGpu(state->primaryKey, spec, target);
  if (!entry)
    return std::move(entry).takeError();
  Expected<GpuPayload> payload = runtime::decodeGpuPayload((*entry)->kernel.binary);
  if (!payload)
    return std::move(payload).takeError();
  state->gpuEntry = *entry;
  state->ptx = std::move(payload->ptx);
  state->fromDisk = (*entry)->origin == CacheEntry::Origin::Disk;
  state->compileMillis = (*entry)->compileMillis;
  return Kernel(std::move(state));
}

JitStats Jit::stats() const {
  JitStats stats;
  stats.cpuCompiles = impl->cpuCompiles.load();
  stats.gpuCompiles = impl->gpuCompiles.load();
  stats.compiles = stats.cpuCompiles + stats.gpuCompiles;
  stats.cache = impl->cache.stats();
  return stats;
}

const runtime::CacheOptions &Jit::cacheOptions() const {
  return impl->cache.options();
}

} // namespace lowbit
