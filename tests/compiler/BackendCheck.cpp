//===- BackendCheck.cpp - Kernels vs the reference quantizer --------------===//
//
// Shared by the CPU backend tests and the GPU emulator tests: the same
// seeded inputs, the same buffers (garbage-filled where the kernel must
// write), the same bit-exact comparison with format/Quantize.h.
//
//===----------------------------------------------------------------------===//

#include "tests/compiler/BackendCheck.h"

#include "format/Codec.h"
#include "format/Quantize.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <random>

namespace lowbit::testing {

using namespace lowbit::compiler;

/// Seeded inputs with the cases that break kernels: zeros, an all-zero
/// group, NaN, inf, subnormals, huge and tiny values.
std::vector<float> makeInput(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-20, 20);
  std::vector<float> values(size_t(rows * cols));
  for (float &value : values)
    value = std::ldexp(normal(rng), exponent(rng) / 4);
  size_t count = values.size();
  // An all-zero stretch at the start of row 0 (a whole group for every
  // named scheme when the row is long enough).
  for (int64_t col = 0; col < std::min<int64_t>(cols, 128); ++col)
    values[size_t(col)] = 0.0f;
  if (count > 200) {
    std::uniform_int_distribution<size_t> at(0, count - 1);
    values[at(rng)] = std::numeric_limits<float>::quiet_NaN();
    values[at(rng)] = -0.0f;
    values[at(rng)] = 1e-40f;  // subnormal
    values[at(rng)] = -3e-39f; // subnormal
    values[at(rng)] = 6.5e4f;
    values[at(rng)] = -1e30f;
    if (seed % 2)
      values[at(rng)] = std::numeric_limits<float>::infinity();
    // A row of tiny values only: scales near the bottom of the range.
    if (rows > 2)
      for (int64_t col = 0; col < cols; ++col)
        values[size_t(2 * cols + col)] = std::ldexp(normal(rng), -130);
  }
  return values;
}

namespace {

HalfType halfTypeOf(ValueType type) {
  return type == ValueType::F16 ? HalfType::F16 : HalfType::BF16;
}

uint16_t narrow(ValueType type, float value) {
  return type == ValueType::F16 ? floatToHalf(value) : floatToBFloat16(value);
}

/// Host storage for one kernel parameter.
struct Storage {
  std::vector<uint8_t> bytes;
  int64_t rows = 0, cols = 0;
  HostBuffer buffer() { return {bytes.data(), rows, cols}; }
};

size_t elementBytes(const std::string &type) {
  if (type == "f32")
    return 4;
  if (type == "f16" || type == "bf16")
    return 2;
  return 1;
}

/// Scale codes (QuantizedTensor's representation) <-> scale buffer bytes.
void writeScales(Storage &storage, const std::vector<uint32_t> &codes,
                 size_t bytesPerScale) {
  for (size_t i = 0; i < codes.size(); ++i)
    std::memcpy(storage.bytes.data() + i * bytesPerScale, &codes[i],
                bytesPerScale); // little endian: the low bytes
}
std::vector<uint32_t> readScales(const Storage &storage, size_t bytesPerScale) {
  std::vector<uint32_t> codes(storage.bytes.size() / bytesPerScale, 0);
  for (size_t i = 0; i < codes.size(); ++i)
    std::memcpy(&codes[i], storage.bytes.data() + i * bytesPerScale,
                bytesPerScale);
  return codes;
}

struct Reference {
  std::vector<float> widened; // the f32 values the reference quantizes
  std::vector<uint16_t> halves;
};

Reference makeValues(ValueType type, const std::vector<float> &input) {
  Reference ref;
  if (type == ValueType::F32) {
    ref.widened = input;
    return ref;
  }
  for (float value : input)
    ref.halves.push_back(narrow(type, value));
  ref.widened = widenToFloat(halfTypeOf(type), ref.halves);
  return ref;
}

} // namespace

