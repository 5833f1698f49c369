//===- Jit.cpp - lowbit::Jit: key -> cache -> compile -> run/launch -------===//
//
// Reads top to bottom, as the launch path does:
//
//   get():    spec + target -> signature (once) -> key for the spec's sizes
//             and aligned buffers -> resolve (memory, disk, compile once)
//   run():    key from (rows, cols, pointers) -> CPU engine -> run
//   launch(): key -> loaded CUmodule (once per kernel) -> the stream's
//             workspace -> the launch program compiled at get() ->
//             cuLaunchKernel for each kernel, in order
//
// A repeated get() of the same spec text and target is one lookup in a
// bounded map (JitOptions::memoryCapacity); so are the CPU engines, the
// loaded modules and the GPU cache's memory entries.
//
// This file is MLIR-free: only a miss reaches the compiler, through
// jit::compilerBackend() (CompilerBackend.h), which is linked in or loaded
// with dlopen on that first miss.
//
//===----------------------------------------------------------------------===//

#include "lowbit/Jit.h"
#include "runtime/jit/JitImpl.h"

#include "format/Scheme.h"

#include "runtime/aot/LaunchProgram.h"
#include "runtime/aot/WorkspacePool.h"
#include "runtime/cache/GpuPayload.h"
#include "runtime/driver/CudaDriver.h"
#include "runtime/driver/NvJitLink.h"
#include "runtime/jit/ArgumentShapes.h"
#include "runtime/jit/BufferAliasing.h"
#include "runtime/jit/CompilerBackend.h"
#include "runtime/jit/KernelSignature.h"
#include "runtime/jit/LruMap.h"
#include "runtime/spec/KernelAbi.h"

#include <charconv>
#include <chrono>
#include <future>
#include <mutex>
#include <unordered_map>

