//===- MatmulOrder.cpp - The quantized-weight matmul's one order ----------===//
//
// Compiled with -ffp-contract=off (matmul/CMakeLists.txt): a fused
// multiply-add the order does not name would change the bits.
//
//===----------------------------------------------------------------------===//

#include "matmul/MatmulOrder.h"

#include "format/Codec.h"

#include <array>
#include <cmath>
#include <cstring>

namespace lowbit::matmul {

namespace {

bool fail(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
  return false;
}

HalfType halfTypeOf(ValueType dtype) {
  return dtype == ValueType::F16 ? HalfType::F16 : HalfType::BF16;
}

} // namespace

std::optional<std::vector<float>> orderedWeights(const QuantizedTensor &weights,
                                                 ValueType input,
                                                 std::string *error) {
  if (input == ValueType::F32)
    return dequantize(weights, error);
  // The tensor cores take w in X's dtype, so every path rounds it so: the
  // same rounding (and canonical NaN) as dequantizing to that dtype.
  std::optional<std::vector<uint16_t>> bits =
      dequantizeHalf(weights, halfTypeOf(input), error);
  if (!bits)
    return std::nullopt;
  return widenToFloat(halfTypeOf(input), *bits);
}

std::vector<float> widenActivations(ValueType dtype,
                                    std::span<const uint8_t> bytes) {
  size_t count = bytes.size() / size_t(valueTypeBytes(dtype));
  if (dtype == ValueType::F32) {
    std::vector<float> values(count);
    std::memcpy(values.data(), bytes.data(), count * sizeof(float));
    return values;
  }
  std::vector<uint16_t> bits(count);
  std::memcpy(bits.data(), bytes.data(), count * sizeof(uint16_t));
  return widenToFloat(halfTypeOf(dtype), bits);
}

std::vector<float> orderedAccumulate(std::span<const float> x,
                                     std::span<const float> w,
                                     std::span<const float> bias, int64_t m,
                                     int64_t n, int64_t k) {
  std::vector<float> acc(size_t(m * n));
  int64_t numChunks = (k + kChunk - 1) / kChunk;
  for (int64_t row = 0; row < m; ++row) {
    const float *xRow = x.data() + row * k;
    for (int64_t col = 0; col < n; ++col) {
      const float *wRow = w.data() + col * k;
      std::array<float, kSlices> partial;
      partial.fill(0.0f);
      for (int64_t slice = 0; slice < kSlices; ++slice)
        for (int64_t chunk = slice; chunk < numChunks; chunk += kSlices) {
          int64_t end = std::min(chunk * kChunk + kChunk, k);
          for (int64_t index = chunk * kChunk; index < end; ++index)
            partial[size_t(slice)] =
                std::fmaf(xRow[index], wRow[index], partial[size_t(slice)]);
        }
      float sum = 0.0f;
      for (float value : partial)
        sum = sum + value;
      if (!bias.empty())
        sum = sum + bias[size_t(col)];
      acc[size_t(row * n + col)] = sum;
    }
  }
  return acc;
}

uint32_t roundOutputBits(ValueType dtype, float value) {
  if (std::isnan(value))
    return dtype == ValueType::F32 ? 0x7fffffffu : 0x7fffu;
  switch (dtype) {
  case ValueType::F32:
    return floatBits(value);
  case ValueType::F16:
    return floatToHalf(value);
  case ValueType::BF16:
    return floatToBFloat16(value);
  }
  return floatBits(value);
}

std::vector<uint8_t> roundOutput(ValueType dtype, std::span<const float> acc) {
  size_t bytes = size_t(valueTypeBytes(dtype));
  std::vector<uint8_t> out(acc.size() * bytes);
  for (size_t index = 0; index < acc.size(); ++index) {
    uint32_t bits = roundOutputBits(dtype, acc[index]);
    // Little-endian, as the kernels and .npy files store it.
    for (size_t byte = 0; byte < bytes; ++byte)
      out[index * bytes + byte] = uint8_t(bits >> (8 * byte));
  }
  return out;
}

std::optional<std::vector<uint8_t>>
orderedMatmul(const QuantizedTensor &weights, ValueType input,
              std::span<const uint8_t> xBytes, int64_t m,
              std::span<const float> bias, ValueType output,
              std::string *error) {
  int64_t n = weights.rows, k = weights.cols;
  if (!validateWeightShape(weights.scheme, n, k, error))
    return std::nullopt;
  if (m < 0 || int64_t(xBytes.size()) != m * k * valueTypeBytes(input)) {
    fail(error, "X holds " + std::to_string(xBytes.size()) + " bytes, not " +
                    std::to_string(m) + " x " + std::to_string(k) + " " +
                    std::string(valueTypeName(input)) + " elements");
    return std::nullopt;
  }
  if (!bias.empty() && int64_t(bias.size()) != n) {
    fail(error, "the bias has " + std::to_string(bias.size()) +
                    " elements, not n=" + std::to_string(n));
    return std::nullopt;
  }
  std::optional<std::vector<float>> w = orderedWeights(weights, input, error);
  if (!w)
    return std::nullopt;
  std::vector<float> x = widenActivations(input, xBytes);
  return roundOutput(output, orderedAccumulate(x, *w, bias, m, n, k));
}

} // namespace lowbit::matmul