/// Runs one quantize kernel and the reference; returns "" or a mismatch.
std::string checkQuantize(const KernelSpec &spec, int64_t rows, int64_t cols,
                          uint32_t seed, const KernelRunner &run) {
  Reference values = makeValues(spec.valueType, makeInput(rows, cols, seed));
  const Scheme &scheme = spec.scheme;
  std::string error;

  // Static scales (and a given global scale) come from a dynamic reference
  // run on the same data, as a calibrated scale would.
  StaticScales given;
  Scheme dynamicScheme = scheme;
  dynamicScheme.scale.mode = ScaleMode::Dynamic;
  std::optional<QuantizedTensor> calibration =
      quantize(dynamicScheme, values.widened, rows, cols, &error);
  if (!calibration)
    return "reference (calibration): " + error;
  if (spec.isStatic()) {
    given.scaleCodes = calibration->scaleCodes;
    if (scheme.scale.zeroPoint)
      given.zeros = calibration->zeros;
  }
  if (spec.hasGlobal() &&
      (spec.isStatic() || spec.globalSource == GlobalSource::Given)) {
    // Not the computed value, so that a kernel that recomputes it fails.
    float scaled = calibration->globalScale * 1.5f;
    given.globalScale =
        std::isfinite(scaled) ? scaled : calibration->globalScale;
  }
  std::optional<QuantizedTensor> expected =
      quantize(scheme, values.widened, rows, cols, given, &error);
  if (!expected)
    return "reference: " + error;

  std::vector<KernelParam> params = kernelParams(spec);
  std::vector<Shape2D> shapes = bufferShapes(spec, rows, cols);
  std::vector<Storage> storage(params.size());
  size_t scaleBytes = size_t(scaleStorageBits(scheme.scale.type) / 8);
  for (size_t i = 0; i < params.size(); ++i) {
    Storage &s = storage[i];
    s.rows = shapes[i].rows;
    s.cols = shapes[i].cols;
    s.bytes.assign(size_t(s.rows * s.cols) *
                       elementBytes(params[i].elementType),
                   0xA5); // garbage: the kernel must write every byte
    if (params[i].isResult)
      continue;
    switch (params[i].role) {
    case KernelParam::Role::Input:
      if (spec.valueType == ValueType::F32)
        std::memcpy(s.bytes.data(), values.widened.data(), s.bytes.size());
      else
        std::memcpy(s.bytes.data(), values.halves.data(), s.bytes.size());
      break;
    case KernelParam::Role::Scales:
      writeScales(s, *given.scaleCodes, scaleBytes);
      break;
    case KernelParam::Role::Zeros:
      std::memcpy(s.bytes.data(), given.zeros->data(), s.bytes.size());
      break;
    case KernelParam::Role::Global:
      std::memcpy(s.bytes.data(), &*given.globalScale, 4);
      break;
    default:
      break;
    }
  }
  std::vector<HostBuffer> buffers;
  for (Storage &s : storage)
    buffers.push_back(s.buffer());
  if (std::string runError = run(spec, buffers); !runError.empty())
    return "run: " + runError;

  for (size_t i = 0; i < params.size(); ++i) {
    if (!params[i].isResult)
      continue;
    const Storage &s = storage[i];
    switch (params[i].role) {
    case KernelParam::Role::Codes:
      for (size_t at = 0; at < s.bytes.size(); ++at)
        if (s.bytes[at] != expected->codes[at])
          return "code byte " + std::to_string(at) + ": kernel " +
                 std::to_string(s.bytes[at]) + ", reference " +
                 std::to_string(expected->codes[at]) + " (input " +
                 std::to_string(
                     values.widened[spec.scheme.packing == Packing::Nibble
                                        ? 2 * at
                                        : at]) +
                 ")";
      break;
    case KernelParam::Role::Scales: {
      std::vector<uint32_t> codes = readScales(s, scaleBytes);
      for (size_t at = 0; at < codes.size(); ++at)
        if (codes[at] != expected->scaleCodes[at])
          return "scale " + std::to_string(at) + ": kernel " +
                 std::to_string(codes[at]) + ", reference " +
                 std::to_string(expected->scaleCodes[at]);
      break;
    }
    case KernelParam::Role::Zeros:
      for (size_t at = 0; at < s.bytes.size(); ++at)
        if (s.bytes[at] != expected->zeros[at])
          return "zero point " + std::to_string(at) + " differs";
      break;
    case KernelParam::Role::Global: {
      float global;
      std::memcpy(&global, s.bytes.data(), 4);
      if (floatBits(global) != floatBits(expected->globalScale))
        return "global scale: kernel " + std::to_string(global) +
               ", reference " + std::to_string(expected->globalScale);
      break;
    }
    default:
      break;
    }
  }
  return "";
}

