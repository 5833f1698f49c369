//===- MatmulOrder.h - The quantized-weight matmul's one order --*- C++ -*-===//
//
// The ordered reference: Y = X . dequant(W)^T (+ bias) computed in the one
// documented order every path follows bit for bit (docs/matmul.md):
//
//   w[n,k] = the reference dequantize (format/Quantize.h), an f32; for an
//            f16/bf16 X rounded to X's dtype (RNE, canonical NaN);
//   x[m,k] = X's element as an f32 (exact);
//   K is cut into chunks of kChunk = 32; chunk j belongs to slice
//   j mod kSlices (32). p[s] = +0, then for each chunk of slice s in
//   ascending order and each k of the chunk ascending,
//   p[s] = fmaf(x, w, p[s]); acc = +0 + p[0] + p[1] + ... + p[31] (f32
//   adds, in slice order); acc + bias[n] (f32 add) when there is a bias;
//   Y = acc rounded to Y's dtype (RNE, overflow to inf, canonical NaN).
//
// Plain C++, compiled with -ffp-contract=off: only the explicit fmaf
// fuses.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_MATMUL_MATMULORDER_H
#define LOWBIT_MATMUL_MATMULORDER_H

#include "format/Quantize.h"
#include "matmul/MatmulSpec.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace lowbit::matmul {

/// Chunk width along K and the number of slices (docs/matmul.md).
constexpr int64_t kChunk = 32;
constexpr int64_t kSlices = 32;

/// The slice that element k belongs to: (k / kChunk) mod kSlices.
constexpr int64_t sliceOf(int64_t k) { return (k / kChunk) % kSlices; }

/// w[n,k] as the order uses it, row-major [N, K]: the reference dequantize
/// of `weights`, rounded to `input` when that is f16 or bf16.
std::optional<std::vector<float>> orderedWeights(const QuantizedTensor &weights,
                                                 ValueType input,
                                                 std::string *error);

/// X's elements as f32 (exact): `bytes` holds M*K little-endian elements of
/// `dtype` (f16 and bf16 as their bit patterns).
std::vector<float> widenActivations(ValueType dtype,
                                    std::span<const uint8_t> bytes);

/// acc[m,n] before the output rounding, in the order: x is [M, K], w
/// [N, K] (orderedWeights), bias empty or [N].
std::vector<float> orderedAccumulate(std::span<const float> x,
                                     std::span<const float> w,
                                     std::span<const float> bias, int64_t m,
                                     int64_t n, int64_t k);

/// One f32 as Y's dtype: RNE, f16/bf16 overflow gives inf, a NaN becomes
/// the canonical NaN (0x7fff for f16 and bf16, 0x7fffffff for f32), what
/// the GPU's cvt.rn gives.
uint32_t roundOutputBits(ValueType dtype, float value);

/// Y's bytes ([M, N] little-endian elements of `dtype`) from acc.
std::vector<uint8_t> roundOutput(ValueType dtype, std::span<const float> acc);

/// The whole reference: Y's bytes for X given as `input` bytes [M, K]
/// (K = weights.cols). Fails with a message when the weights are invalid,
/// the scheme is not a weight scheme or the sizes disagree.
std::optional<std::vector<uint8_t>>
orderedMatmul(const QuantizedTensor &weights, ValueType input,
              std::span<const uint8_t> xBytes, int64_t m,
              std::span<const float> bias, ValueType output,
              std::string *error);

} // namespace lowbit::matmul

#endif // LOWBIT_MATMUL_MATMULORDER_H
