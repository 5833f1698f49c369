//===- CompressedTensors.cpp - compressed-tensors' pack-quantized ---------===//

#include "checkpoint/CompressedTensors.h"

#include <cstring>

namespace lowbit::checkpoint {

namespace {

Error invalid(std::string message) {
  return makeError(ErrorCode::InvalidArgument, std::move(message));
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// [N, K] from weight_shape (I64 or I32 [2]).
Expected<std::pair<int64_t, int64_t>>
readWeightShape(const Checkpoint &checkpoint, const std::string &prefix) {
  Expected<Checkpoint::Entry> shape = requireTensor(
      checkpoint, prefix + ".weight_shape", {DType::I64, DType::I32}, 1);
  if (!shape)
    return std::move(shape).takeError();
  if (shape->info->shape[0] != 2)
    return invalid("'" + prefix + ".weight_shape' should hold [N, K]");
  std::span<const std::byte> bytes = shape->data();
  int64_t extents[2];
  for (size_t i = 0; i < 2; ++i)
    extents[i] = shape->info->dtype == DType::I64
                     ? int64_t(uint64_t(loadWord(bytes, 2 * i)) |
                               uint64_t(loadWord(bytes, 2 * i + 1)) << 32)
                     : int64_t(int32_t(loadWord(bytes, i)));
  std::string error;
  if (!validateShape(extents[0], extents[1], &error))
    return invalid("'" + prefix + ".weight_shape': " + error);
  return std::pair{extents[0], extents[1]};
}

} // namespace

Expected<ImportedWeight>
importPackQuantized(const Checkpoint &checkpoint, const std::string &prefix,
                    const PackQuantizedConfig &config) {
  Expected<std::pair<int64_t, int64_t>> shape =
      readWeightShape(checkpoint, prefix);
  if (!shape)
    return std::move(shape).takeError();
  auto [n, k] = *shape;
  int64_t groupSize = config.groupSize == -1 ? k : config.groupSize;
  const Checkpoint::Entry *zeroPoint =
      checkpoint.find(prefix + ".weight_zero_point");
  Expected<Scheme> scheme =
      schemeOfScales(checkpoint, prefix + ".weight_scale", config.bits,
                     zeroPoint != nullptr, groupSize);
  if (!scheme)
    return std::move(scheme).takeError();
  Expected<Checkpoint::Entry> scales =
      requireTensor(checkpoint, prefix + ".weight_scale",
                    {DType::F16, DType::BF16, DType::F32}, 2);
  if (!scales)
    return std::move(scales).takeError();

  WordPacking packing{config.bits, kInOrder};
  int64_t groups = ceilDiv(k, groupSize);
  int64_t wordsPerRow = ceilDiv(k, packing.perWord());
  Expected<Checkpoint::Entry> packed =
      requireTensor(checkpoint, prefix + ".weight_packed", {DType::I32}, 2);
  if (!packed)
    return std::move(packed).takeError();
  auto shapeText = [](const std::vector<int64_t> &extents) {
    return "[" + std::to_string(extents[0]) + ", " +
           std::to_string(extents[1]) + "]";
  };
  if (packed->info->shape != std::vector<int64_t>{n, wordsPerRow} ||
      scales->info->shape != std::vector<int64_t>{n, groups})
    return invalid(
        "'" + prefix + "': weight_packed " + shapeText(packed->info->shape) +
        " and weight_scale " + shapeText(scales->info->shape) + " should be " +
        shapeText({n, wordsPerRow}) + " and " + shapeText({n, groups}) +
        " for weight_shape " + shapeText({n, k}));

  ImportedWeight weight{emptyTensor(*scheme, n, k), {}};
  QuantizedTensor &tensor = weight.tensor;
  // Activation ordering: weight_g_idx, as GPTQ's g_idx.
  if (const Checkpoint::Entry *gIdx =
          checkpoint.find(prefix + ".weight_g_idx")) {
    if (gIdx->info->dtype != DType::I32 ||
        gIdx->info->shape != std::vector<int64_t>{k})
      return invalid("'" + prefix + ".weight_g_idx' should be I32 [" +
                     std::to_string(k) + "]");
    Expected<std::vector<int32_t>> order = inputOrderFromGroupIndex(
        gIdx->data(), k, groupSize, prefix + ".weight_g_idx");
    if (!order)
      return std::move(order).takeError();
    weight.inputOrder = std::move(*order);
  }
  // Symmetric: lowbit's two's complement code is the offset field with
  // its top bit flipped; asymmetric: the offset field is the unsigned code.
  uint32_t flip = zeroPoint ? 0 : uint32_t(1) << (config.bits - 1);
  std::span<const std::byte> words = packed->data();
  for (int64_t row = 0; row < n; ++row)
    for (int64_t column = 0; column < k; ++column) {
      int64_t channel = weight.inputOrder.empty()
                            ? column
                            : weight.inputOrder[size_t(column)];
      uint32_t word = loadWord(
          words, size_t(row * wordsPerRow + channel / packing.perWord()));
      setCode(tensor, row, column,
              uint8_t(packing.field(word, channel) ^ flip));
    }
  std::span<const std::byte> scaleBytes = scales->data();
  for (size_t index = 0; index < tensor.scaleCodes.size(); ++index)
    tensor.scaleCodes[index] =
        loadScaleCode(scaleBytes, scales->info->dtype, index);

  if (zeroPoint) {
    int64_t zeroRows = ceilDiv(n, packing.perWord());
    if (zeroPoint->info->dtype != DType::I32 ||
        zeroPoint->info->shape != std::vector<int64_t>{zeroRows, groups})
      return invalid("'" + prefix + "': weight_zero_point should be I32 " +
                     shapeText({zeroRows, groups}) + " (packed along N)");
    std::span<const std::byte> zeroWords = zeroPoint->data();
    for (int64_t row = 0; row < n; ++row)
      for (int64_t group = 0; group < groups; ++group)
        tensor.zeros[size_t(row * groups + group)] = uint8_t(packing.field(
            loadWord(zeroWords,
                     size_t((row / packing.perWord()) * groups + group)),
            row));
  }
  if (Status status = checkImported(tensor, "compressed-tensors"); !status)
    return std::move(status).takeError();
  return weight;
}

Expected<std::vector<OwnedTensor>>
exportPackQuantized(const ImportedWeight &weight, const std::string &prefix) {
  const QuantizedTensor &tensor = weight.tensor;
  const Scheme &scheme = tensor.scheme;
  int bits = scheme.element.bits();
  Expected<Scheme> expected = integerGroupScheme(
      bits, scheme.scale.zeroPoint, scheme.scale.groupSize, scheme.scale.type);
  if (!expected)
    return std::move(expected).takeError();
  if (!(scheme == *expected))
    return invalid("pack-quantized holds 4- or 8-bit integer codes (signed, "
                   "or unsigned with zero points) with F16/BF16/F32 scales in "
                   "groups along K; this weight's scheme is another");
  if (!weight.inputOrder.empty() &&
      weight.inputOrder.size() != size_t(tensor.cols))
    return invalid("the input order has " +
                   std::to_string(weight.inputOrder.size()) +
                   " entries for K = " + std::to_string(tensor.cols));
  if (Status status = checkImported(tensor, "compressed-tensors"); !status)
    return std::move(status).takeError();
  Expected<DType> scaleType = scaleDType(scheme.scale.type);
  if (!scaleType)
    return std::move(scaleType).takeError();

  WordPacking packing{bits, kInOrder};
  int64_t n = tensor.rows, k = tensor.cols;
  int64_t groups = scaleShape(scheme, n, k).cols;
  int64_t wordsPerRow = ceilDiv(k, packing.perWord());
  uint32_t flip = scheme.scale.zeroPoint ? 0 : uint32_t(1) << (bits - 1);
  std::vector<OwnedTensor> out;
  OwnedTensor packed{
      prefix + ".weight_packed", DType::I32, {n, wordsPerRow}, {}};
  packed.bytes.assign(size_t(n * wordsPerRow * 4), std::byte{0});
  // The file is in channel order (weight_g_idx says each one's group).
  std::vector<int64_t> columnOf = columnOfChannel(weight);
  if (weight.inputOrder.empty() && k % packing.perWord() == 0) {
    // Rows of whole words in channel order: the little-endian words' bytes
    // are lowbit's packed codes (element 0 in the low field) with each
    // field's top bit flipped when signed, the loop below's result.
    std::memcpy(packed.bytes.data(), tensor.codes.data(), tensor.codes.size());
    std::byte flipped{uint8_t(flip ? (bits == 4 ? 0x88 : 0x80) : 0)};
    for (std::byte &byte : packed.bytes)
      byte ^= flipped;
  } else {
    for (int64_t row = 0; row < n; ++row)
      for (int64_t channel = 0; channel < k; ++channel) {
        size_t word = size_t(row * wordsPerRow + channel / packing.perWord());
        orWord(
            packed.bytes, word,
            packing.place(codeAt(tensor, row, columnOf[size_t(channel)]) ^ flip,
                          channel));
      }
  }
  out.push_back(std::move(packed));
  if (!weight.inputOrder.empty()) {
    OwnedTensor gIdx{prefix + ".weight_g_idx", DType::I32, {k}, {}};
    gIdx.bytes.assign(size_t(k * 4), std::byte{0});
    for (int64_t channel = 0; channel < k; ++channel)
      storeWord(gIdx.bytes, size_t(channel),
                uint32_t(columnOf[size_t(channel)] / scheme.scale.groupSize));
    out.push_back(std::move(gIdx));
  }

  OwnedTensor scales{prefix + ".weight_scale", *scaleType, {n, groups}, {}};
  scales.bytes.assign(size_t(n * groups * dtypeBits(*scaleType) / 8),
                      std::byte{0});
  for (size_t index = 0; index < tensor.scaleCodes.size(); ++index)
    storeScaleCode(scales.bytes, *scaleType, index, tensor.scaleCodes[index]);
  out.push_back(std::move(scales));

  if (scheme.scale.zeroPoint) {
    int64_t zeroRows = ceilDiv(n, packing.perWord());
    OwnedTensor zeros{
        prefix + ".weight_zero_point", DType::I32, {zeroRows, groups}, {}};
    zeros.bytes.assign(size_t(zeroRows * groups * 4), std::byte{0});
    for (int64_t row = 0; row < n; ++row)
      for (int64_t group = 0; group < groups; ++group) {
        size_t word = size_t((row / packing.perWord()) * groups + group);
        storeWord(
            zeros.bytes, word,
            loadWord(zeros.bytes, word) |
                packing.place(tensor.zeros[size_t(row * groups + group)], row));
      }
    out.push_back(std::move(zeros));
  }

  OwnedTensor shape{prefix + ".weight_shape", DType::I64, {2}, {}};
  shape.bytes.assign(16, std::byte{0});
  storeWord(shape.bytes, 0, uint32_t(n));
  storeWord(shape.bytes, 1, uint32_t(uint64_t(n) >> 32));
  storeWord(shape.bytes, 2, uint32_t(k));
  storeWord(shape.bytes, 3, uint32_t(uint64_t(k) >> 32));
  out.push_back(std::move(shape));
  return out;
}

Expected<Scheme> floatQuantizedScheme(const FloatQuantizedConfig &config,
                                      ScaleType scaleType) {
  using Strategy = FloatQuantizedConfig::Strategy;
  Scheme scheme{"", *lookupFormat("e4m3"), ScaleSpec{}, Packing::Byte};
  scheme.scale.type = scaleType;
  if (config.strategy == Strategy::Channel) {
    scheme.scale.granularity = Granularity::PerChannel;
    scheme.scale.axis = 0;
  } else if (config.strategy == Strategy::Block) {
    scheme.scale.granularity = Granularity::Block;
    scheme.scale.blockRows = config.blockRows;
    scheme.scale.blockCols = config.blockCols;
    scheme.scale.allowTail = true;
  }
  std::string error;
  if (!validateScheme(scheme, &error))
    return invalid("float-quantized: " + error);
  if (const Scheme *named = findNamedScheme(scheme))
    scheme.name = named->name;
  return scheme;
}

Expected<ImportedWeight>
importFloatQuantized(const Checkpoint &checkpoint, const std::string &prefix,
                     const FloatQuantizedConfig &config) {
  Expected<Checkpoint::Entry> codes =
      requireTensor(checkpoint, prefix + ".weight", {DType::F8_E4M3}, 2);
  if (!codes)
    return std::move(codes).takeError();
  Expected<Checkpoint::Entry> scales = checkpoint.get(prefix + ".weight_scale");
  if (!scales)
    return std::move(scales).takeError();
  Expected<ScaleType> scaleType =
      scaleTypeOf(scales->info->dtype, prefix + ".weight_scale");
  if (!scaleType)
    return std::move(scaleType).takeError();
  Expected<Scheme> scheme = floatQuantizedScheme(config, *scaleType);
  if (!scheme)
    return std::move(scheme).takeError();
  Expected<Shape2D> extents = unpackedShape(*codes->info, 1, 1);
  if (!extents)
    return std::move(extents).takeError();
  int64_t n = extents->rows, k = extents->cols;
  Shape2D grid = scaleShape(*scheme, n, k);
  // A per-tensor scale may be stored [1] or 0-d; the others are 2-D.
  bool perTensorShape = grid.rows == 1 && grid.cols == 1 &&
                        scales->info->elementCount() == 1 &&
                        scales->info->shape.size() <= 1;
  if (!perTensorShape &&
      scales->info->shape != std::vector<int64_t>{grid.rows, grid.cols})
    return invalid("float-quantized '" + prefix +
                   "': weight_scale should be [" + std::to_string(grid.rows) +
                   ", " + std::to_string(grid.cols) + "] for weight [" +
                   std::to_string(n) + ", " + std::to_string(k) + "]");
  ImportedWeight weight{emptyTensor(*scheme, n, k), {}};
  std::span<const std::byte> codeBytes = codes->data();
  std::memcpy(weight.tensor.codes.data(), codeBytes.data(), codeBytes.size());
  std::span<const std::byte> scaleBytes = scales->data();
  for (size_t index = 0; index < weight.tensor.scaleCodes.size(); ++index)
    weight.tensor.scaleCodes[index] =
        loadScaleCode(scaleBytes, scales->info->dtype, index);
  if (Status status = checkImported(weight.tensor, "float-quantized"); !status)
    return std::move(status).takeError();
  return weight;
}

Expected<std::vector<OwnedTensor>>
exportFloatQuantized(const ImportedWeight &weight, const std::string &prefix) {
  const QuantizedTensor &tensor = weight.tensor;
  const Scheme &scheme = tensor.scheme;
  using Strategy = FloatQuantizedConfig::Strategy;
  FloatQuantizedConfig config;
  if (scheme.scale.granularity == Granularity::PerChannel)
    config.strategy = Strategy::Channel;
  else if (scheme.scale.granularity == Granularity::Block)
    config = {Strategy::Block, scheme.scale.blockRows, scheme.scale.blockCols};
  Expected<Scheme> expected = floatQuantizedScheme(config, scheme.scale.type);
  if (!expected || !(scheme == *expected) || !weight.inputOrder.empty())
    return invalid("float-quantized holds e4m3 codes with F32/BF16/F16 "
                   "scales per tensor, per output channel or per block; this "
                   "weight's scheme is another");
  if (Status status = checkImported(tensor, "float-quantized"); !status)
    return std::move(status).takeError();
  Expected<DType> scaleType = scaleDType(scheme.scale.type);
  if (!scaleType)
    return std::move(scaleType).takeError();
  Shape2D grid = scaleShape(scheme, tensor.rows, tensor.cols);
  std::vector<OwnedTensor> out;
  OwnedTensor codes{
      prefix + ".weight", DType::F8_E4M3, {tensor.rows, tensor.cols}, {}};
  codes.bytes.resize(tensor.codes.size());
  std::memcpy(codes.bytes.data(), tensor.codes.data(), tensor.codes.size());
  out.push_back(std::move(codes));
  OwnedTensor scales{prefix + ".weight_scale",
                     *scaleType,
                     config.strategy == Strategy::Tensor
                         ? std::vector<int64_t>{1}
                         : std::vector<int64_t>{grid.rows, grid.cols},
                     {}};
  scales.bytes.assign(tensor.scaleCodes.size() * size_t(dtypeBits(*scaleType)) /
                          8,
                      std::byte{0});
  for (size_t index = 0; index < tensor.scaleCodes.size(); ++index)
    storeScaleCode(scales.bytes, *scaleType, index, tensor.scaleCodes[index]);
  out.push_back(std::move(scales));
  return out;
}

} // namespace lowbit::checkpoint