/// Dequantizes the reference's quantized tensor with the kernel.
std::string checkDequantize(const KernelSpec &spec, int64_t rows, int64_t cols,
                            uint32_t seed, const KernelRunner &run) {
  std::string error;
  Scheme dynamicScheme = spec.scheme;
  dynamicScheme.scale.mode = ScaleMode::Dynamic;
  std::optional<QuantizedTensor> tensor =
      quantize(dynamicScheme, makeInput(rows, cols, seed), rows, cols, &error);
  if (!tensor)
    return "reference: " + error;
  tensor->scheme = spec.scheme;
  std::vector<uint32_t> expectedBits;
  if (spec.valueType == ValueType::F32) {
    auto values = dequantize(*tensor, &error);
    if (!values)
      return "reference dequantize: " + error;
    for (float value : *values)
      expectedBits.push_back(floatBits(value));
  } else {
    auto values = dequantizeHalf(*tensor, halfTypeOf(spec.valueType), &error);
    if (!values)
      return "reference dequantize: " + error;
    expectedBits.assign(values->begin(), values->end());
  }

  std::vector<KernelParam> params = kernelParams(spec);
  std::vector<Shape2D> shapes = bufferShapes(spec, rows, cols);
  std::vector<Storage> storage(params.size());
  size_t scaleBytes = size_t(scaleStorageBits(spec.scheme.scale.type) / 8);
  for (size_t i = 0; i < params.size(); ++i) {
    Storage &s = storage[i];
    s.rows = shapes[i].rows;
    s.cols = shapes[i].cols;
    s.bytes.assign(
        size_t(s.rows * s.cols) * elementBytes(params[i].elementType), 0xA5);
    switch (params[i].role) {
    case KernelParam::Role::Codes:
      std::memcpy(s.bytes.data(), tensor->codes.data(), s.bytes.size());
      break;
    case KernelParam::Role::Scales:
      writeScales(s, tensor->scaleCodes, scaleBytes);
      break;
    case KernelParam::Role::Zeros:
      std::memcpy(s.bytes.data(), tensor->zeros.data(), s.bytes.size());
      break;
    case KernelParam::Role::Global:
      std::memcpy(s.bytes.data(), &tensor->globalScale, 4);
      break;
    default:
      break;
    }
  }
  std::vector<HostBuffer> buffers;
  for (Storage &s : storage)
    buffers.push_back(s.buffer());
  if (std::string runError = run(spec, buffers); !runError.empty())
    return "run: " + runError;
  const Storage &output = storage.back();
  size_t width = elementBytes(params.back().elementType);
  for (size_t at = 0; at < expectedBits.size(); ++at) {
    uint32_t bits = 0;
    std::memcpy(&bits, output.bytes.data() + at * width, width);
    if (bits == expectedBits[at])
      continue;
    // NaN payloads are not part of the contract; NaN-ness is.
    float got = width == 4 ? bitsToFloat(bits)
                : spec.valueType == ValueType::F16
                    ? halfToFloat(uint16_t(bits))
                    : bfloat16ToFloat(uint16_t(bits));
    float want = width == 4 ? bitsToFloat(expectedBits[at])
                 : spec.valueType == ValueType::F16
                     ? halfToFloat(uint16_t(expectedBits[at]))
                     : bfloat16ToFloat(uint16_t(expectedBits[at]));
    if (std::isnan(got) && std::isnan(want))
      continue;
    return "value " + std::to_string(at) + ": kernel " + std::to_string(got) +
           ", reference " + std::to_string(want);
  }
  return "";
}

std::string runOnCpuJit(const KernelSpec &spec,
                        std::vector<compiler::HostBuffer> &buffers) {
  // Destroyed after main: the CPU tail's JIT has no platform to tear down
  // (docs/runtime.md, "Destroying a Jit").
  static std::map<std::string, std::unique_ptr<compiler::CpuKernel>> cache;
  std::string key = printKernelSpec(spec);
  auto found = cache.find(key);
  if (found == cache.end()) {
    auto kernel = compiler::compileForCpu(spec);
    if (!kernel)
      return "compiling '" + key + "': " + llvm::toString(kernel.takeError());
    found = cache.emplace(key, std::move(*kernel)).first;
  }
  if (llvm::Error error = found->second->run(buffers))
    return llvm::toString(std::move(error));
  return "";
}

} // namespace lowbit::testing
