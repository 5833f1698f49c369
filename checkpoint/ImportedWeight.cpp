//===- ImportedWeight.cpp - Shared pieces of the layout importers ---------===//

#include "checkpoint/ImportedWeight.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <utility>

namespace lowbit::checkpoint {

Expected<Checkpoint::Entry> requireTensor(const Checkpoint &checkpoint,
                                          const std::string &name,
                                          std::initializer_list<DType> dtypes,
                                          size_t rank) {
  Expected<Checkpoint::Entry> entry = checkpoint.get(name);
  if (!entry)
    return entry;
  bool dtypeKnown = false;
  std::string expected;
  for (DType dtype : dtypes) {
    dtypeKnown |= entry->info->dtype == dtype;
    expected +=
        (expected.empty() ? "" : " or ") + std::string(dtypeName(dtype));
  }
  if (!dtypeKnown)
    return makeError(ErrorCode::InvalidArgument,
                     "tensor '" + name + "' is " +
                         std::string(dtypeName(entry->info->dtype)) +
                         ", expected " + expected);
  if (entry->info->shape.size() != rank)
    return makeError(ErrorCode::InvalidArgument,
                     "tensor '" + name + "' has rank " +
                         std::to_string(entry->info->shape.size()) +
                         ", expected " + std::to_string(rank));
  return entry;
}

Expected<Shape2D> unpackedShape(const TensorInfo &packed, int64_t rowFactor,
                                int64_t colFactor) {
  auto tooLarge = [&] {
    return makeError(ErrorCode::InvalidArgument,
                     "tensor '" + packed.name +
                         "': its shape is empty or past lowbit's bounds");
  };
  if (packed.shape.size() != 2)
    return tooLarge();
  for (int64_t extent : packed.shape)
    if (extent < 1 || extent > kMaxDimension)
      return tooLarge();
  Shape2D shape{packed.shape[0] * rowFactor, packed.shape[1] * colFactor};
  std::string error;
  if (!validateShape(shape.rows, shape.cols, &error))
    return makeError(ErrorCode::InvalidArgument,
                     "tensor '" + packed.name + "': " + error);
  return shape;
}

uint32_t loadWord(std::span<const std::byte> bytes, size_t index) {
  uint32_t word = 0;
  std::memcpy(&word, bytes.data() + 4 * index, 4);
  return word;
}

void storeWord(std::vector<std::byte> &bytes, size_t index, uint32_t word) {
  std::memcpy(bytes.data() + 4 * index, &word, 4);
}

void orWord(std::vector<std::byte> &bytes, size_t index, uint32_t fields) {
  storeWord(bytes, index, loadWord(bytes, index) | fields);
}

uint16_t loadHalf(std::span<const std::byte> bytes, size_t index) {
  uint16_t half = 0;
  std::memcpy(&half, bytes.data() + 2 * index, 2);
  return half;
}

QuantizedTensor emptyTensor(const Scheme &scheme, int64_t n, int64_t k) {
  QuantizedTensor tensor(scheme);
  tensor.rows = n;
  tensor.cols = k;
  Shape2D codes = codesShape(scheme, n, k);
  Shape2D scales = scaleShape(scheme, n, k);
  tensor.codes.assign(size_t(codes.rows * codes.cols), 0);
  tensor.scaleCodes.assign(size_t(scales.rows * scales.cols), 0);
  if (scheme.scale.zeroPoint)
    tensor.zeros.assign(size_t(scales.rows * scales.cols), 0);
  return tensor;
}

Expected<std::vector<int32_t>>
inputOrderFromGroupIndex(std::span<const std::byte> gIdx, int64_t k,
                         int64_t groupSize, const std::string &tensorName) {
  int64_t groups = (k + groupSize - 1) / groupSize;
  std::vector<int32_t> group(static_cast<size_t>(k));
  bool identity = true;
  for (int64_t channel = 0; channel < k; ++channel) {
    int32_t value = int32_t(loadWord(gIdx, size_t(channel)));
    if (value < 0 || value >= groups)
      return makeError(ErrorCode::InvalidArgument,
                       "'" + tensorName + "'[" + std::to_string(channel) +
                           "] = " + std::to_string(value) +
                           " is not a group (0.." + std::to_string(groups - 1) +
                           ")");
    group[size_t(channel)] = value;
    identity &= value == channel / groupSize;
  }
  if (identity)
    return std::vector<int32_t>{};
  std::vector<int32_t> order(static_cast<size_t>(k));
  std::iota(order.begin(), order.end(), 0);
  // A stable sort by group: std::sort on (group, channel). Not
  // std::stable_sort, whose libstdc++ 12 buffer (get_temporary_buffer) is
  // deprecated under clang 22's C++20, which fails the sanitizer build.
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return std::pair(group[size_t(a)], a) < std::pair(group[size_t(b)], b);
  });
  for (int64_t column = 0; column < k; ++column)
    if (group[size_t(order[size_t(column)])] != column / groupSize)
      return makeError(ErrorCode::InvalidArgument,
                       "'" + tensorName + "' does not put " +
                           std::to_string(groupSize) +
                           " channels in each group (group " +
                           std::to_string(column / groupSize) +
                           "), which lowbit's groups need");
  return order;
}