namespace lowbit {

Expected<std::string> targetFeatures(const Target &target) {
  std::string error;
  if (target.isNvidia() && !validateTarget(target, &error))
    return makeError(ErrorCode::InvalidArgument, "target: " + error);
  // A CPU kernel is compiled in this process anyway: only its key asks the
  // compiler (LLVM's host detection); a GPU key never does.
  if (!target.isCpu())
    return std::string();
  return hostCpuFeatures();
}

Expected<std::string> hostCpuFeatures() {
  static const Expected<std::string> hostFeatures =
      []() -> Expected<std::string> {
    Expected<const jit::CompilerBackend *> backend = jit::compilerBackend();
    if (!backend)
      return std::move(backend).takeError();
    return (*backend)->hostFeatures();
  }();
  return hostFeatures;
}

std::string_view jitPipelineDescription() {
  // Generated from the compiler at build time (KernelSignature.h), so that
  // the MLIR-free front end computes the same keys.
  return jit::compilerPipelineDescription();
}

namespace {

//===----------------------------------------------------------------------===//
// The GPU payload: launch plan, PTX and cubin in one cache entry.
//===----------------------------------------------------------------------===//

using runtime::GpuPayload;

} // namespace

CpuResult Jit::Impl::resolveCpu(const KernelKey &key, const KernelSpec &spec) {
  return resolveCpuIn(cpuKernels, key,
                      [&](const jit::CompilerBackend &backend) {
                        return backend.compileCpu(spec);
                      });
}

namespace {

/// Links `payload`'s PTX into its cubin (unless `maker` says not to, or
/// nvJitLink is missing or cannot link for `chip`) and records the result
/// in `kernel`: kind, resources and the encoded payload.
void linkInto(CompiledKernel &kernel, GpuPayload payload, std::string_view chip,
              runtime::CubinMaker maker) {
  // nvJitLink is optional: without it, or when it cannot link for this
  // chip (CUDA 13's nvJitLink does not know sm_101a, which CUDA 13 calls
  // sm_110a), or under LOWBIT_CUBIN=driver, the entry holds PTX only and
  // the driver JIT-compiles it at the first launch (cuModuleLoadData),
  // where its own error names any problem. PTX is the product; the cubin
  // only saves the driver that work.
  kernel.kind = runtime::BinaryKind::Ptx;
  payload.cubinDeferred = false;
  const runtime::NvJitLinkApi *linker = nullptr;
  if (maker == runtime::CubinMaker::NvJitLink)
    if (Expected<const runtime::NvJitLinkApi *> api =
            runtime::nvJitLinkLibrary())
      linker = *api;
  if (std::optional<runtime::Cubin> cubin =
          runtime::makeCubin(linker, payload.ptx, chip, maker)) {
    kernel.kind = runtime::BinaryKind::Cubin;
    kernel.registers = cubin->resources.registers;
    kernel.spillStoreBytes = cubin->resources.spillStoreBytes;
    kernel.spillLoadBytes = cubin->resources.spillLoadBytes;
    kernel.sharedBytes = cubin->resources.sharedBytes;
    kernel.stackBytes = cubin->resources.stackBytes;
    payload.cubin = std::move(cubin->bytes);
  }
  kernel.binary = runtime::encodeGpuPayload(payload);
}

} // namespace

Expected<std::shared_ptr<const CacheEntry>>
Jit::Impl::resolveGpu(const KernelKey &key, const KernelSpec &spec,
                      const Target &target) {
  return resolveGpu(key, target,
                    [&](const jit::CompilerBackend &backend, bool linkCubin) {
                      return backend.compileGpu(spec, target, linkCubin);
                    });
}

Expected<std::shared_ptr<const CacheEntry>>
Jit::Impl::resolveGpu(const KernelKey &key, const Target &target,
                      const GpuCompileFn &build) {
  // Only the PTX is wanted: no cubin, and nvJitLink is not even loaded.
  bool linkCubin =
      cubinMaker == runtime::CubinMaker::NvJitLink && !options.deferCubin;
  auto compile = [&](const KernelKey &) -> Expected<CompiledKernel> {
    gpuCompiles.fetch_add(1);
    // The only place a GPU kernel needs the compiler: a disk hit never
    // gets here, so it never loads MLIR (LowbitJitLoader).
    Expected<const jit::CompilerBackend *> backend = jit::compilerBackend();
    if (!backend)
      return std::move(backend).takeError();
    Expected<jit::GpuCompileResult> built = build(**backend, linkCubin);
    if (!built)
      return std::move(built).takeError();
    CompiledKernel kernel;
    kernel.entryName =
        built->kernelNames.empty() ? "" : built->kernelNames.front();
    GpuPayload payload{std::move(built->plan), std::move(built->ptx), "",
                       built->workspaceWords, built->workspaceRows};
    kernel.payloadFormat = runtime::PayloadFormat::JitGpu;
    if (!linkCubin && options.deferCubin) {
      payload.cubinDeferred = true;
      kernel.kind = runtime::BinaryKind::Ptx;
      kernel.binary = runtime::encodeGpuPayload(payload);
      return kernel;
    }
    linkInto(kernel, std::move(payload), target.chip, cubinMaker);
    return kernel;
  };
  Expected<std::shared_ptr<const CacheEntry>> entry =
      cache.getOrCompile(key, compile);
  // An entry whose cubin was deferred (`lowbit compile --emit ptx`) is
  // completed by the first Jit that links, and replaced in the cache;
  // must-hit serves it as it is (the driver JITs the PTX at load).
  if (entry && linkCubin &&
      cache.options().mode != runtime::CacheMode::MustHit &&
      (*entry)->kernel.payloadFormat == runtime::PayloadFormat::JitGpu) {
    Expected<GpuPayload> payload =
        runtime::decodeGpuPayload((*entry)->kernel.binary);
    if (payload && payload->cubinDeferred) {
      CompiledKernel completed = (*entry)->kernel;
      linkInto(completed, std::move(*payload), target.chip, cubinMaker);
      entry = cache.replace(key, std::move(completed), (*entry)->origin);
    }
  }
  if (entry) {
    std::vector<std::pair<KernelKey, bool>> evicted;
    {
      std::lock_guard<std::mutex> lock(gpuKeysMutex);
      evicted = gpuKeys.insert(key, true);
    }
    countEvictions(evicted);
    for (const auto &[old, unused] : evicted)
      cache.forgetMemory(old);
  }
  return entry;
}

Expected<std::shared_ptr<LoadedModule>>
Jit::Impl::loadModule(const KernelKey &key, const CacheEntry &entry,
                      std::shared_ptr<const launch::LaunchProgram> program,
                      size_t paramCount) {
  {
    std::lock_guard<std::mutex> lock(cudaMutex);
    if (auto *found = modules.find(key))
      return *found;
  }
  if (!program) {
    Expected<GpuPayload> payload =
        runtime::decodeGpuPayload(entry.kernel.binary);
    if (!payload)
      return std::move(payload).takeError();
    Expected<launch::LaunchPlan> plan =
        launch::LaunchPlan::parse(payload->plan);
    if (!plan)
      return std::move(plan).takeError();
    Expected<launch::LaunchProgram> compiled =
        launch::compileLaunchPlan(*plan, paramCount, payload->workspaceWords);
    if (!compiled)
      return std::move(compiled).takeError();
    program =
        std::make_shared<const launch::LaunchProgram>(std::move(*compiled));
  }
  std::vector<std::string> kernelNames;
  for (const launch::CompiledStep &step : program->steps)
    kernelNames.push_back(step.kernelName);
  return loadImage(key, entry, std::move(program), kernelNames);
}

Expected<std::shared_ptr<LoadedModule>>
Jit::Impl::loadImage(const KernelKey &key, const CacheEntry &entry,
                     std::shared_ptr<const launch::LaunchProgram> program,
                     const std::vector<std::string> &kernelNames) {
  std::lock_guard<std::mutex> lock(cudaMutex);
  if (auto *found = modules.find(key))
    return *found;
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
  std::shared_ptr<runtime::CudaContext> context = cudaContext->value();
  if (Status current = context->makeCurrent(); !current)
    return std::move(current).takeError();

  Expected<GpuPayload> payload = runtime::decodeGpuPayload(entry.kernel.binary);
  if (!payload)
    return std::move(payload).takeError();
  const runtime::CudaDriverApi &api = context->api();
  auto module = std::make_shared<LoadedModule>();
  module->api = &api;
  module->context = context;
  module->program = std::move(program);
  const std::string &image =
      payload->cubin.empty() ? payload->ptx : payload->cubin;
  if (runtime::CUresult result =
          api.cuModuleLoadData(&module->module, image.c_str());
      result != runtime::kCudaSuccess)
    return makeError(
        ErrorCode::CudaError,
        runtime::describeCudaError(api, result, "cuModuleLoadData"));
  for (const std::string &name : kernelNames) {
    runtime::CUfunction function = nullptr;
    if (runtime::CUresult result =
            api.cuModuleGetFunction(&function, module->module, name.c_str());
        result != runtime::kCudaSuccess)
      return makeError(ErrorCode::CudaError,
                       runtime::describeCudaError(
                           api, result, "cuModuleGetFunction(" + name + ")"));
    module->functions.push_back(function);
  }
  // Evicted modules unload when their last launcher lets go.
  countEvictions(modules.insert(key, module));
  return module;
}

//===----------------------------------------------------------------------===//
// Kernel
//===----------------------------------------------------------------------===//

namespace {
/// Parameters a kernel may take (pointer alignment classes in the key).
constexpr size_t kMaxBuffers = 32;
} // namespace

struct Kernel::State : ResolvedGpuKernel {
  std::shared_ptr<Jit::Impl> jit;
  KernelSpec spec;
  Target target;
  std::shared_ptr<const PreparedSignature> signature;
  std::vector<KernelAbiParam> params;
  size_t paramCount = 0;
  /// The key get() compiled: the spec's sizes, every buffer aligned.
  KernelKey primaryKey;
  std::shared_ptr<CpuEntry> cpuEntry;
  /// GPU: the primary entry's launches, compiled at get(), or why they
  /// cannot be (an unsupported plan: launch() returns it).
  std::shared_ptr<const launch::LaunchProgram> program;
  std::optional<Error> programError;
  /// The primary entry's module, loaded by the first launch.
  mutable std::mutex moduleMutex;
  mutable std::shared_ptr<LoadedModule> primaryModule;

