//===- KvJit.cpp - lowbit::Jit::getKv: the KV-cache kernels ---------------===//
//
// The KV-cache, KIVI and decode-attention kernels through the same Jit as
// the quantize kernels (JitImpl.h): the spec's canonical text keys the
// caches, a miss reaches the compiler through CompilerBackend's KV entries
// (linked or loaded), GPU entries are the same `jit-gpu` payload on disk.
//
// A launch is the AOT bundle's launch of the same kernels: the entry's
// plan read as aot::Launch steps (aot::launchesFromPlan, as `lowbit aot`
// writes them) and compiled once for the parameters' ranks
// (aot::RankedLaunch: the sizes and packing of evaluateLaunchFor and
// packArgumentsFor, a memref being its rank-N descriptor), so the JIT and
// the AOT runner cannot disagree on grids, blocks or argument order, and
// a launch parses nothing and allocates nothing. MLIR-free.
//
//===----------------------------------------------------------------------===//

#include "runtime/aot/Bundle.h"
#include "runtime/aot/RankedLaunch.h"
#include "runtime/jit/BufferAliasing.h"
#include "runtime/jit/JitImpl.h"
#include "runtime/jit/KernelSignature.h"
#include "runtime/jit/KvJitSpec.h"
#include "target/WorkspaceRows.h"

