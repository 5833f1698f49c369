//===- MatmulBound.cpp - The matmul against float64, with a proven bound --===//

#include "matmul/MatmulBound.h"

#include "format/Codec.h"
#include "matmul/MatmulOrder.h"
#include "matmul/QuantizedOrder.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace lowbit::matmul {

namespace {

/// gamma_n = n u / (1 - n u), the bound on |prod of n (1 + delta)| - 1.
double gamma(int64_t count, double unitRoundoff) {
  double nu = double(count) * unitRoundoff;
  return nu / (1.0 - nu);
}

/// Y's element `index` as a double.
double outputValue(ValueType dtype, std::span<const uint8_t> bytes,
                   int64_t index) {
  if (dtype == ValueType::F32) {
    uint32_t bits = 0;
    for (int byte = 0; byte < 4; ++byte)
      bits |= uint32_t(bytes[size_t(index * 4 + byte)]) << (8 * byte);
    return double(bitsToFloat(bits));
  }
  uint16_t bits = uint16_t(bytes[size_t(index * 2)] |
                           bytes[size_t(index * 2 + 1)] << 8);
  return double(dtype == ValueType::F16 ? halfToFloat(bits)
                                        : bfloat16ToFloat(bits));
}

/// The unit roundoff and half the smallest subnormal of Y's dtype; both 0
/// for f32, where Y is the accumulator itself.
std::pair<double, double> outputRounding(ValueType dtype) {
  switch (dtype) {
  case ValueType::F32:
    return {0.0, 0.0};
  case ValueType::F16:
    return {std::ldexp(1.0, -11), std::ldexp(1.0, -25)};
  case ValueType::BF16:
    return {std::ldexp(1.0, -8), std::ldexp(1.0, -134)};
  }
  return {0.0, 0.0};
}

} // namespace

int64_t roundingDepth(int64_t k, bool bias) {
  // Slice s holds chunks s, s + 32, ...; slice 0 has the most elements:
  // every chunk but a short last one is full.
  int64_t numChunks = (k + kChunk - 1) / kChunk;
  int64_t chunksOfSliceZero = (numChunks + kSlices - 1) / kSlices;
  int64_t mostTerms = std::min(k, chunksOfSliceZero * kChunk);
  return mostTerms + (kSlices - 1) + (bias ? 1 : 0);
}

namespace {

/// One element's float64 view: Y64 and S as computed in f64, and the
/// bound's absolute part (the subnormal terms) before the output rounding.
struct ElementSums {
  double sum = 0, absSum = 0, absolute = 0;
};

/// The comparison of every element of Y with its float64 view: `sums`
/// gives Y64 and S in f64 (within gamma64 S of the exact ones), gammaL is
/// the relative part of the bound.
template <typename SumsFn>
BoundCheck checkElements(std::span<const uint8_t> yBytes, ValueType output,
                         int64_t m, int64_t n, double gammaL, double gamma64,
                         SumsFn sums) {
  auto [uOut, etaOut] = outputRounding(output);
  BoundCheck check;
  for (int64_t row = 0; row < m; ++row)
    for (int64_t col = 0; col < n; ++col) {
      ElementSums element = sums(row, col);
      double sum = element.sum, absSum = element.absSum;
      // S <= absSum / (1 - gamma64); Y64 within e64 of sum.
      double exactAbsSum = absSum / (1.0 - gamma64);
      double sumError = gamma64 * exactAbsSum;
      double bound = (1.0 + uOut) * (gammaL * exactAbsSum + element.absolute) +
                     uOut * (std::fabs(sum) + sumError) + etaOut + sumError;
      double y = outputValue(output, yBytes, row * n + col);
      double error = std::fabs(y - sum);
      bool holds = std::isfinite(y) && error <= bound;
      if (std::isfinite(y)) {
        check.worstRatio =
            std::max(check.worstRatio, bound > 0 ? error / bound
                                                 : (error > 0 ? INFINITY : 0));
        if (absSum > 0)
          check.worstRelative = std::max(check.worstRelative, error / absSum);
      }
      if (!holds && check.holds) {
        std::ostringstream text;
        text.precision(17);
        text << "Y[" << row << "," << col << "] = " << y << " vs float64 "
             << sum << ": error " << error << " > bound " << bound;
        check.holds = false;
        check.failure = text.str();
      }
    }
  return check;
}

} // namespace

