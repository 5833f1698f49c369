//===- JitBackend.cpp - Host buffers in, QuantizedTensor out --------------===//

#include "tools/lowbit/JitBackend.h"

#include "lowering/Target.h"
#include "runtime/compiler/Compiler.h"

#include "llvm/Support/Error.h"

#include <chrono>
#include <cstring>
#include <map>
#include <memory>

namespace lowbit::cli {

using compiler::CpuKernel;
using compiler::HostBuffer;
using compiler::KernelParam;

namespace {

using Clock = std::chrono::steady_clock;

double millisSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start)
      .count();
}

void setError(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
}

using KernelCache = std::map<std::string, std::unique_ptr<CpuKernel>>;

/// Allocated on first use and never destroyed by static destruction: see
/// releaseJitKernels() for why.
KernelCache *&kernelCache() {
  static KernelCache *cache = nullptr;
  if (!cache)
    cache = new KernelCache;
  return cache;
}

CpuKernel *cachedKernel(const KernelSpec &spec, std::string *error,
                        double *compileMillis) {
  if (compileMillis)
    *compileMillis = 0;
  KernelCache &cache = *kernelCache();
  std::string key = printKernelSpec(spec);
  if (auto found = cache.find(key); found != cache.end())
    return found->second.get();
  Clock::time_point start = Clock::now();
  auto kernel = compiler::compileForCpu(spec);
  if (!kernel) {
    setError(error, llvm::toString(kernel.takeError()));
    return nullptr;
  }
  if (compileMillis)
    *compileMillis = millisSince(start);
  return (cache[key] = std::move(*kernel)).get();
}

size_t elementBytes(const std::string &type) {
  if (type == "f32")
    return 4;
  if (type == "f16" || type == "bf16")
    return 2;
  return 1;
}

size_t valueBytes(ValueType type) { return type == ValueType::F32 ? 4 : 2; }

/// Host storage for one kernel parameter, shaped per bufferShapes().
struct Storage {
  std::vector<uint8_t> bytes;
  int64_t rows = 0, cols = 0;
};

std::vector<Storage> allocate(const KernelSpec &spec,
                              const std::vector<KernelParam> &params,
                              int64_t rows, int64_t cols) {
  std::vector<Shape2D> shapes = compiler::bufferShapes(spec, rows, cols);
  std::vector<Storage> storage(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    storage[i].rows = shapes[i].rows;
    storage[i].cols = shapes[i].cols;
    storage[i].bytes.assign(size_t(shapes[i].rows * shapes[i].cols) *
                                elementBytes(params[i].elementType),
                            0);
  }
  return storage;
}

/// QuantizedTensor keeps scales as uint32 codes; the buffer holds the low
/// `bytesPerScale` bytes of each (little endian).
void writeScales(Storage &storage, const std::vector<uint32_t> &codes,
                 size_t bytesPerScale) {
  size_t count = std::min(codes.size(), storage.bytes.size() / bytesPerScale);
  for (size_t i = 0; i < count; ++i)
    std::memcpy(storage.bytes.data() + i * bytesPerScale, &codes[i],
                bytesPerScale);
}
std::vector<uint32_t> readScales(const Storage &storage, size_t bytesPerScale) {
  std::vector<uint32_t> codes(storage.bytes.size() / bytesPerScale, 0);
  for (size_t i = 0; i < codes.size(); ++i)
    std::memcpy(&codes[i], storage.bytes.data() + i * bytesPerScale,
                bytesPerScale);
  return codes;
}