  Status checkSizes(int64_t rows, int64_t cols) const {
    if (rows < 0 || cols < 0)
      return makeError(ErrorCode::InvalidArgument, "negative size");
    if ((spec.rows != kDynamic && spec.rows != rows) ||
        (spec.cols != kDynamic && spec.cols != cols))
      return makeError(ErrorCode::InvalidArgument,
                       "the spec has static sizes " +
                           std::to_string(spec.rows) + "x" +
                           std::to_string(spec.cols) + "; called with " +
                           std::to_string(rows) + "x" + std::to_string(cols));
    return Status::success();
  }

  Expected<KernelKey> keyFor(int64_t rows, int64_t cols,
                             std::span<const void *const> pointers) const {
    if (pointers.size() != paramCount)
      return makeError(ErrorCode::InvalidArgument,
                       "the kernel takes " + std::to_string(paramCount) +
                           " buffers, got " + std::to_string(pointers.size()));
    if (Status sizes = checkSizes(rows, cols); !sizes)
      return std::move(sizes).takeError();
    return runtime::makeKernelKey(signature, spec.rows == kDynamic ? 0 : rows,
                                  spec.cols == kDynamic ? 0 : cols, pointers);
  }

  /// The parameters' shapes into fixed storage, from the format model by
  /// role and fused side tensor (ArgumentShapes.h; the same rules as
  /// compiler::bufferShapes, which builds an MLIRContext and so is no
  /// launch-path call).
  void shapes(int64_t rows, int64_t cols,
              std::array<launch::Shape, kMaxBuffers> &out) const {
    for (size_t i = 0; i < params.size() && i < out.size(); ++i) {
      Shape2D shape =
          jit::argumentShape(spec, params[i].role, params[i].side, rows, cols);
      out[i] = {shape.rows, shape.cols};
    }
  }