namespace lowbit {

using compiler::CallDim;
using compiler::KvKernelParam;

namespace {

/// A call's value of each CallDim (0: not bound yet), in fixed storage:
/// checking a launch's buffers allocates nothing.
class CallSizes {
public:
  int64_t find(CallDim dim) const { return values[slot(dim)]; }
  /// Binds `dim` to `value` unless bound; returns the bound value.
  int64_t bind(CallDim dim, int64_t value) {
    int64_t &bound = values[slot(dim)];
    if (bound == 0)
      bound = value;
    return bound;
  }

private:
  static constexpr size_t kDims = size_t(-compiler::kMatmulScaleCols) + 1;
  static size_t slot(CallDim dim) {
    size_t index = size_t(-int64_t(dim));
    return index < kDims ? index : 0;
  }
  std::array<int64_t, kDims> values{};
};

} // namespace

struct KvKernel::State : ResolvedGpuKernel {
  std::shared_ptr<Jit::Impl> jit;
  jit::KvJitSpec spec;
  std::string text;
  Target target;
  std::vector<KvKernelParam> abi;
  std::vector<KvParamInfo> params;
  KernelKey key;
  std::shared_ptr<KvCpuEntry> cpuEntry;
  /// GPU: the entry's launch plan as the AOT bundle holds it, compiled for
  /// the parameters' ranks, or why it cannot be launched.
  std::vector<aot::RankedLaunch> launches;
  std::optional<Error> launchError;
  mutable std::mutex moduleMutex;
  mutable std::shared_ptr<LoadedModule> module;
};

std::string_view kvDimName(int64_t dim) { return jit::kvCallDimName(dim); }

namespace {

std::optional<ElementType> elementOf(std::string_view name) {
  for (ElementType element :
       {ElementType::F32, ElementType::F16, ElementType::BF16, ElementType::U8,
        ElementType::I8, ElementType::I32})
    if (elementTypeName(element) == name)
      return element;
  return std::nullopt;
}

int64_t ceilDiv(int64_t a, int64_t b) { return a / b + (a % b != 0); }

/// a x b x ..., INT64_MAX when it overflows (then no buffer matches it).
int64_t product(std::initializer_list<int64_t> factors) {
  int64_t result = 1;
  for (int64_t factor : factors)
    if (__builtin_mul_overflow(result, factor, &result))
      return INT64_MAX;
  return result;
}

/// The most buffers a KV kernel takes (the aliasing check's fixed storage:
/// the launch path allocates nothing).
constexpr size_t kMaxKvBuffers = 24;

/// The largest call-fixed size (the AOT manifest's bound, Bundle.h).
constexpr int64_t kMaxCallSize = aot::kMaxDimension;

std::string describeParam(const std::vector<KvKernelParam> &abi, size_t i) {
  return "buffer " + std::to_string(i) + " (" + abi[i].name + ")";
}

/// A size the others determine: `dim` must be `expected` (when bound).
Status expectDerived(const CallSizes &sizes, CallDim dim, int64_t expected,
                     const char *why) {
  int64_t found = sizes.find(dim);
  if (found == 0 || found == expected)
    return Status::success();
  return makeError(ErrorCode::InvalidArgument,
                   std::string(jit::kvCallDimName(dim)) + " is " +
                       std::to_string(found) + "; " + why + " make it " +
                       std::to_string(expected));
}

/// The sizes one kind derives from the others (run() and launch() check
/// them: a launch has no compiled kernel's checks behind it).
Status checkDerivedSizes(const jit::KvJitSpec &spec, const CallSizes &sizes) {
  using Kind = jit::KvJitSpec::Kind;
  const int64_t batch = sizes.find(compiler::kBatch);
  switch (spec.kind) {
  case Kind::Cache:
    return Status::success();
  case Kind::Kivi:
    return expectDerived(
        sizes, compiler::kGroupRows,
        ceilDiv(sizes.find(compiler::kCacheTokens), spec.kivi.side.groupSize),
        "the cache's tokens and the group size");
  case Kind::Attention: {
    const kv::KvAttentionSpec &d = spec.decode;
    if (Status rows =
            expectDerived(sizes, compiler::kQueryRows,
                          product({batch, d.qHeads}), "batch x q_heads");
        !rows)
      return rows;
    int64_t cacheRows = sizes.find(compiler::kCacheRows);
    int64_t block = d.paged ? product({d.kvHeads, kv::kPageTokens})
                            : product({batch, d.kvHeads});
    if (cacheRows % block != 0)
      return makeError(
          ErrorCode::InvalidArgument,
          "cache_rows is " + std::to_string(cacheRows) +
              "; it must be a multiple of " + std::to_string(block) +
              (d.paged ? " (kv_heads x 16 per page)" : " (batch x kv_heads)"));
    int64_t maxTokens =
        d.paged ? product({sizes.find(compiler::kMaxBlocks), kv::kPageTokens})
                : cacheRows / block;
    return expectDerived(
        sizes, compiler::kPartialRows,
        product({batch, d.kvHeads, ceilDiv(maxTokens, d.splitTokens),
                 d.groupHeads()}),
        "batch, kv_heads, the splits and the group");
  }
  case Kind::KiviAttention: {
    const kv::KiviAttentionSpec &d = spec.kiviDecode;
    int64_t maxTokens =
        d.paged() ? product({sizes.find(compiler::kMaxBlocks), kv::kPageTokens})
                  : sizes.find(compiler::kCacheTokens);
    if (Status splits =
            expectDerived(sizes, compiler::kSplits,
                          ceilDiv(maxTokens, d.splitTokens), "the tokens");
        !splits)
      return splits;
    return expectDerived(sizes, compiler::kGroupRows,
                         ceilDiv(maxTokens, d.keys.groupSize),
                         "the tokens and the group size");
  }
  case Kind::Matmul: {
    // The weights' buffers follow from N and K (MatmulSignature.h).
    const matmul::MatmulSpec &m = spec.matmul;
    int64_t n = m.isDynamic() ? sizes.find(compiler::kMatmulCols) : m.n;
    int64_t k = m.isDynamic() ? sizes.find(compiler::kMatmulDepth) : m.k;
    std::string error;
    if (!matmul::validateWeightShape(m.scheme, n, k, &error))
      return makeError(ErrorCode::InvalidArgument, error);
    Shape2D codes = codesShape(m.scheme, n, k);
    Shape2D scales = scaleShape(m.scheme, n, k);
    for (auto [dim, expected] :
         {std::pair{compiler::kMatmulCodeCols, codes.cols},
          std::pair{compiler::kMatmulScaleRows, scales.rows},
          std::pair{compiler::kMatmulScaleCols, scales.cols}})
      if (Status derived =
              expectDerived(sizes, dim, expected, "the scheme, n and k");
          !derived)
        return derived;
    return Status::success();
  }
  }
  return Status::success();
}

/// Checks `buffers` against the kernel's parameters: count, element type,
/// rank, static sizes, each call-fixed size >= 1 and the same wherever it
/// appears, and the sizes derived from others. Fills `sizes`.
Status checkKvBuffers(const KvKernel::State &state,
                      std::span<const KvTensor> buffers, CallSizes &sizes) {
  const std::vector<KvKernelParam> &abi = state.abi;
  if (buffers.size() != abi.size())
    return makeError(ErrorCode::InvalidArgument,
                     state.spec.opName().data() + std::string(" takes ") +
                         std::to_string(abi.size()) + " buffers, got " +
                         std::to_string(buffers.size()));
  for (size_t i = 0; i < abi.size(); ++i) {
    const KvTensor &buffer = buffers[i];
    const KvParamInfo &param = state.params[i];
    if (!buffer.data)
      return makeError(ErrorCode::InvalidArgument,
                       describeParam(abi, i) + " is a null pointer");
    if (buffer.element != param.element)
      return makeError(ErrorCode::InvalidArgument,
                       describeParam(abi, i) + " is " +
                           std::string(elementTypeName(buffer.element)) +
                           "; the kernel takes " +
                           std::string(elementTypeName(param.element)));
    if (buffer.rank != param.shape.size())
      return makeError(ErrorCode::InvalidArgument,
                       describeParam(abi, i) + " has rank " +
                           std::to_string(buffer.rank) + "; the kernel takes " +
                           std::to_string(param.shape.size()));
    for (size_t axis = 0; axis < buffer.rank; ++axis) {
      int64_t want = param.shape[axis], got = buffer.shape[axis];
      // Only an error's message is built (the launch path allocates
      // nothing).
      auto where = [&] {
        return describeParam(abi, i) + " dimension " + std::to_string(axis);
      };
      if (!compiler::isCallDim(want)) {
        if (got != want)
          return makeError(ErrorCode::InvalidArgument,
                           where() + " is " + std::to_string(got) +
                               "; the kernel takes " + std::to_string(want));
        continue;
      }
      if (got > kMaxCallSize)
        return makeError(ErrorCode::InvalidArgument,
                         where() + " (" + std::string(kvDimName(want)) +
                             ") is " + std::to_string(got) + "; at most 2^40");
      if (got < 1)
        return makeError(ErrorCode::InvalidArgument,
                         where() + " (" + std::string(kvDimName(want)) +
                             ") is " + std::to_string(got) +
                             "; it must be >= 1");
      if (int64_t bound = sizes.bind(CallDim(want), got); bound != got)
        return makeError(ErrorCode::InvalidArgument,
                         where() + " is " + std::to_string(got) + "; " +
                             std::string(kvDimName(want)) + " is " +
                             std::to_string(bound) + " in an earlier buffer");
    }
  }
  if (Status derived = checkDerivedSizes(state.spec, sizes); !derived)
    return derived;
  // Every size is checked: each buffer's extent is known (BufferAliasing.h).
  std::array<jit::BufferExtent, kMaxKvBuffers> extents;
  if (abi.size() > extents.size())
    return Status::success();
  for (size_t i = 0; i < abi.size(); ++i) {
    uint64_t elements = 1;
    for (size_t axis = 0; axis < buffers[i].rank; ++axis)
      elements *= uint64_t(buffers[i].shape[axis]);
    extents[i] = {reinterpret_cast<uintptr_t>(buffers[i].data),
                  elements * jit::elementBytes(buffers[i].element),
                  state.params[i].written};
  }
  auto aliased = jit::findAliasing({extents.data(), abi.size()});
  if (!aliased)
    return Status::success();
  return jit::aliasingError(describeParam(abi, aliased->first),
                            describeParam(abi, aliased->second),
                            state.params[aliased->second].written);
}

} // namespace

const std::string &KvKernel::spec() const { return state->text; }
std::string_view KvKernel::op() const { return state->spec.opName(); }
const Target &KvKernel::target() const { return state->target; }
const std::vector<KvParamInfo> &KvKernel::params() const {
  return state->params;
}
std::string_view KvKernel::ptx() const { return state->ptx; }
int64_t KvKernel::workspaceWords() const { return state->workspaceWords; }
int64_t KvKernel::workspaceWordsFor(int64_t rows, int64_t cols) const {
  return workspace_abi::wordsFor(state->workspaceWords, state->workspaceRows,
                                 rows, cols);
}
bool KvKernel::loadedFromDisk() const { return state->fromDisk; }
double KvKernel::compileMillis() const { return state->compileMillis; }

KernelResources KvKernel::resources() const { return state->resources(); }

Status KvKernel::run(std::span<const KvTensor> buffers) const {
  if (!state->target.isCpu())
    return makeError(ErrorCode::InvalidArgument,
                     "run() is for CPU kernels; this one is for " +
                         state->target.str() + " (use launch())");
  CallSizes sizes;
  if (Status checked = checkKvBuffers(*state, buffers, sizes); !checked)
    return checked;
  std::vector<jit::KvCpuBuffer> hostBuffers;
  hostBuffers.reserve(buffers.size());
  for (const KvTensor &buffer : buffers)
    hostBuffers.push_back({buffer.data, std::span<const int64_t>(
                                            buffer.shape.data(), buffer.rank)});
  return state->cpuEntry->kernel->run(hostBuffers);
}

Status KvKernel::launch(void *stream, std::span<const KvTensor> buffers) const {
  if (!state->target.isNvidia())
    return makeError(ErrorCode::InvalidArgument,
                     "launch() is for GPU kernels; this one is for the CPU "
                     "(use run())");
  if (state->launchError)
    return *state->launchError;
  CallSizes sizes;
  if (Status checked = checkKvBuffers(*state, buffers, sizes); !checked)
    return checked;

  std::shared_ptr<LoadedModule> module;
  {
    std::lock_guard<std::mutex> lock(state->moduleMutex);
    if (!state->module) {
      std::vector<std::string> names;
      for (const aot::RankedLaunch &step : state->launches)
        names.push_back(step.entry());
      Expected<std::shared_ptr<LoadedModule>> loaded =
          state->jit->loadImage(state->key, *state->gpuEntry, nullptr, names);
      if (!loaded)
        return std::move(loaded).takeError();
      state->module = *loaded;
    }
    module = state->module;
  }
  const runtime::CudaDriverApi &api = *module->api;
  if (Status current = module->context->makeCurrent(); !current)
    return current;

  // The buffers' ranked shapes and addresses, in fixed storage (at most
  // kMaxRankedParams: getKv refused a plan with more).
  std::array<aot::RankedShape, aot::kMaxRankedParams> shapes;
  std::array<uint64_t, aot::kMaxRankedParams> addresses;
  for (size_t i = 0; i < buffers.size(); ++i) {
    shapes[i].rank = buffers[i].rank;
    std::copy_n(buffers[i].shape.begin(), buffers[i].rank,
                shapes[i].dims.begin());
    addresses[i] = uint64_t(uintptr_t(buffers[i].data));
  }
  auto cuStream = static_cast<runtime::CUstream>(stream);
  uint64_t workspace = 0;
  // A matmul's prologues grow it with X: this call's words, from X's shape
  // (every step of the sequence takes the same workspace).
  Expected<int64_t> words = state->launches.empty()
                                ? Expected<int64_t>(state->workspaceWords)
                                : state->launches.front().workspaceWordsFor(
                                      std::span(shapes.data(), buffers.size()));
  if (!words)
    return words.error();
  if (*words > 0) {
    Expected<uint64_t> acquired = state->jit->workspaces.acquire(
        api, cuStream, *words, state->workspaceRows.any());
    if (!acquired)
      return std::move(acquired).takeError();
    workspace = *acquired;
  }
  // On this thread's stack: concurrent launches share nothing mutable.
  launch::ResolvedStep resolved;
  for (size_t s = 0; s < state->launches.size(); ++s) {
    const aot::RankedLaunch &step = state->launches[s];
    if (Status status = step.resolve(
            std::span(shapes.data(), buffers.size()),
            std::span(addresses.data(), buffers.size()), workspace, resolved);
        !status)
      return status;
    if (resolved.empty())
      continue; // Nothing to launch.
    if (runtime::CUresult result = api.cuLaunchKernel(
            module->functions[s], unsigned(resolved.sizes[0]),
            unsigned(resolved.sizes[1]), unsigned(resolved.sizes[2]),
            unsigned(resolved.sizes[3]), unsigned(resolved.sizes[4]),
            unsigned(resolved.sizes[5]), unsigned(resolved.sizes[6]), cuStream,
            resolved.pointers.data(), nullptr);
        result != runtime::kCudaSuccess)
      return makeError(
          ErrorCode::CudaError,
          runtime::describeCudaError(api, result,
                                     "cuLaunchKernel(" + step.entry() + ")"));
  }
  return Status::success();
}

namespace {

Expected<std::shared_ptr<const KvKernel::State>>
makeKvKernelState(const std::shared_ptr<Jit::Impl> &impl,
                  std::string_view specText, const Target &target) {
  Expected<jit::KvJitSpec> spec = jit::parseKvJitSpec(specText);
  if (!spec)
    return std::move(spec).takeError();
  Expected<std::string> features = targetFeatures(target);
  if (!features)
    return std::move(features).takeError();
  auto state = std::make_shared<KvKernel::State>();
  state->jit = impl;
  state->spec = *spec;
  state->text = spec->text();
  state->target = target;
  state->abi = spec->params();
  for (const KvKernelParam &param : state->abi) {
    std::optional<ElementType> element = elementOf(param.elementType);
    if (!element)
      return makeError(ErrorCode::Unsupported,
                       "a KV kernel parameter of element type '" +
                           param.elementType + "'");
    state->params.push_back(
        {param.name, *element, param.shape, param.isResult});
  }
  // Every size is dynamic and the codegen does not use alignment: one
  // key per spec and target (the pointers all count as aligned).
  runtime::KernelSignature signature = jit::targetSignature(
      state->text, target, *features, int(state->abi.size()));
  signature.inputDtype = state->abi.front().elementType;
  Expected<std::shared_ptr<const PreparedSignature>> prepared =
      runtime::prepareSignature(std::move(signature));
  if (!prepared)
    return std::move(prepared).takeError();
  std::array<const void *, 32> aligned{};
  state->key = runtime::makeKernelKey(
      *prepared, 0, 0,
      std::span<const void *const>(aligned.data(), state->abi.size()));

  const std::string &text = state->text;
  if (target.isCpu()) {
    KvCpuResult entry =
        impl->resolveCpuIn(impl->kvCpuKernels, state->key,
                           [&](const jit::CompilerBackend &backend) {
                             return backend.compileKvCpu(text);
                           });
    if (!entry)
      return std::move(entry).takeError();
    state->cpuEntry = *entry;
    state->compileMillis = (*entry)->compileMillis;
    return std::shared_ptr<const KvKernel::State>(std::move(state));
  }
  Expected<std::shared_ptr<const CacheEntry>> entry = impl->resolveGpu(
      state->key, target,
      [&](const jit::CompilerBackend &backend, bool linkCubin) {
        return backend.compileKvGpu(text, target, linkCubin);
      });
  if (!entry)
    return std::move(entry).takeError();
  Expected<std::string> planText = state->take(*entry);
  if (!planText)
    return std::move(planText).takeError();
  Expected<launch::LaunchPlan> plan = launch::LaunchPlan::parse(*planText);
  Expected<std::vector<aot::Launch>> launches =
      plan ? aot::launchesFromPlan(*plan)
           : Expected<std::vector<aot::Launch>>(plan.error());
  std::vector<size_t> ranks;
  for (const KvKernelParam &param : state->abi)
    ranks.push_back(param.shape.size());
  for (size_t s = 0; launches && s < launches->size(); ++s) {
    Expected<aot::RankedLaunch> ranked = aot::RankedLaunch::compile(
        (*launches)[s], ranks, state->workspaceWords, state->workspaceRows);
    if (!ranked) {
      launches = ranked.error();
      state->launches.clear();
      break;
    }
    state->launches.push_back(std::move(*ranked));
  }
  if (!launches)
    state->launchError = launches.error();
  return std::shared_ptr<const KvKernel::State>(std::move(state));
}

} // namespace

Expected<KvKernel> Jit::getKv(std::string_view specText, const Target &target) {
  Expected<std::shared_ptr<const KvKernel::State>> state = impl->memoized(
      impl->kvKernels, impl->kvKernelsMutex, memoKeyOf(specText, target),
      [&] { return makeKvKernelState(impl, specText, target); });
  if (!state)
    return std::move(state).takeError();
  return KvKernel(std::move(*state));
}

} // namespace lowbit
