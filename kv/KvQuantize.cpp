//===- KvQuantize.cpp - The KV-cache schemes' reference -------------------===//

#include "kv/KvQuantize.h"

#include "format/Scheme.h"

#include <algorithm>
#include <cmath>

namespace lowbit::kv {

namespace {

void setError(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
}

constexpr float kInt8Max = 127.0f;

/// max |x| over the group; NaN never wins (fmax), so it does not decide a
/// scale. An infinity does: the group's finite values then quantize to 0.
float groupAbsMax(std::span<const float> group) {
  float amax = 0.0f;
  for (float value : group)
    amax = std::fmax(amax, std::fabs(value));
  return amax;
}

/// rne(v) clamped to [-127, 127]; NaN (0 * inf, inf / inf) gives 0, as
/// cvt.rni.sat.s8 does.
int8_t roundToInt8(float value) {
  if (std::isnan(value))
    return 0;
  return int8_t(std::clamp(std::rint(value), -kInt8Max, kInt8Max));
}

} // namespace

bool validateKvShape(std::span<const int64_t> shape, std::string *error) {
  if (shape.size() < 2) {
    setError(error, "a KV tensor needs rank >= 2 (groups run along the last "
                    "axis); got rank " +
                        std::to_string(shape.size()));
    return false;
  }
  int64_t elements = 1;
  for (size_t axis = 0; axis < shape.size(); ++axis) {
    int64_t dim = shape[axis];
    if (dim < 1 || dim > kMaxDimension) {
      setError(error, "dimension " + std::to_string(axis) + " is " +
                          std::to_string(dim) + "; each must be in [1, 2^40]");
      return false;
    }
    if (elements > kMaxElements / dim) {
      setError(error, "the tensor has more than 2^40 elements");
      return false;
    }
    elements *= dim;
  }
  return true;
}

int64_t leadingRows(std::span<const int64_t> shape) {
  int64_t rows = 1;
  for (size_t axis = 0; axis + 1 < shape.size(); ++axis)
    rows *= shape[axis];
  return rows;
}

int64_t elementCount(std::span<const int64_t> shape) {
  return leadingRows(shape) * shape.back();
}

namespace {
/// A valid shape that `input` fills exactly.
bool validateInput(std::span<const float> input, std::span<const int64_t> shape,
                   std::string *error) {
  if (!validateKvShape(shape, error))
    return false;
  if (int64_t(input.size()) == elementCount(shape))
    return true;
  setError(error, "the input has " + std::to_string(input.size()) +
                      " elements; the shape needs " +
                      std::to_string(elementCount(shape)));
  return false;
}
} // namespace

std::string_view scaleConventionName(ScaleConvention convention) {
  return convention == ScaleConvention::Multiplier ? "multiplier" : "divisor";
}

std::optional<ScaleConvention> parseScaleConvention(std::string_view name) {
  if (name == "multiplier")
    return ScaleConvention::Multiplier;
  if (name == "divisor")
    return ScaleConvention::Divisor;
  return std::nullopt;
}

std::vector<int64_t> int8GroupScaleShape(std::span<const int64_t> shape,
                                         int64_t groupSize) {
  std::vector<int64_t> result(shape.begin(), shape.end());
  result.back() = (result.back() + groupSize - 1) / groupSize;
  return result;
}

std::vector<int64_t> Int8GroupTensor::scaleShape() const {
  return int8GroupScaleShape(shape, options.groupSize);
}

std::optional<Int8GroupTensor>
quantizeInt8Groups(std::span<const float> input, std::span<const int64_t> shape,
                   const Int8GroupOptions &options, std::string *error) {
  if (!validateInput(input, shape, error))
    return std::nullopt;
  if (options.groupSize < 1 || options.groupSize > kMaxScaleExtent) {
    setError(error, "group size " + std::to_string(options.groupSize) +
                        " is not in [1, 2^30]");
    return std::nullopt;
  }
  if (!(options.epsilon > 0.0f) || !std::isfinite(options.epsilon)) {
    setError(error, "epsilon must be a finite value > 0");
    return std::nullopt;
  }
  Int8GroupTensor tensor;
  tensor.shape.assign(shape.begin(), shape.end());
  tensor.options = options;
  int64_t rows = leadingRows(shape), dim = shape.back();
  int64_t groups = (dim + options.groupSize - 1) / options.groupSize;
  tensor.codes.resize(input.size());
  tensor.scales.resize(rows * groups);
  for (int64_t row = 0; row < rows; ++row) {
    for (int64_t group = 0; group < groups; ++group) {
      int64_t begin = group * options.groupSize;
      int64_t end = std::min(dim, begin + options.groupSize);
      std::span<const float> values =
          input.subspan(row * dim + begin, end - begin);
      float guarded = std::max(groupAbsMax(values), options.epsilon);
      bool multiplier = options.convention == ScaleConvention::Multiplier;
      float scale = multiplier ? kInt8Max / guarded : guarded / kInt8Max;
      tensor.scales[row * groups + group] = scale;
      for (int64_t col = begin; col < end; ++col) {
        float x = input[row * dim + col];
        tensor.codes[row * dim + col] =
            roundToInt8(multiplier ? x * scale : x / scale);
      }
    }
  }
  return tensor;
}

std::vector<float> dequantizeInt8Groups(const Int8GroupTensor &tensor) {
  int64_t rows = leadingRows(tensor.shape), dim = tensor.shape.back();
  int64_t groupSize = tensor.options.groupSize;
  int64_t groups = (dim + groupSize - 1) / groupSize;
  bool multiplier = tensor.options.convention == ScaleConvention::Multiplier;
  std::vector<float> output(tensor.codes.size());
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t col = 0; col < dim; ++col) {
      float scale = tensor.scales[row * groups + col / groupSize];
      float code = float(tensor.codes[row * dim + col]);
      output[row * dim + col] = multiplier ? code / scale : code * scale;
    }
  return output;
}

