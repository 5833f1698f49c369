//===- FusionCheck.cpp - Fused kernels vs the reference -------------------===//

#include "tests/fusion/FusionCheck.h"

#include "format/Codec.h"
#include "format/Prologue.h"
#include "format/Quantize.h"

#include <cmath>
#include <cstring>
#include <random>

namespace lowbit::testing {

using namespace lowbit::compiler;

namespace {

size_t elementBytes(const std::string &type) {
  if (type == "f32")
    return 4;
  if (type == "f16" || type == "bf16")
    return 2;
  return 1;
}

ValueDtype dtypeOf(ValueType type) {
  if (type == ValueType::F32)
    return std::nullopt;
  return type == ValueType::F16 ? HalfType::F16 : HalfType::BF16;
}

/// Values in the kernel's dtype: the buffer's bytes and their exact f32.
struct Values {
  std::vector<uint8_t> bytes;
  std::vector<float> widened;
};

Values inDtype(ValueType type, const std::vector<float> &values) {
  Values result;
  for (float value : values) {
    if (type == ValueType::F32) {
      uint32_t bits = floatBits(value);
      result.bytes.insert(result.bytes.end(), (uint8_t *)&bits,
                          (uint8_t *)&bits + 4);
      result.widened.push_back(value);
      continue;
    }
    uint16_t bits =
        type == ValueType::F16 ? floatToHalf(value) : floatToBFloat16(value);
    result.bytes.insert(result.bytes.end(), (uint8_t *)&bits,
                        (uint8_t *)&bits + 2);
    result.widened.push_back(type == ValueType::F16 ? halfToFloat(bits)
                                                    : bfloat16ToFloat(bits));
  }
  return result;
}

/// A side tensor's seeded values: weights near 1, smoothing factors in
/// [0.25, 4), residuals like the input.
std::vector<float> sideValues(const std::string &side, int64_t count,
                              uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> values(static_cast<size_t>(count));
  if (side == "residual") {
    std::normal_distribution<float> normal(0.0f, 2.0f);
    for (float &value : values)
      value = normal(rng);
    return values;
  }
  std::uniform_real_distribution<float> factor(side == "weight" ? 0.5f : 0.25f,
                                               side == "weight" ? 1.5f : 4.0f);
  for (float &value : values)
    value = factor(rng);
  return values;
}

std::string mismatch(const char *what, size_t at, uint64_t got, uint64_t want) {
  return std::string(what) + " [" + std::to_string(at) + "]: kernel " +
         std::to_string(got) + ", reference " + std::to_string(want);
}

} // namespace

std::string checkFused(const KernelSpec &spec, int64_t rows, int64_t cols,
                       uint32_t seed, const KernelRunner &run) {
  std::vector<KernelParam> params = kernelParams(spec);
  std::vector<Shape2D> shapes = bufferShapes(spec, rows, cols);
  std::vector<std::vector<uint8_t>> storage(params.size());
  std::vector<std::vector<float>> sides; // f32 of each side input, in order
  for (size_t i = 0; i < params.size(); ++i) {
    size_t count = size_t(shapes[i].rows * shapes[i].cols);
    storage[i].assign(count * elementBytes(params[i].elementType), 0xA5);
    if (params[i].isResult)
      continue;
    std::vector<float> seeded =
        params[i].side.empty()
            ? makeInput(shapes[i].rows, shapes[i].cols, seed)
            : sideValues(params[i].side, int64_t(count), seed + uint32_t(i));
    Values values = inDtype(spec.valueType, seeded);
    storage[i] = values.bytes;
    if (!params[i].side.empty())
      sides.push_back(values.widened);
    else
      sides.insert(sides.begin(), values.widened); // the input comes first
  }

  // The reference: the chain, then the quantizer.
  std::vector<PrologueOperands> operands =
      bindPrologueOperands(spec.prologues, std::span(sides).subspan(1));
  std::string error;
  std::vector<float> residual;
  std::optional<QuantizedTensor> expected =
      quantizeFused(spec.scheme, spec.prologues, operands, sides[0], rows, cols,
                    dtypeOf(spec.valueType), {}, &residual, &error);
  if (!expected)
    return "reference: " + error;

  std::vector<HostBuffer> buffers;
  for (size_t i = 0; i < params.size(); ++i)
    buffers.push_back({storage[i].data(), shapes[i].rows, shapes[i].cols});
  if (std::string runError = run(spec, buffers); !runError.empty())
    return "run: " + runError;

  size_t scaleBytes = size_t(scaleStorageBits(spec.scheme.scale.type) / 8);
  for (size_t i = 0; i < params.size(); ++i) {
    if (!params[i].isResult)
      continue;
    const std::vector<uint8_t> &got = storage[i];
    switch (params[i].role) {
    case KernelParam::Role::Codes:
      for (size_t at = 0; at < got.size(); ++at)
        if (got[at] != expected->codes[at])
          return mismatch("code byte", at, got[at], expected->codes[at]);
      break;
    case KernelParam::Role::Scales:
      for (size_t at = 0; at < expected->scaleCodes.size(); ++at) {
        uint32_t code = 0;
        std::memcpy(&code, got.data() + at * scaleBytes, scaleBytes);
        if (code != expected->scaleCodes[at])
          return mismatch("scale", at, code, expected->scaleCodes[at]);
      }
      break;
    case KernelParam::Role::Zeros:
      for (size_t at = 0; at < got.size(); ++at)
        if (got[at] != expected->zeros[at])
          return mismatch("zero point", at, got[at], expected->zeros[at]);
      break;
    case KernelParam::Role::Global: {
      uint32_t bits = 0;
      std::memcpy(&bits, got.data(), 4);
      if (bits != floatBits(expected->globalScale))
        return mismatch("global scale", 0, bits,
                        floatBits(expected->globalScale));
      break;
    }
    case KernelParam::Role::Output: {
      // The updated residual, in the kernel's dtype. NaN payloads are not
      // part of the contract; NaN-ness is.
      Values want = inDtype(spec.valueType, residual);
      size_t width = elementBytes(params[i].elementType);
      for (size_t at = 0; at < residual.size(); ++at) {
        uint32_t gotBits = 0, wantBits = 0;
        std::memcpy(&gotBits, got.data() + at * width, width);
        std::memcpy(&wantBits, want.bytes.data() + at * width, width);
        bool bothNan = std::isnan(residual[at]) &&
                       std::isnan(width == 4 ? bitsToFloat(gotBits)
                                  : spec.valueType == ValueType::F16
                                      ? halfToFloat(uint16_t(gotBits))
                                      : bfloat16ToFloat(uint16_t(gotBits)));
        if (gotBits != wantBits && !bothNan)
          return mismatch("updated residual", at, gotBits, wantBits);
      }
      break;
    }
    default:
      break;
    }
  }
  return "";
}

} // namespace lowbit::testing
