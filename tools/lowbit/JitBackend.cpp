//===- JitBackend.cpp - Host buffers in, QuantizedTensor out --------------===//
//
// The CPU kernels come from lowbit::Jit (runtime/include/lowbit/Jit.h), the
// library's one thread-safe kernel cache; this file only lays the
// QuantizedTensor out in the ABI's buffers (runtime/spec/KernelAbi.h) and
// back.
//
//===----------------------------------------------------------------------===//

#include "tools/lowbit/JitBackend.h"

#include "lowbit/Jit.h"
#include "runtime/spec/KernelAbi.h"

#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>

namespace lowbit::cli {

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

/// The process's Jit (LOWBIT_CACHE, LOWBIT_CACHE_DIR), made on first use.
/// A plain pointer: never destroyed by static destruction, only by
/// releaseJitKernels() (see JitBackend.h).
std::mutex jitMutex;
Jit *processJit = nullptr;

} // namespace

Jit *sharedJit(std::string *error) {
  std::lock_guard<std::mutex> lock(jitMutex);
  if (!processJit) {
    Expected<std::unique_ptr<Jit>> created = Jit::create();
    if (!created) {
      setError(error, created.error().message);
      return nullptr;
    }
    processJit = created->release();
  }
  return processJit;
}

namespace {

/// The CPU kernel of `spec` from the Jit (compiled on first request).
std::optional<Kernel> cpuKernel(const KernelSpec &spec, std::string *error,
                                double *compileMillis) {
  if (compileMillis)
    *compileMillis = 0;
  Jit *jit = sharedJit(error);
  if (!jit)
    return std::nullopt;
  Expected<Kernel> kernel = jit->get(spec, Target{});
  if (!kernel) {
    setError(error, kernel.error().message);
    return std::nullopt;
  }
  if (compileMillis)
    *compileMillis = kernel->compileMillis();
  return std::move(*kernel);
}

/// Host storage for one kernel parameter, shaped per kernelAbi().
struct Storage {
  std::vector<uint8_t> bytes;
  int64_t rows = 0, cols = 0;
};

std::vector<Storage> allocate(const KernelSpec &spec,
                              const std::vector<KernelAbiParam> &params) {
  std::vector<Storage> storage(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    storage[i].rows = params[i].shape.rows;
    storage[i].cols = params[i].shape.cols;
    storage[i].bytes.assign(
        size_t(params[i].shape.rows * params[i].shape.cols) *
            kernelParamElementBytes(spec, params[i].element),
        0);
  }
  return storage;
}

/// The ABI of `spec` for a [rows, cols] tensor.
std::vector<KernelAbiParam> sizedAbi(KernelSpec spec, int64_t rows,
                                     int64_t cols) {
  spec.rows = rows;
  spec.cols = cols;
  return kernelAbi(spec);
}

size_t valueBytes(ValueType type) { return type == ValueType::F32 ? 4 : 2; }

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

/// A quantize kernel's results into `tensor` (and the updated residual of
/// a fused add_rmsnorm into `residual`, if set).
void readResults(const std::vector<KernelAbiParam> &params,
                 std::vector<Storage> &storage, size_t scaleBytes,
                 QuantizedTensor &tensor, std::vector<uint8_t> *residual) {
  for (size_t i = 0; i < params.size(); ++i) {
    if (!params[i].isResult)
      continue;
    Storage &s = storage[i];
    switch (params[i].role) {
    case KernelParamRole::Codes:
      tensor.codes = std::move(s.bytes);
      break;
    case KernelParamRole::Scales:
      tensor.scaleCodes = readScales(s, scaleBytes);
      break;
    case KernelParamRole::Zeros:
      tensor.zeros = std::move(s.bytes);
      break;
    case KernelParamRole::Global:
      std::memcpy(&tensor.globalScale, s.bytes.data(), 4);
      break;
    case KernelParamRole::Output: // a fused add_rmsnorm's residual
      if (residual)
        *residual = std::move(s.bytes);
      break;
    default:
      break;
    }
  }
}

/// The CPU kernel, or `runner` when it is set (then `kernel` is empty).
bool runKernel(const std::optional<Kernel> &kernel, const KernelRunner &runner,
               const KernelSpec &spec, int64_t rows, int64_t cols,
               std::vector<Storage> &storage, std::string *error,
               JitTiming *timing) {
  Clock::time_point start = Clock::now();
  if (runner) {
    std::vector<KernelBuffer> buffers;
    for (Storage &s : storage)
      buffers.push_back({s.bytes.data(), s.rows, s.cols});
    if (!runner(spec, buffers, error))
      return false;
  } else {
    std::vector<void *> buffers;
    for (Storage &s : storage)
      buffers.push_back(s.bytes.data());
    if (Status status = kernel->run(buffers, rows, cols); !status) {
      setError(error, status.error().message);
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
  return cpuKernel(spec, error, compileMillis).has_value();
}

bool chooseCpuOrReference(const KernelSpec &spec, std::string &backend,
                          std::string *error) {
  std::string compileError;
  if (compileCpuKernel(spec, &compileError)) {
    backend = "cpu";
    return true;
  }
  if (backend == "cpu") {
    if (error)
      *error = "the CPU backend cannot compile this scheme: " + compileError;
    return false;
  }
  backend = "reference";
  return true;
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
  std::optional<Kernel> kernel;
  if (!runner) {
    kernel = cpuKernel(spec, error, timing ? &timing->compileMillis : nullptr);
    if (!kernel)
      return std::nullopt;
  }

  std::vector<KernelAbiParam> params = sizedAbi(spec, rows, cols);
  std::vector<Storage> storage = allocate(spec, params);
  size_t scaleBytes = size_t(scaleStorageBits(scheme.scale.type) / 8);
  using Role = KernelParamRole;
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
  if (!runKernel(kernel, runner, spec, rows, cols, storage, error, timing))
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
  readResults(params, storage, scaleBytes, tensor, nullptr);
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
  std::optional<Kernel> kernel;
  if (!runner) {
    kernel = cpuKernel(spec, error, timing ? &timing->compileMillis : nullptr);
    if (!kernel)
      return std::nullopt;
  }

  std::vector<KernelAbiParam> params = sizedAbi(spec, tensor.rows, tensor.cols);
  std::vector<Storage> storage = allocate(spec, params);
  size_t scaleBytes = size_t(scaleStorageBits(tensor.scheme.scale.type) / 8);
  using Role = KernelParamRole;
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
  if (!runKernel(kernel, runner, spec, tensor.rows, tensor.cols, storage, error,
                 timing))
    return std::nullopt;
  return std::move(storage.back().bytes);
}

std::optional<QuantizedTensor> jitQuantizeFused(
    const KernelSpec &spec, const std::vector<std::vector<uint8_t>> &reads,
    int64_t rows, int64_t cols, std::vector<uint8_t> *residual,
    std::string *error, JitTiming *timing, const KernelRunner &runner) {
  if (spec.op != KernelOp::Quantize || spec.isStatic() ||
      spec.globalSource == GlobalSource::Given) {
    setError(error, "a fused quantize of a dynamic scheme that computes its "
                    "scales is expected, got '" +
                        printKernelSpec(spec) + "'");
    return std::nullopt;
  }
  std::vector<KernelAbiParam> params = sizedAbi(spec, rows, cols);
  std::vector<Storage> storage = allocate(spec, params);
  size_t next = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i].isResult)
      continue;
    if (next == reads.size() || reads[next].size() != storage[i].bytes.size()) {
      setError(error, "parameter " + std::to_string(i) + " ('" +
                          (params[i].side.empty() ? "input" : params[i].side) +
                          "') takes " +
                          std::to_string(storage[i].bytes.size()) + " bytes");
      return std::nullopt;
    }
    storage[i].bytes = reads[next++];
  }
  std::optional<Kernel> kernel;
  if (!runner) {
    kernel = cpuKernel(spec, error, timing ? &timing->compileMillis : nullptr);
    if (!kernel)
      return std::nullopt;
  }
  if (!runKernel(kernel, runner, spec, rows, cols, storage, error, timing))
    return std::nullopt;

  QuantizedTensor tensor(spec.scheme);
  tensor.rows = rows;
  tensor.cols = cols;
  readResults(params, storage,
              size_t(scaleStorageBits(spec.scheme.scale.type) / 8), tensor,
              residual);
  return tensor;
}

void releaseJitKernels() {
  std::lock_guard<std::mutex> lock(jitMutex);
  delete processJit;
  processJit = nullptr;
}

} // namespace lowbit::cli