/// The CPU kernel, or `runner` when it is set (then `kernel` is null).
bool runKernel(CpuKernel *kernel, const KernelRunner &runner,
               const KernelSpec &spec, std::vector<Storage> &storage,
               std::string *error, JitTiming *timing) {
  Clock::time_point start = Clock::now();
  if (runner) {
    std::vector<KernelBuffer> buffers;
    for (Storage &s : storage)
      buffers.push_back({s.bytes.data(), s.rows, s.cols});
    if (!runner(spec, buffers, error))
      return false;
  } else {
    std::vector<HostBuffer> buffers;
    for (Storage &s : storage)
      buffers.push_back({s.bytes.data(), s.rows, s.cols});
    if (llvm::Error runError = kernel->run(buffers)) {
      setError(error, llvm::toString(std::move(runError)));
      return false;
    }
  }
  if (timing)
    timing->runMillis = millisSince(start);
  return true;
}

} // namespace

bool compileCpuKernel(const KernelSpec &spec, std::string *error,
                      double *compileMillis) {
  return cachedKernel(spec, error, compileMillis) != nullptr;
}

KernelSpec quantizeSpecFor(const Scheme &scheme, ValueType valueType,
                           const StaticScales &given) {
  KernelSpec spec;
  spec.op = KernelOp::Quantize;
  spec.scheme = scheme;
  spec.valueType = valueType;
  // A dynamic scheme with a fixed second-level scale (vLLM's NVFP4) reads
  // it instead of computing it; static schemes always read theirs.
  if (spec.hasGlobal() && !spec.isStatic() && given.globalScale)
    spec.globalSource = GlobalSource::Given;
  return spec;
}

std::optional<QuantizedTensor>
jitQuantize(const Scheme &scheme, ValueType valueType, const void *input,
            int64_t rows, int64_t cols, const StaticScales &given,
            std::string *error, JitTiming *timing, const KernelRunner &runner) {
  KernelSpec spec = quantizeSpecFor(scheme, valueType, given);
  std::string reason;
  if (!validateSchemeForShape(scheme, rows, cols, &reason)) {
    setError(error, reason);
    return std::nullopt;
  }
  if (spec.isStatic() &&
      (!given.scaleCodes || (scheme.scale.zeroPoint && !given.zeros) ||
       (spec.hasGlobal() && !given.globalScale))) {
    setError(error, "a static scheme needs its scales (and zero points and "
                    "global scale where it has them)");
    return std::nullopt;
  }
  CpuKernel *kernel =
      runner ? nullptr
             : cachedKernel(spec, error,
                            timing ? &timing->compileMillis : nullptr);
  if (!kernel && !runner)
    return std::nullopt;

  std::vector<KernelParam> params = compiler::kernelParams(spec);
  std::vector<Storage> storage = allocate(spec, params, rows, cols);
  size_t scaleBytes = size_t(scaleStorageBits(scheme.scale.type) / 8);
  using Role = KernelParam::Role;
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i].isResult)
      continue;
    Storage &s = storage[i];
    switch (params[i].role) {
    case Role::Input:
      std::memcpy(s.bytes.data(), input,
                  size_t(rows * cols) * valueBytes(valueType));
      break;
    case Role::Scales:
      writeScales(s, *given.scaleCodes, scaleBytes);
      break;
    case Role::Zeros:
      std::memcpy(s.bytes.data(), given.zeros->data(),
                  std::min(s.bytes.size(), given.zeros->size()));
      break;
    case Role::Global:
      std::memcpy(s.bytes.data(), &*given.globalScale, 4);
      break;
    default:
      break;
    }
  }
  if (spec.isStatic()) {
    // The reference quantizer refuses given scales that are not finite and
    // positive (or the wrong size); the kernel would divide by them.
    QuantizedTensor givenTensor(scheme);
    givenTensor.rows = rows;
    givenTensor.cols = cols;
    givenTensor.codes.resize(size_t(codesShape(scheme, rows, cols).rows *
                                    codesShape(scheme, rows, cols).cols));
    givenTensor.scaleCodes = *given.scaleCodes;
    if (given.zeros)
      givenTensor.zeros = *given.zeros;
    if (given.globalScale)
      givenTensor.globalScale = *given.globalScale;
    if (!validateQuantized(givenTensor, error))
      return std::nullopt;
  }
  if (!runKernel(kernel, runner, spec, storage, error, timing))
    return std::nullopt;

  QuantizedTensor tensor(scheme);
  tensor.rows = rows;
  tensor.cols = cols;
  // Parameters the kernel only reads come back as the caller gave them,
  // as the reference quantizer returns them.
  if (given.scaleCodes)
    tensor.scaleCodes = *given.scaleCodes;
  if (given.zeros)
    tensor.zeros = *given.zeros;
  if (given.globalScale)
    tensor.globalScale = *given.globalScale;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!params[i].isResult)
      continue;
    Storage &s = storage[i];
    switch (params[i].role) {
    case Role::Codes:
      tensor.codes = std::move(s.bytes);
      break;
    case Role::Scales:
      tensor.scaleCodes = readScales(s, scaleBytes);
      break;
    case Role::Zeros:
      tensor.zeros = std::move(s.bytes);
      break;
    case Role::Global:
      std::memcpy(&tensor.globalScale, s.bytes.data(), 4);
      break;
    default:
      break;
    }
  }
  return tensor;
}