  Expected<std::shared_ptr<LoadedModule>> module(const KernelKey &key) const {
    if (key == primaryKey) {
      std::lock_guard<std::mutex> lock(moduleMutex);
      if (!primaryModule) {
        if (programError)
          return *programError;
        Expected<std::shared_ptr<LoadedModule>> loaded =
            jit->loadModule(key, *gpuEntry, program, paramCount);
        if (!loaded)
          return std::move(loaded).takeError();
        primaryModule = *loaded;
      }
      return primaryModule;
    }
    // Another alignment class: its own entry, launches and module.
    Expected<std::shared_ptr<const CacheEntry>> entry =
        jit->resolveGpu(key, spec, target);
    if (!entry)
      return std::move(entry).takeError();
    // Its own entry's workspace size, from its payload.
    return jit->loadModule(key, **entry, nullptr, paramCount);
  }
};

using Role = KernelParamRole;
static_assert(int(Role::Input) == int(ArgumentRole::Input) &&
              int(Role::Scales) == int(ArgumentRole::Scales) &&
              int(Role::Zeros) == int(ArgumentRole::Zeros) &&
              int(Role::Global) == int(ArgumentRole::Global) &&
              int(Role::Codes) == int(ArgumentRole::Codes) &&
              int(Role::Output) == int(ArgumentRole::Output));

std::string_view argumentRoleName(ArgumentRole role) {
  static constexpr std::string_view names[] = {"input",  "scales", "zeros",
                                               "global", "codes",  "output"};
  return size_t(role) < std::size(names) ? names[size_t(role)] : "unknown";
}

std::string_view elementTypeName(ElementType element) {
  static constexpr std::string_view names[] = {"f32", "f16", "bf16",
                                               "u8",  "i8",  "i32"};
  return size_t(element) < std::size(names) ? names[size_t(element)]
                                            : "unknown";
}

namespace {

/// A parameter's element type, as the compiler maps the ABI's element
/// kinds to MLIR types (compiler::kernelParams).
ElementType elementTypeOf(const KernelSpec &spec, KernelParamElement element) {
  auto ofValue = [](ValueType type) {
    return type == ValueType::F32   ? ElementType::F32
           : type == ValueType::F16 ? ElementType::F16
                                    : ElementType::BF16;
  };
  switch (element) {
  case KernelParamElement::Value:
    return ofValue(spec.valueType);
  case KernelParamElement::Scale:
    switch (spec.scheme.scale.type) {
    case ScaleType::F32:
      return ElementType::F32;
    case ScaleType::F16:
      return ElementType::F16;
    case ScaleType::BF16:
      return ElementType::BF16;
    case ScaleType::E8M0:
    case ScaleType::UE4M3:
      return ElementType::U8;
    }
    return ElementType::U8;
  case KernelParamElement::Byte:
    return ElementType::U8;
  case KernelParamElement::F32:
    return ElementType::F32;
  }
  return ElementType::U8;
}

/// Refuses a written buffer that overlaps another (BufferAliasing.h): the
/// addresses are host pointers for run(), device ones for launch().
Status checkAliasing(const KernelSpec &spec,
                     std::span<const KernelAbiParam> params,
                     std::span<const void *const> pointers,
                     std::span<const launch::Shape> shapes) {
  std::array<jit::BufferExtent, kMaxBuffers> extents;
  size_t count = std::min({pointers.size(), params.size(), extents.size()});
  for (size_t i = 0; i < count; ++i)
    extents[i] = {reinterpret_cast<uintptr_t>(pointers[i]),
                  uint64_t(shapes[i][0]) * uint64_t(shapes[i][1]) *
                      jit::elementBytes(elementTypeOf(spec, params[i].element)),
                  params[i].isResult};
  auto aliased = jit::findAliasing({extents.data(), count});
  if (!aliased)
    return Status::success();
  auto name = [&](size_t i) {
    return "buffer " + std::to_string(i) +
           (params[i].side.empty() ? "" : " (" + params[i].side + ")");
  };
  return jit::aliasingError(name(aliased->first), name(aliased->second),
                            params[aliased->second].isResult);
}

} // namespace

const KernelSpec &Kernel::spec() const { return state->spec; }
const Target &Kernel::target() const { return state->target; }
size_t Kernel::bufferCount() const { return state->paramCount; }
std::string_view Kernel::ptx() const { return state->ptx; }
bool Kernel::loadedFromDisk() const { return state->fromDisk; }
double Kernel::compileMillis() const { return state->compileMillis; }
int64_t Kernel::workspaceWords() const { return state->workspaceWords; }

Expected<std::vector<ArgumentInfo>> Kernel::signature(int64_t rows,
                                                      int64_t cols) const {
  if (Status sizes = state->checkSizes(rows, cols); !sizes)
    return std::move(sizes).takeError();
  std::array<launch::Shape, kMaxBuffers> shapes;
  state->shapes(rows, cols, shapes);
  std::vector<ArgumentInfo> arguments;
  for (size_t i = 0; i < state->params.size(); ++i) {
    const KernelAbiParam &param = state->params[i];
    ArgumentInfo info;
    // The public roles are the ABI's, in the same order; a role past
    // Output (the workspace) is the runtime's, never the caller's.
    if (int(param.role) > int(ArgumentRole::Output))
      return makeError(ErrorCode::Unsupported,
                       "a kernel parameter of a role the runtime does not "
                       "pass to callers");
    info.role = ArgumentRole(int(param.role));
    info.element = elementTypeOf(state->spec, param.element);
    info.shape = shapes[i];
    info.written = param.isResult;
    info.read = !param.isResult;
    arguments.push_back(info);
  }
  return arguments;
}

Expected<std::string>
ResolvedGpuKernel::take(std::shared_ptr<const CacheEntry> entry) {
  Expected<GpuPayload> payload =
      runtime::decodeGpuPayload(entry->kernel.binary);
  if (!payload)
    return std::move(payload).takeError();
  ptx = std::move(payload->ptx);
  fromDisk = entry->origin == CacheEntry::Origin::Disk;
  compileMillis = entry->compileMillis;
  workspaceWords = payload->workspaceWords;
  workspaceRows = payload->workspaceRows;
  gpuEntry = std::move(entry);
  return std::move(payload->plan);
}

KernelResources ResolvedGpuKernel::resources() const {
  KernelResources resources;
  if (!gpuEntry)
    return resources;
  const CompiledKernel &kernel = gpuEntry->kernel;
  resources.registers = kernel.registers;
  resources.spillStoreBytes = kernel.spillStoreBytes;
  resources.spillLoadBytes = kernel.spillLoadBytes;
  resources.sharedBytes = kernel.sharedBytes;
  resources.stackBytes = kernel.stackBytes;
  return resources;
}

KernelResources Kernel::resources() const { return state->resources(); }

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
  std::array<launch::Shape, kMaxBuffers> shapes;
  state->shapes(rows, cols, shapes);
  if (Status aliasing = checkAliasing(
          state->spec, state->params,
          std::span<const void *const>(
              const_cast<const void *const *>(buffers.data()), buffers.size()),
          shapes);
      !aliasing)
    return aliasing;
  std::array<jit::CpuBuffer, kMaxBuffers> hostBuffers;
  for (size_t i = 0; i < buffers.size(); ++i)
    hostBuffers[i] = {buffers[i], shapes[i][0], shapes[i][1]};
  return (*entry)->kernel->run(
      std::span<const jit::CpuBuffer>(hostBuffers.data(), buffers.size()));
}