BoundCheck checkFloat64Bound(std::span<const float> x, std::span<const float> w,
                             std::span<const float> bias,
                             std::span<const uint8_t> yBytes, ValueType output,
                             int64_t m, int64_t n, int64_t k) {
  const double u = std::ldexp(1.0, -24), u64 = std::ldexp(1.0, -53);
  int64_t depth = roundingDepth(k, !bias.empty());
  int64_t roundings = k + (kSlices - 1) + (bias.empty() ? 0 : 1);
  // The f64 sums below add K + 1 terms: each is within gamma64_(K+1) of
  // its exact value (the products of two f32 are exact in f64).
  return checkElements(yBytes, output, m, n, gamma(depth, u), gamma(k + 1, u64),
                       [&](int64_t row, int64_t col) {
                         ElementSums element;
                         for (int64_t index = 0; index < k; ++index) {
                           double product = double(x[size_t(row * k + index)]) *
                                            double(w[size_t(col * k + index)]);
                           element.sum += product;
                           element.absSum += std::fabs(product);
                         }
                         if (!bias.empty()) {
                           element.sum += double(bias[size_t(col)]);
                           element.absSum +=
                               std::fabs(double(bias[size_t(col)]));
                         }
                         element.absolute =
                             double(roundings) * std::ldexp(1.0, -149);
                         return element;
                       });
}

int64_t quantizedRoundingDepth(int64_t k, int64_t blockK, bool bias,
                               bool globalsAfter) {
  int64_t numBlocks = (k + blockK - 1) / blockK;
  return std::min(k, blockK) + 2 + numBlocks + (bias ? 1 : 0) +
         (globalsAfter ? 4 : 0);
}

BoundCheck checkQuantizedBound(const QuantizedTensor &x,
                               const QuantizedTensor &w,
                               std::span<const float> bias,
                               std::span<const uint8_t> yBytes,
                               ValueType output) {
  const double u = std::ldexp(1.0, -24), u64 = std::ldexp(1.0, -53);
  int64_t m = x.rows, n = w.rows, k = x.cols;
  int64_t blockK = orderBlockK(w.scheme, x.scheme, k);
  int64_t numBlocks = (k + blockK - 1) / blockK;
  bool globalsAfter = globalsAfterKLoop(w.scheme, x.scheme);
  int64_t depth =
      quantizedRoundingDepth(k, blockK, !bias.empty(), globalsAfter);
  // G scales the K loop's absolute errors; acc G may lose 2^-150 more.
  double absoluteScale = globalsAfter
                             ? std::max(1.0, 2.0 * double(globalFactor(x)) *
                                                 double(globalFactor(w))) +
                                   1.0
                             : 1.0;
  std::vector<float> xValues = codeValues(x), wValues = codeValues(w);
  std::vector<float> xFactors = scaleFactors(x), wFactors = scaleFactors(w);
  auto dequantized =
      [](const QuantizedTensor &tensor, std::span<const float> values,
         std::span<const float> factors, int64_t row, int64_t col) {
        // q f is exact in f64: a code has at most 8 significant bits, a factor
        // 24.
        return double(values[size_t(row * tensor.cols + col)]) *
               double(factors[size_t(scaleIndexOf(tensor.scheme, tensor.rows,
                                                  tensor.cols, row, col))]);
      };
  // K products (each rounded once in f64) and K + 1 adds.
  return checkElements(
      yBytes, output, m, n, gamma(depth, u), gamma(2 * k + 1, u64),
      [&](int64_t row, int64_t col) {
        ElementSums element;
        double codeProducts = 0;
        for (int64_t index = 0; index < k; ++index) {
          double product = dequantized(x, xValues, xFactors, row, index) *
                           dequantized(w, wValues, wFactors, col, index);
          element.sum += product;
          element.absSum += std::fabs(product);
          codeProducts += std::fabs(double(xValues[size_t(row * k + index)]) *
                                    double(wValues[size_t(col * k + index)]));
        }
        if (!bias.empty()) {
          element.sum += double(bias[size_t(col)]);
          element.absSum += std::fabs(double(bias[size_t(col)]));
        }
        // The acc chain's fmas and the bias add may each lose 2^-150 to a
        // subnormal result, and a subnormal block factor fx fw loses up to
        // 2^-150 times its block's partial sum; each carried by at most
        // `depth` factors (1 + d) < 2.
        element.absolute = (double(numBlocks + 1) + codeProducts) *
                           std::ldexp(1.0, -149) * absoluteScale;
        return element;
      });
}

} // namespace lowbit::matmul
