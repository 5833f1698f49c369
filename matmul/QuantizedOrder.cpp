//===- QuantizedOrder.cpp - The quantized-activation matmul's order -------===//
//
// Compiled with -ffp-contract=off (matmul/CMakeLists.txt): a fused
// multiply-add the order does not name would change the bits.
//
//===----------------------------------------------------------------------===//

#include "matmul/QuantizedOrder.h"

#include "matmul/MatmulOrder.h"

#include <algorithm>
#include <cmath>

namespace lowbit::matmul {

namespace {

bool fail(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
  return false;
}

ValueDtype valueDtypeOf(ValueType type) {
  switch (type) {
  case ValueType::F16:
    return HalfType::F16;
  case ValueType::BF16:
    return HalfType::BF16;
  case ValueType::F32:
    break;
  }
  return std::nullopt;
}

/// The scale factor of `tensor` for row `row` and K block `block` of
/// `blockK`: the factor of the block's first element (a scale unit never
/// straddles a block: its extent along K is B or all of K).
float blockFactor(const QuantizedTensor &tensor, std::span<const float> factors,
                  int64_t row, int64_t block, int64_t blockK) {
  return factors[size_t(scaleIndexOf(tensor.scheme, tensor.rows, tensor.cols,
                                     row, block * blockK))];
}

} // namespace

int64_t scaleExtentAlongK(const ScaleSpec &scale) {
  if (scale.granularity == Granularity::Group && scale.axis == 1)
    return scale.groupSize;
  if (scale.granularity == Granularity::Block)
    return scale.blockCols;
  return 0;
}

int64_t orderBlockK(const Scheme &weights, const Scheme &activations,
                    int64_t k) {
  int64_t extent = std::max(scaleExtentAlongK(weights.scale),
                            scaleExtentAlongK(activations.scale));
  if (extent > 0)
    return extent;
  return activations.element.isInt() ? k : kPromotionK;
}

bool globalsAfterKLoop(const Scheme &weights, const Scheme &activations) {
  auto fp4 = [](const Scheme &scheme) {
    return scheme.element.name() == std::string_view("e2m1");
  };
  return fp4(weights) && fp4(activations);
}

float globalFactor(const QuantizedTensor &tensor) {
  switch (scaleKindOf(tensor.scheme)) {
  case ScaleKind::GlobalDecode:
    return tensor.globalScale;
  case ScaleKind::GlobalEncode:
    return 1.0f / tensor.globalScale;
  default:
    return 1.0f;
  }
}

std::vector<float> codeValues(const QuantizedTensor &tensor) {
  std::vector<float> values(size_t(tensor.rows * tensor.cols));
  for (int64_t row = 0; row < tensor.rows; ++row)
    for (int64_t col = 0; col < tensor.cols; ++col)
      values[size_t(row * tensor.cols + col)] =
          tensor.scheme.element.decodeToFloat(codeAt(tensor, row, col));
  return values;
}

std::vector<float> scaleFactors(const QuantizedTensor &tensor,
                                bool withGlobal) {
  ScaleType type = tensor.scheme.scale.type;
  ScaleKind kind =
      withGlobal ? scaleKindOf(tensor.scheme) : ScaleKind::Symmetric;
  std::vector<float> factors(tensor.scaleCodes.size());
  for (size_t index = 0; index < factors.size(); ++index) {
    float scale = decodeScale(type, tensor.scaleCodes[index]);
    if (kind == ScaleKind::GlobalDecode)
      scale = scale * tensor.globalScale;
    else if (kind == ScaleKind::GlobalEncode)
      scale = scale / tensor.globalScale;
    factors[index] = scale;
  }
  return factors;
}

std::optional<QuantizedTensor>
quantizeActivations(const MatmulSpec &spec, std::span<const float> x, int64_t m,
                    int64_t k, std::span<const PrologueOperands> sides,
                    std::string *error) {
  if (!spec.activation) {
    fail(error, "the spec quantizes no activations (it has no a=)");
    return std::nullopt;
  }
  return quantizeFused(*spec.activation, spec.prologues, sides, x, m, k,
                       valueDtypeOf(spec.input), StaticScales{},
                       /*residualOut=*/nullptr, error);
}

std::vector<float> quantizedAccumulate(const QuantizedTensor &x,
                                       const QuantizedTensor &w,
                                       std::span<const float> bias) {
  int64_t m = x.rows, n = w.rows, k = x.cols;
  int64_t blockK = orderBlockK(w.scheme, x.scheme, k);
  int64_t numBlocks = (k + blockK - 1) / blockK;
  bool integer = x.scheme.element.isInt();
  // Block-scaled FP4: the block factors without the global scales, whose
  // product G multiplies acc after the last block.
  bool globalsAfter = globalsAfterKLoop(w.scheme, x.scheme);
  bool anyGlobal = x.scheme.scale.globalScale != GlobalScale::None ||
                   w.scheme.scale.globalScale != GlobalScale::None;
  float globalProduct = globalFactor(x) * globalFactor(w);
  std::vector<float> xValues = codeValues(x), wValues = codeValues(w);
  std::vector<float> xFactors = scaleFactors(x, !globalsAfter),
                     wFactors = scaleFactors(w, !globalsAfter);
  std::vector<float> acc(size_t(m * n));
  for (int64_t row = 0; row < m; ++row)
    for (int64_t col = 0; col < n; ++col) {
      const float *xRow = xValues.data() + row * k;
      const float *wRow = wValues.data() + col * k;
      float sum = 0.0f;
      for (int64_t block = 0; block < numBlocks; ++block) {
        int64_t begin = block * blockK, end = std::min(begin + blockK, k);
        float partial = 0.0f;
        if (integer) {
          int32_t exact = 0;
          for (int64_t index = begin; index < end; ++index)
            exact += int32_t(xRow[index]) * int32_t(wRow[index]);
          partial = float(exact);
        } else {
          for (int64_t index = begin; index < end; ++index)
            partial = std::fmaf(xRow[index], wRow[index], partial);
        }
        float factor = blockFactor(x, xFactors, row, block, blockK) *
                       blockFactor(w, wFactors, col, block, blockK);
        sum = std::fmaf(partial, factor, sum);
      }
      if (globalsAfter && anyGlobal)
        sum = sum * globalProduct;
      if (!bias.empty())
        sum = sum + bias[size_t(col)];
      acc[size_t(row * n + col)] = sum;
    }
  return acc;
}

std::optional<std::vector<uint8_t>>
orderedQuantizedMatmul(const MatmulSpec &spec, const QuantizedTensor &weights,
                       std::span<const uint8_t> xBytes, int64_t m,
                       std::span<const float> bias, std::string *error) {
  int64_t n = weights.rows, k = weights.cols;
  if (!spec.activation) {
    fail(error, "the spec quantizes no activations (it has no a=)");
    return std::nullopt;
  }
  if (!(weights.scheme == spec.scheme)) {
    fail(error, "the weights were quantized with " +
                    printSchemeText(weights.scheme) + ", not the spec's " +
                    printSchemeText(spec.scheme));
    return std::nullopt;
  }
  if (!validateMatmulShape(spec, n, k, error) ||
      !validateQuantized(weights, error))
    return std::nullopt;
  int64_t width = prologueInputWidth(spec.prologues, k);
  if (m < 0 ||
      int64_t(xBytes.size()) != m * width * valueTypeBytes(spec.input)) {
    fail(error, "X holds " + std::to_string(xBytes.size()) + " bytes, not " +
                    std::to_string(m) + " x " + std::to_string(width) + " " +
                    std::string(valueTypeName(spec.input)) + " elements");
    return std::nullopt;
  }
  if (!bias.empty() && int64_t(bias.size()) != n) {
    fail(error, "the bias has " + std::to_string(bias.size()) +
                    " elements, not n=" + std::to_string(n));
    return std::nullopt;
  }
  std::vector<PrologueOperands> sides(spec.prologues.size());
  std::optional<QuantizedTensor> x = quantizeActivations(
      spec, widenActivations(spec.input, xBytes), m, k, sides, error);
  if (!x)
    return std::nullopt;
  return roundOutput(spec.output, quantizedAccumulate(*x, weights, bias));
}

} // namespace lowbit::matmul
