//===- QuantizedOrder.h - The quantized-activation matmul's order -*- C++
//-*-===//
//
// The ordered reference of `matmul w=SCHEME a=SCHEME` (docs/matmul.md,
// "Quantized activations"): X is quantized with the activations' scheme by
// the reference quantizer (behind the spec's prologues: quantizeFused),
// then Y = X_q . W_q^T is accumulated from the codes in one order:
//
//   B = orderBlockK(...)          the K block (the common scale extent along
//                                 K; else 128 for float codes, all of K for
//                                 integer codes)
//   for each (m, n):
//     acc = +0
//     for each K block j, ascending:
//       float codes: p = +0; p = fmaf(qx[m,k], qw[n,k], p), k ascending
//       integer codes: p = sum of qx qw in int32 (exact), then (float) p
//       s = fx(m, j) * fw(n, j)   (f32: the blocks' scale factors)
//       acc = fmaf(p, s, acc)
//     acc = acc * G               (block-scaled FP4 with a global scale)
//     acc = acc + bias[n]         (with a bias)
//     Y = acc rounded to Y's dtype (roundOutputBits)
//
// q is a code's exact value (Format::decode), f a scale's f32 factor: the
// decoded scale s; s * g with a decode-convention global scale g; s / g
// with an encode-convention one. Block-scaled FP4 (e2m1 on both sides,
// globalsAfterKLoop) keeps the global scales out of the K loop: f is s
// alone and G = gamma_x * gamma_w multiplies acc once, where a side's gamma
// is g, fl(1 / g) or 1 (globalFactor). Plain C++, compiled with
// -ffp-contract=off: only the explicit fmaf fuses.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_MATMUL_QUANTIZEDORDER_H
#define LOWBIT_MATMUL_QUANTIZEDORDER_H

#include "format/Prologue.h"
#include "format/Quantize.h"
#include "matmul/MatmulSpec.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace lowbit::matmul {

/// The K block of float codes whose scales cover all of K (per tensor, per
/// token, per channel): DeepGEMM's promotion interval, so that the f32
/// partial sums stay short on every path.
constexpr int64_t kPromotionK = 128;
/// The most code products one int32 block sums exactly: |q| <= 128 for
/// codes of at most 8 bits, so 131071 products stay below 2^31.
constexpr int64_t kMaxIntegerBlock = 131071;

/// The extent along K of one scale unit when the scheme has one (groups
/// along K, blocks); 0 when a scale covers the whole of K.
int64_t scaleExtentAlongK(const ScaleSpec &scale);

/// B, the order's K block for weights and activations (a valid pair,
/// activationPairRefusal) at reduction `k`.
int64_t orderBlockK(const Scheme &weights, const Scheme &activations,
                    int64_t k);

/// Whether the pair's global scales leave the K loop (docs/matmul.md, "The
/// order"): block-scaled FP4, e2m1 codes on both sides. A block-scaled mma
/// (sm_120a's mma.sync ... block_scale) takes only the ue4m3/ue8m0 block
/// scales, so the product of the global scales is applied once, after the
/// last block (CUTLASS's alpha), on every path.
bool globalsAfterKLoop(const Scheme &weights, const Scheme &activations);

/// A side's global factor gamma: g (decode convention), 1 / g rounded to
/// f32 (encode convention), 1 without a global scale.
float globalFactor(const QuantizedTensor &tensor);

/// Every code's exact value, [rows, cols] row-major.
std::vector<float> codeValues(const QuantizedTensor &tensor);
/// Every stored scale's f32 factor, indexed as QuantizedTensor::scaleCodes:
/// s, s * g (decode convention) or s / g (encode convention); s alone
/// without `withGlobal`.
std::vector<float> scaleFactors(const QuantizedTensor &tensor,
                                bool withGlobal = true);

/// X quantized as the kernel does: `x` ([m, prologueInputWidth(prologues,
/// k)], widened exactly from `spec.input`) through the spec's prologues,
/// then the activations' reference quantizer. `sides` holds the prologues'
/// side tensors (bindPrologueOperands).
std::optional<QuantizedTensor>
quantizeActivations(const MatmulSpec &spec, std::span<const float> x, int64_t m,
                    int64_t k, std::span<const PrologueOperands> sides,
                    std::string *error);

/// acc[m, n] before the output rounding, in the order: x [M, K] and w
/// [N, K] quantized, bias empty or [N].
std::vector<float> quantizedAccumulate(const QuantizedTensor &x,
                                       const QuantizedTensor &w,
                                       std::span<const float> bias);

/// The whole reference for a spec with quantized activations and no
/// prologue side tensors: Y's bytes ([M, N] of spec.output) for X's bytes
/// ([M, K'] of spec.input, K' the prologues' input width). Fails with a
/// message when the sizes, the weights or the pair disagree.
std::optional<std::vector<uint8_t>>
orderedQuantizedMatmul(const MatmulSpec &spec, const QuantizedTensor &weights,
                       std::span<const uint8_t> xBytes, int64_t m,
                       std::span<const float> bias, std::string *error);

} // namespace lowbit::matmul

#endif // LOWBIT_MATMUL_QUANTIZEDORDER_H