std::optional<Fp8KvTensor> quantizeFp8Kv(std::span<const float> input,
                                         std::span<const int64_t> shape,
                                         const Fp8KvOptions &options,
                                         std::span<const float> scales,
                                         std::string *error) {
  if (!validateInput(input, shape, error))
    return std::nullopt;
  if (!options.format.isFloat() || options.format.bits() != 8) {
    setError(error, "an FP8 KV cache needs an 8-bit float format; got " +
                        options.format.name());
    return std::nullopt;
  }
  int rank = int(shape.size());
  if (options.headAxis < -1 || options.headAxis >= rank - 1) {
    setError(error, "the head axis " + std::to_string(options.headAxis) +
                        " is not a leading axis of a rank-" +
                        std::to_string(rank) + " tensor");
    return std::nullopt;
  }
  size_t wantScales =
      options.headAxis < 0 ? 1 : size_t(shape[options.headAxis]);
  if (scales.size() != wantScales) {
    setError(error, "got " + std::to_string(scales.size()) +
                        " scales; this layout needs " +
                        std::to_string(wantScales));
    return std::nullopt;
  }
  for (float scale : scales)
    if (!(scale > 0.0f) || !std::isfinite(scale)) {
      setError(error, "every KV scale must be finite and > 0");
      return std::nullopt;
    }
  // Elements between two steps of the head axis, and the head count.
  int64_t inner = 1, heads = 1;
  if (options.headAxis >= 0) {
    for (int axis = options.headAxis + 1; axis < rank; ++axis)
      inner *= shape[axis];
    heads = shape[options.headAxis];
  }
  Fp8KvTensor tensor{std::vector<int64_t>(shape.begin(), shape.end()), options,
                     std::vector<uint8_t>(input.size()),
                     std::vector<float>(scales.begin(), scales.end())};
  EncodeOptions saturate; // rn, satfinite
  for (size_t index = 0; index < input.size(); ++index) {
    float scale = scales[options.headAxis < 0 ? 0 : (index / inner) % heads];
    tensor.codes[index] =
        uint8_t(encode(options.format, input[index] / scale, saturate));
  }
  return tensor;
}

std::vector<float> dequantizeFp8Kv(const Fp8KvTensor &tensor) {
  int rank = int(tensor.shape.size());
  int64_t inner = 1, heads = 1;
  if (tensor.options.headAxis >= 0) {
    for (int axis = tensor.options.headAxis + 1; axis < rank; ++axis)
      inner *= tensor.shape[axis];
    heads = tensor.shape[tensor.options.headAxis];
  }
  std::vector<float> output(tensor.codes.size());
  for (size_t index = 0; index < output.size(); ++index) {
    float scale =
        tensor
            .scales[tensor.options.headAxis < 0 ? 0 : (index / inner) % heads];
    output[index] =
        tensor.options.format.decodeToFloat(tensor.codes[index]) * scale;
  }
  return output;
}

double meanSquaredError(std::span<const float> exact,
                        std::span<const float> approx) {
  double sum = 0;
  for (size_t index = 0; index < exact.size(); ++index) {
    double difference = double(exact[index]) - double(approx[index]);
    sum += difference * difference;
  }
  return exact.empty() ? 0 : sum / double(exact.size());
}

} // namespace lowbit::kv
