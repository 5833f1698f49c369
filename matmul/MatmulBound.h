//===- MatmulBound.h - The matmul against float64, with a proven bound -*- C++
//-*-===//
//
// Y of any path that follows the order (matmul/MatmulOrder.h), compared
// with the float64 matmul of the same w and x, and the bound that holds
// for every element (docs/matmul.md, "The float64 bound", for the proof):
//
//   |Y - Y64| <= (1 + u_out) (g_L S + R 2^-149) + u_out |Y64| + eta_out
//
//   S       = sum_k |x w| + |bias|,  Y64 = sum_k x w + bias (both exact)
//   L       = (most terms of one slice) + 31 (the slices' sum) + 1 with a
//             bias: the most roundings any one product goes through
//   R       = K + 31 + 1 with a bias: all the f32 roundings (each may add
//             an absolute error of 2^-150 when its result is subnormal)
//   g_L     = L u / (1 - L u), u = 2^-24 (the f32 accumulator)
//   u_out   = the unit roundoff of Y's dtype (0 for f32: acc is Y)
//   eta_out = half the smallest subnormal of Y's dtype (0 for f32)
//
// The f64 sums here are not exact; the check widens the bound by their own
// proven error (2 g64_(K+1) S64), so it is a sufficient, not a heuristic,
// test.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_MATMUL_MATMULBOUND_H
#define LOWBIT_MATMUL_MATMULBOUND_H

#include "format/Quantize.h"
#include "matmul/MatmulSpec.h"

#include <cstdint>
#include <span>
#include <string>

namespace lowbit::matmul {

/// L: the most f32 roundings one product x w goes through in the order
/// for a reduction of `k` (with `bias`, one more).
int64_t roundingDepth(int64_t k, bool bias);

/// The worst element of a comparison with float64.
struct BoundCheck {
  bool holds = true;
  /// max over elements of |Y - Y64| / bound (<= 1 when it holds).
  double worstRatio = 0;
  /// max over elements of |Y - Y64| / S (the relative error).
  double worstRelative = 0;
  /// The first element that breaks it, as "Y[m,n] = ... vs ...".
  std::string failure;
};

/// Checks Y (raw bytes of `output`, [M, N]) against the float64 matmul of
/// x [M, K] and w [N, K] (the order's f32 inputs) plus the bias (empty or
/// [N]). A non-finite Y fails.
BoundCheck checkFloat64Bound(std::span<const float> x, std::span<const float> w,
                             std::span<const float> bias,
                             std::span<const uint8_t> yBytes, ValueType output,
                             int64_t m, int64_t n, int64_t k);

/// The quantized-activation order's L (docs/matmul.md, "Quantized
/// activations"): the most terms of one K block, the block's conversion
/// and scale-factor roundings, the acc chain's numBlocks fmas, the bias;
/// with `globalsAfter` (globalsAfterKLoop) four more: G, acc G, and the
/// two f32 factors fl(s g) of the float64 view that the order never forms.
int64_t quantizedRoundingDepth(int64_t k, int64_t blockK, bool bias,
                               bool globalsAfter = false);

/// Checks Y (raw bytes of `output`, [M, N]) of a quantized-activation
/// matmul against float64 with X and W each dequantized (q f, exact):
///
///   |Y - Y64| <= (1 + u_out) (g_L S + (numBlocks + 1 + P) 2^-149 c)
///                + u_out |Y64| + eta_out
///
/// S = sum |x w| + |bias|, P = sum |qx qw| (the code products), L =
/// quantizedRoundingDepth, c = max(1, 2 G) + 1 when the global scales'
/// product G comes after the K loop (it scales the loop's absolute
/// errors; the epilogue multiply may lose 2^-150 more), else 1. The f64
/// sums' own error widens it, as above.
BoundCheck checkQuantizedBound(const QuantizedTensor &x,
                               const QuantizedTensor &w,
                               std::span<const float> bias,
                               std::span<const uint8_t> yBytes,
                               ValueType output);

} // namespace lowbit::matmul

#endif // LOWBIT_MATMUL_MATMULBOUND_H