Status Kernel::launch(void *stream, std::span<const uint64_t> buffers,
                      int64_t rows, int64_t cols) const {
  if (!state->target.isNvidia())
    return makeError(ErrorCode::InvalidArgument,
                     "launch() is for GPU kernels; this one is for the CPU "
                     "(use run())");
  std::array<const void *, kMaxBuffers> pointers{};
  if (buffers.size() > pointers.size())
    return makeError(ErrorCode::InvalidArgument, "too many buffers");
  for (size_t i = 0; i < buffers.size(); ++i)
    pointers[i] = reinterpret_cast<const void *>(uintptr_t(buffers[i]));
  Expected<KernelKey> key = state->keyFor(
      rows, cols,
      std::span<const void *const>(pointers.data(), buffers.size()));
  if (!key)
    return std::move(key).takeError();
  Expected<std::shared_ptr<LoadedModule>> module = state->module(*key);
  if (!module)
    return std::move(module).takeError();
  const LoadedModule &loaded = **module;
  const runtime::CudaDriverApi &api = *loaded.api;
  // The primary context may not be current on this thread.
  if (Status current = loaded.context->makeCurrent(); !current)
    return current;

  std::array<launch::Shape, kMaxBuffers> shapes;
  state->shapes(rows, cols, shapes);
  std::span<const launch::Shape> paramShapes(shapes.data(), buffers.size());
  if (Status aliasing = checkAliasing(
          state->spec, state->params,
          std::span<const void *const>(pointers.data(), buffers.size()),
          paramShapes);
      !aliasing)
    return aliasing;
  auto cuStream = static_cast<runtime::CUstream>(stream);
  uint64_t workspace = 0;
  int64_t words = loaded.program->workspaceWords;
  if (words > 0) {
    Expected<uint64_t> acquired =
        state->jit->workspaces.acquire(api, cuStream, words);
    if (!acquired)
      return std::move(acquired).takeError();
    workspace = *acquired;
  }
  // Fixed storage: nothing is allocated per launch.
  launch::ResolvedStep resolved;
  for (size_t s = 0; s < loaded.program->steps.size(); ++s) {
    const launch::CompiledStep &step = loaded.program->steps[s];
    if (Status status = launch::resolveStep(step, paramShapes, buffers,
                                            workspace, words, resolved);
        !status)
      return status;
    if (resolved.empty())
      continue; // An empty tensor: nothing to launch.
    const std::array<int64_t, 7> &sizes = resolved.sizes;
    if (runtime::CUresult result = api.cuLaunchKernel(
            loaded.functions[s], unsigned(sizes[0]), unsigned(sizes[1]),
            unsigned(sizes[2]), unsigned(sizes[3]), unsigned(sizes[4]),
            unsigned(sizes[5]), unsigned(sizes[6]), cuStream,
            resolved.pointers.data(), nullptr);
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

Jit::~Jit() {
  // The kernels' states hold the Impl: break the cycle. Kernels handed out
  // keep it alive.
  {
    std::lock_guard<std::mutex> lock(impl->kernelsMutex);
    impl->kernels.clear();
  }
  std::lock_guard<std::mutex> lock(impl->kvKernelsMutex);
  impl->kvKernels.clear();
}

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
  runtime::CubinMaker cubinMaker = runtime::CubinMaker::NvJitLink;
  if (options.cubinMaker) {
    cubinMaker = *options.cubinMaker;
  } else {
    Expected<runtime::CubinMaker> fromEnvironment =
        runtime::cubinMakerFromEnvironment();
    if (!fromEnvironment)
      return std::move(fromEnvironment).takeError();
    cubinMaker = *fromEnvironment;
  }
  auto impl =
      std::make_shared<Impl>(std::move(options), cubinMaker, cacheOptions);
  if (impl->options.warmUpCompiler) {
    auto outcome = std::make_shared<std::promise<Status>>();
    impl->warmUp = outcome->get_future().share();
    impl->warmUpDone = std::async(
        std::launch::async, [target = impl->options.target, outcome] {
          Expected<const jit::CompilerBackend *> backend =
              jit::compilerBackend();
          outcome->set_value(backend ? (*backend)->warmUp(target)
                                     : Status(backend.error()));
        });
  }
  return std::unique_ptr<Jit>(new Jit(std::move(impl)));
}

namespace {

/// get() of a parsed spec; the callers look in (and fill) the memory map.
Expected<std::shared_ptr<const Kernel::State>>
makeKernelState(const std::shared_ptr<Jit::Impl> &impl, const KernelSpec &spec,
                const Target &target);

} // namespace

namespace {} // namespace

Expected<Kernel> Jit::get(std::string_view specText, const Target &target) {
  Expected<std::shared_ptr<const Kernel::State>> state = impl->memoized(
      impl->kernels, impl->kernelsMutex, memoKeyOf(specText, target),
      [&]() -> Expected<std::shared_ptr<const Kernel::State>> {
        std::string error;
        std::optional<KernelSpec> spec = parseKernelSpec(specText, &error);
        if (!spec)
          return makeError(ErrorCode::InvalidArgument, "kernel spec: " + error);
        return makeKernelState(impl, *spec, target);
      });
  if (!state)
    return std::move(state).takeError();
  return Kernel(std::move(*state));
}

Expected<Kernel> Jit::get(std::string_view specText) {
  return get(specText, impl->options.target);
}

Expected<Kernel> Jit::get(const KernelSpec &spec, const Target &target) {
  std::string error;
  if (!validateKernelSpec(spec, &error))
    return makeError(ErrorCode::InvalidArgument, "kernel spec: " + error);
  // The canonical text keys a parsed spec in the memory map.
  Expected<std::shared_ptr<const Kernel::State>> state =
      impl->memoized(impl->kernels, impl->kernelsMutex,
                     memoKeyOf(printKernelSpec(spec), target),
                     [&] { return makeKernelState(impl, spec, target); });
  if (!state)
    return std::move(state).takeError();
  return Kernel(std::move(*state));
}

namespace {

Expected<std::shared_ptr<const Kernel::State>>
makeKernelState(const std::shared_ptr<Jit::Impl> &impl, const KernelSpec &spec,
                const Target &target) {
  std::string error;
  if (!validateKernelSpec(spec, &error))
    return makeError(ErrorCode::InvalidArgument, "kernel spec: " + error);
  // Fused specs (prologue | quantize) are served like any other: the
  // launch path sizes their side tensors by side (ArgumentShapes.h). A GPU
  // target gets the compiler's answer, which refuses them while they have
  // no GPU lowering (docs/fusion.md).
  Expected<std::string> features = targetFeatures(target);
  if (!features)
    return std::move(features).takeError();
  runtime::KernelSignature signature =
      jit::kernelSignature(spec, target, *features);
  std::vector<KernelAbiParam> params = kernelAbi(spec);
  size_t paramCount = params.size();
  if (paramCount > kMaxBuffers)
    return makeError(ErrorCode::Unsupported,
                     "a kernel of " + std::to_string(paramCount) +
                         " parameters; at most " + std::to_string(kMaxBuffers));
  auto prepared = runtime::prepareSignature(std::move(signature));
  if (!prepared)
    return std::move(prepared).takeError();

  auto state = std::make_shared<Kernel::State>();
  state->jit = impl;
  state->spec = spec;
  state->target = target;
  state->signature = *prepared;
  state->params = std::move(params);
  state->paramCount = paramCount;
  state->primaryKey = jit::primaryKernelKey(spec, state->signature);

  if (target.isCpu()) {
    CpuResult entry = impl->resolveCpu(state->primaryKey, spec);
    if (!entry)
      return std::move(entry).takeError();
    state->cpuEntry = *entry;
    state->compileMillis = (*entry)->compileMillis;
    return std::shared_ptr<const Kernel::State>(std::move(state));
  }
  auto entry = impl->resolveGpu(state->primaryKey, spec, target);
  if (!entry)
    return std::move(entry).takeError();
  Expected<std::string> planText = state->take(*entry);
  if (!planText)
    return std::move(planText).takeError();
  // Launch sizes are compiled once, here; launch() only evaluates them.
  Expected<launch::LaunchPlan> plan = launch::LaunchPlan::parse(*planText);
  Expected<launch::LaunchProgram> program =
      plan ? launch::compileLaunchPlan(*plan, paramCount, state->workspaceWords)
           : Expected<launch::LaunchProgram>(plan.error());
  // Only a matmul's prologues grow the workspace with X (getKv).
  if (program && state->workspaceRows.any())
    program = makeError(ErrorCode::CorruptEntry,
                        "a quantize kernel's cache entry with a workspace "
                        "that grows with X");
  if (program)
    state->program =
        std::make_shared<const launch::LaunchProgram>(std::move(*program));
  else
    state->programError = program.error();
  return std::shared_ptr<const Kernel::State>(std::move(state));
}

} // namespace

JitStats Jit::stats() const {
  JitStats stats;
  stats.cpuCompiles = impl->cpuCompiles.load();
  stats.gpuCompiles = impl->gpuCompiles.load();
  stats.compiles = stats.cpuCompiles + stats.gpuCompiles;
  stats.evictions = impl->evictions.load();
  stats.cache = impl->cache.stats();
  return stats;
}

Status Jit::waitForWarmUp() const {
  if (!impl->warmUp.valid())
    return Status::success();
  return impl->warmUp.get();
}

const runtime::CacheOptions &Jit::cacheOptions() const {
  return impl->cache.options();
}

} // namespace lowbit