std::optional<std::vector<uint8_t>> jitDequantize(const QuantizedTensor &tensor,
                                                  ValueType valueType,
                                                  std::string *error,
                                                  JitTiming *timing,
                                                  const KernelRunner &runner) {
  KernelSpec spec;
  spec.op = KernelOp::Dequantize;
  spec.scheme = tensor.scheme;
  spec.valueType = valueType;
  CpuKernel *kernel =
      runner ? nullptr
             : cachedKernel(spec, error,
                            timing ? &timing->compileMillis : nullptr);
  if (!kernel && !runner)
    return std::nullopt;

  std::vector<KernelParam> params = compiler::kernelParams(spec);
  std::vector<Storage> storage =
      allocate(spec, params, tensor.rows, tensor.cols);
  size_t scaleBytes = size_t(scaleStorageBits(tensor.scheme.scale.type) / 8);
  using Role = KernelParam::Role;
  for (size_t i = 0; i < params.size(); ++i) {
    Storage &s = storage[i];
    switch (params[i].role) {
    case Role::Codes:
      std::memcpy(s.bytes.data(), tensor.codes.data(),
                  std::min(s.bytes.size(), tensor.codes.size()));
      break;
    case Role::Scales:
      writeScales(s, tensor.scaleCodes, scaleBytes);
      break;
    case Role::Zeros:
      std::memcpy(s.bytes.data(), tensor.zeros.data(),
                  std::min(s.bytes.size(), tensor.zeros.size()));
      break;
    case Role::Global:
      std::memcpy(s.bytes.data(), &tensor.globalScale, 4);
      break;
    default:
      break;
    }
  }
  if (!runKernel(kernel, runner, spec, storage, error, timing))
    return std::nullopt;
  return std::move(storage.back().bytes);
}

std::optional<PtxBuild> jitCompilePtx(const KernelSpec &spec,
                                      std::string_view targetText,
                                      std::string *error) {
  std::string reason;
  std::optional<Target> target = parseTarget(targetText, &reason);
  if (!target) {
    setError(error, reason);
    return std::nullopt;
  }
  if (!target->isNvidia()) {
    setError(error, "PTX needs an NVIDIA target, got '" + target->str() + "'");
    return std::nullopt;
  }
  if (!validateTarget(*target, &reason)) {
    setError(error, reason);
    return std::nullopt;
  }
  Clock::time_point start = Clock::now();
  auto ptx = compiler::compileToPtx(spec, *target);
  if (!ptx) {
    setError(error, llvm::toString(ptx.takeError()));
    return std::nullopt;
  }
  PtxBuild build;
  build.compileMillis = millisSince(start);
  build.ptx = std::move(ptx->ptx);
  build.kernelNames = std::move(ptx->kernelNames);
  return build;
}

void releaseJitKernels() {
  KernelCache *&cache = kernelCache();
  delete cache;
  cache = nullptr;
}

} // namespace lowbit::cli