std::vector<int64_t> columnOfChannel(const ImportedWeight &weight) {
  int64_t k = weight.tensor.cols;
  std::vector<int64_t> columnOf(static_cast<size_t>(k));
  for (int64_t column = 0; column < k; ++column)
    columnOf[size_t(weight.inputOrder.empty()
                        ? column
                        : weight.inputOrder[size_t(column)])] = column;
  return columnOf;
}

void setCode(QuantizedTensor &tensor, int64_t row, int64_t col, uint8_t code) {
  CodePosition position = codePosition(tensor.scheme, tensor.cols, row, col);
  uint8_t &byte = tensor.codes[size_t(position.byte)];
  if (!isNibblePacked(tensor.scheme.packing)) {
    byte = code;
    return;
  }
  uint8_t mask = uint8_t(0xF << position.shift);
  byte = uint8_t((byte & ~mask) | ((code & 0xF) << position.shift));
}

Expected<Scheme> integerGroupScheme(int bits, bool zeroPoint, int64_t groupSize,
                                    ScaleType scaleType) {
  if (bits != 4 && bits != 8)
    return makeError(ErrorCode::Unsupported,
                     std::to_string(bits) +
                         "-bit codes: lowbit packs integer codes of 4 or 8 "
                         "bits");
  std::string elementName = (zeroPoint ? "uint" : "int") + std::to_string(bits);
  std::optional<Format> element = lookupFormat(elementName);
  if (!element)
    return makeError(ErrorCode::Unsupported, "no format " + elementName);
  Scheme scheme{"", *element, ScaleSpec{},
                bits == 4 ? Packing::Nibble : Packing::Byte};
  scheme.scale.granularity = Granularity::Group;
  scheme.scale.axis = 1;
  std::string error;
  std::optional<int> extent =
      scaleExtentFromInt64("the group size", groupSize, &error);
  if (!extent)
    return makeError(ErrorCode::InvalidArgument, error);
  scheme.scale.groupSize = *extent;
  scheme.scale.allowTail = true;
  scheme.scale.type = scaleType;
  scheme.scale.rule = zeroPoint ? ScaleRule::MinMax : ScaleRule::AbsMax;
  scheme.scale.zeroPoint = zeroPoint;
  if (!validateScheme(scheme, &error))
    return makeError(ErrorCode::InvalidArgument, error);
  if (const Scheme *named = findNamedScheme(scheme))
    scheme.name = named->name;
  return scheme;
}

Expected<Scheme> schemeOfScales(const Checkpoint &checkpoint,
                                const std::string &scalesName, int bits,
                                bool zeroPoint, int64_t groupSize) {
  Expected<Checkpoint::Entry> scales = checkpoint.get(scalesName);
  if (!scales)
    return std::move(scales).takeError();
  Expected<ScaleType> scaleType = scaleTypeOf(scales->info->dtype, scalesName);
  if (!scaleType)
    return std::move(scaleType).takeError();
  return integerGroupScheme(bits, zeroPoint, groupSize, *scaleType);
}

Expected<ScaleType> scaleTypeOf(DType dtype, std::string_view tensorName) {
  switch (dtype) {
  case DType::F16:
    return ScaleType::F16;
  case DType::BF16:
    return ScaleType::BF16;
  case DType::F32:
    return ScaleType::F32;
  default:
    return makeError(ErrorCode::Unsupported,
                     "scales '" + std::string(tensorName) + "' are " +
                         std::string(dtypeName(dtype)) +
                         "; lowbit imports F16, BF16 or F32 scales here");
  }
}

Expected<DType> scaleDType(ScaleType type) {
  switch (type) {
  case ScaleType::F16:
    return DType::F16;
  case ScaleType::BF16:
    return DType::BF16;
  case ScaleType::F32:
    return DType::F32;
  default:
    return makeError(ErrorCode::Unsupported,
                     "scales of type " + std::string(scaleTypeName(type)) +
                         " have no place in this layout");
  }
}

uint32_t loadScaleCode(std::span<const std::byte> bytes, DType dtype,
                       size_t index) {
  return dtype == DType::F32 ? loadWord(bytes, index) : loadHalf(bytes, index);
}

void storeScaleCode(std::vector<std::byte> &bytes, DType dtype, size_t index,
                    uint32_t code) {
  if (dtype == DType::F32) {
    storeWord(bytes, index, code);
    return;
  }
  uint16_t half = uint16_t(code);
  std::memcpy(bytes.data() + 2 * index, &half, 2);
}

Status checkImported(const QuantizedTensor &tensor, std::string_view layout) {
  std::string error;
  if (!validateQuantized(tensor, &error))
    return makeError(ErrorCode::InvalidArgument,
                     std::string(layout) + ": " + error);
  return Status::success();
}

} // namespace lowbit::checkpoint
