//===- FusedComparison.cpp - A fused kernel against its two references ----===//

#include "tools/lowbit/FusedComparison.h"

#include "format/Codec.h"
#include "format/Prologue.h"
#include "runtime/spec/KernelAbi.h"
#include "tools/lowbit/JitBackend.h"
#include "tools/lowbit/SyntheticData.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace lowbit::cli {

namespace {

/// A side tensor's seeded values (see FusedComparison.h).
std::vector<float> sideValues(const std::string &side, int64_t count,
                              uint64_t seed) {
  Generator generator(seed);
  std::vector<float> values(static_cast<size_t>(count));
  for (float &value : values)
    value = side == "residual" ? float(generator.normal())
            : side == "weight" ? float(0.5 + generator.uniform())
                               : float(0.25 + 3.75 * generator.uniform());
  return values;
}

} // namespace

ValueDtype dtypeOf(ValueType type) {
  if (type == ValueType::F32)
    return std::nullopt;
  return type == ValueType::F16 ? HalfType::F16 : HalfType::BF16;
}

std::vector<uint8_t> toDtype(ValueType type, const std::vector<float> &values,
                             std::vector<float> &widened) {
  std::vector<uint8_t> bytes;
  widened.clear();
  for (float value : values) {
    if (type == ValueType::F32) {
      uint32_t bits = floatBits(value);
      bytes.insert(bytes.end(), (uint8_t *)&bits, (uint8_t *)&bits + 4);
      widened.push_back(value);
      continue;
    }
    uint16_t bits =
        type == ValueType::F16 ? floatToHalf(value) : floatToBFloat16(value);
    bytes.insert(bytes.end(), (uint8_t *)&bits, (uint8_t *)&bits + 2);
    widened.push_back(type == ValueType::F16 ? halfToFloat(bits)
                                             : bfloat16ToFloat(bits));
  }
  return bytes;
}

bool sameQuantized(const QuantizedTensor &a, const QuantizedTensor &b) {
  return a.codes == b.codes && a.scaleCodes == b.scaleCodes &&
         a.zeros == b.zeros &&
         floatBits(a.globalScale) == floatBits(b.globalScale);
}

std::optional<double> sqnrDb(const QuantizedTensor &tensor,
                             const std::vector<float> &signal) {
  std::string error;
  std::optional<std::vector<float>> output = dequantize(tensor, &error);
  if (!output || output->size() != signal.size())
    return std::nullopt;
  double power = 0, noise = 0;
  for (size_t i = 0; i < signal.size(); ++i) {
    double x = signal[i], difference = x - (*output)[i];
    power += x * x;
    noise += difference * difference;
  }
  if (noise == 0)
    return std::numeric_limits<double>::infinity();
  return 10 * std::log10(power / noise);
}

std::optional<FusedComparison> compareFused(const KernelSpec &spec,
                                            const std::vector<float> &input,
                                            int64_t rows, int64_t cols,
                                            uint64_t seed, std::string *error,
                                            const KernelRunner &emulator) {
  KernelSpec sized = spec;
  sized.rows = rows;
  sized.cols = cols;
  // The kernel's read parameters in ABI order, and their f32 values.
  std::vector<std::vector<uint8_t>> reads;
  std::vector<std::vector<float>> sides;
  std::vector<float> widenedInput;
  for (const KernelAbiParam &param : kernelAbi(sized)) {
    if (param.isResult)
      continue;
    if (param.side.empty()) {
      if (int64_t(input.size()) != param.shape.rows * param.shape.cols) {
        *error = "the input has " + std::to_string(input.size()) +
                 " values; the kernel reads " +
                 std::to_string(param.shape.rows * param.shape.cols);
        return std::nullopt;
      }
      reads.push_back(toDtype(spec.valueType, input, widenedInput));
      continue;
    }
    std::vector<float> widened;
    reads.push_back(
        toDtype(spec.valueType,
                sideValues(param.side, param.shape.rows * param.shape.cols,
                           seed + reads.size()),
                widened));
    sides.push_back(std::move(widened));
  }
  // Each prologue's side tensors, in chain order (as kernelAbi lists them).
  std::vector<PrologueOperands> operands =
      bindPrologueOperands(spec.prologues, sides);

  // The reference: the chain in f32, then the reference quantizer.
  ValueDtype dtype = dtypeOf(spec.valueType);
  std::vector<float> residual;
  std::optional<QuantizedTensor> reference =
      quantizeFused(spec.scheme, spec.prologues, operands, widenedInput, rows,
                    cols, dtype, {}, &residual, error);
  if (!reference)
    return std::nullopt;
  // The chain's result alone, for the unfused pair and the SQNR.
  std::vector<float> values = widenedInput;
  int64_t width = prologueInputWidth(spec.prologues, cols);
  for (size_t i = 0; i < spec.prologues.size(); ++i) {
    std::optional<std::vector<float>> next =
        applyPrologue(spec.prologues[i], values, rows, width, operands[i],
                      dtype, nullptr, error);
    if (!next)
      return std::nullopt;
    values = std::move(*next);
    width = cols;
  }

  JitTiming timing;
  std::vector<uint8_t> residualBytes;
  std::optional<QuantizedTensor> fused =
      jitQuantizeFused(spec, reads, rows, cols, &residualBytes, error, &timing);
  if (!fused)
    return std::nullopt;
  std::optional<QuantizedTensor> unfused = jitQuantize(
      spec.scheme, ValueType::F32, values.data(), rows, cols, {}, error);
  if (!unfused)
    return std::nullopt;

  std::vector<float> ignored;
  std::vector<uint8_t> wantResidual =
      residual.empty() ? std::vector<uint8_t>()
                       : toDtype(spec.valueType, residual, ignored);
  FusedComparison result{std::move(*fused), std::move(*reference),
                         std::move(*unfused), std::move(values)};
  result.fusedBitExact = residualBytes == wantResidual &&
                         sameQuantized(result.fused, result.reference);
  result.unfusedIdentical = sameQuantized(result.unfused, result.fused);
  result.compileMillis = timing.compileMillis;
  if (emulator) {
    std::vector<uint8_t> emulatedResidual;
    std::optional<QuantizedTensor> emulated =
        jitQuantizeFused(spec, reads, rows, cols, &emulatedResidual,
                         &result.emulatorError, nullptr, emulator);
    if (emulated)
      result.emulatedBitExact = emulatedResidual == wantResidual &&
                                sameQuantized(*emulated, result.reference);
  }
  return result;
}

} // namespace lowbit::cli
