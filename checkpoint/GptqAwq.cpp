//===- GptqAwq.cpp - GPTQ and AWQ int32-packed weights --------------------===//

#include "checkpoint/GptqAwq.h"

#include <algorithm>
#include <array>

namespace lowbit::checkpoint {

namespace {

Error invalid(std::string message) {
  return makeError(ErrorCode::InvalidArgument, std::move(message));
}

/// The layouts' shared part: qzeros [G, N/pf] packed along N and scales
/// [G, N], read into the tensor's [N, G] zero points and scales. A stored
/// zero plus `zeroOffset` is the zero (GPTQ v1: 1).
Status importGroups(const Checkpoint &checkpoint, const std::string &prefix,
                    const WordPacking &packing, int zeroOffset,
                    QuantizedTensor &tensor, int64_t groups,
                    std::string_view layout) {
  int64_t n = tensor.rows;
  Expected<Checkpoint::Entry> scales = requireTensor(
      checkpoint, prefix + ".scales", {DType::F16, DType::BF16, DType::F32}, 2);
  Expected<Checkpoint::Entry> qzeros =
      requireTensor(checkpoint, prefix + ".qzeros", {DType::I32}, 2);
  if (!scales)
    return std::move(scales).takeError();
  if (!qzeros)
    return std::move(qzeros).takeError();
  if (scales->info->shape != std::vector<int64_t>{groups, n} ||
      qzeros->info->shape !=
          std::vector<int64_t>{groups, n / packing.perWord()})
    return invalid(std::string(layout) + " '" + prefix + "': scales [" +
                   std::to_string(scales->info->shape[0]) + ", " +
                   std::to_string(scales->info->shape[1]) + "] and qzeros [" +
                   std::to_string(qzeros->info->shape[0]) + ", " +
                   std::to_string(qzeros->info->shape[1]) + "] should be [" +
                   std::to_string(groups) + ", " + std::to_string(n) +
                   "] and [" + std::to_string(groups) + ", " +
                   std::to_string(n / packing.perWord()) + "]");
  DType scaleDTypeStored = scales->info->dtype;
  std::span<const std::byte> zeroWords = qzeros->data();
  std::span<const std::byte> scaleBytes = scales->data();
  for (int64_t group = 0; group < groups; ++group)
    for (int64_t row = 0; row < n; ++row) {
      size_t index = size_t(row * groups + group);
      uint32_t stored = packing.field(
          loadWord(zeroWords, size_t(group * (n / packing.perWord()) +
                                     row / packing.perWord())),
          row);
      uint32_t zero = stored + uint32_t(zeroOffset);
      if (zero > packing.mask())
        return invalid(std::string(layout) + " '" + prefix + "': zero point " +
                       std::to_string(zero) + " (stored " +
                       std::to_string(stored) + ") of group " +
                       std::to_string(group) + ", output " +
                       std::to_string(row) + " is outside 0.." +
                       std::to_string(packing.mask()) +
                       ": lowbit's unsigned codes cannot hold it");
      tensor.zeros[index] = uint8_t(zero);
      tensor.scaleCodes[index] =
          loadScaleCode(scaleBytes, scaleDTypeStored, size_t(group * n + row));
    }
  return Status::success();
}

/// Before a word's field count (32 / bits) is used: 4 or 8.
Status checkBits(int bits) {
  if (bits == 4 || bits == 8)
    return Status::success();
  return makeError(ErrorCode::Unsupported,
                   "GPTQ with " + std::to_string(bits) +
                       "-bit codes: lowbit packs integer codes of 4 or 8 bits");
}

/// Checks that `weight` has the integer group scheme a layout stores.
Status checkExportable(const ImportedWeight &weight, int bits,
                       std::string_view layout) {
  const QuantizedTensor &tensor = weight.tensor;
  Expected<Scheme> expected = integerGroupScheme(
      bits, true, tensor.scheme.scale.groupSize, tensor.scheme.scale.type);
  if (!expected)
    return std::move(expected).takeError();
  if (!(tensor.scheme == *expected))
    return invalid(std::string(layout) + " holds " + std::to_string(bits) +
                   "-bit unsigned codes with zero points and F16/BF16/F32 "
                   "scales in groups along K; this weight's scheme is "
                   "another");
  if (!weight.inputOrder.empty() &&
      weight.inputOrder.size() != size_t(tensor.cols))
    return invalid("the input order has " +
                   std::to_string(weight.inputOrder.size()) +
                   " entries for K = " + std::to_string(tensor.cols));
  return checkImported(tensor, layout);
}

/// qzeros and scales of an exported layout; zeros are stored minus
/// `zeroOffset`.
Expected<std::vector<OwnedTensor>> exportGroups(const QuantizedTensor &tensor,
                                                const std::string &prefix,
                                                const WordPacking &packing,
                                                int zeroOffset,
                                                std::string_view layout) {
  int64_t n = tensor.rows;
  int64_t groups = scaleShape(tensor.scheme, tensor.rows, tensor.cols).cols;
  Expected<DType> scaleType = scaleDType(tensor.scheme.scale.type);
  if (!scaleType)
    return std::move(scaleType).takeError();
  OwnedTensor qzeros{
      prefix + ".qzeros", DType::I32, {groups, n / packing.perWord()}, {}};
  OwnedTensor scales{prefix + ".scales", *scaleType, {groups, n}, {}};
  qzeros.bytes.assign(size_t(groups * (n / packing.perWord()) * 4),
                      std::byte{0});
  scales.bytes.assign(size_t(groups * n * dtypeBits(*scaleType) / 8),
                      std::byte{0});
  for (int64_t group = 0; group < groups; ++group)
    for (int64_t row = 0; row < n; ++row) {
      size_t index = size_t(row * groups + group);
      int zero = tensor.zeros[index];
      if (zero < zeroOffset)
        return invalid(std::string(layout) + " stores zero - " +
                       std::to_string(zeroOffset) + ": the zero point " +
                       std::to_string(zero) + " of group " +
                       std::to_string(group) + ", output " +
                       std::to_string(row) +
                       " would read back as another (use gptq_v2)");
      size_t word =
          size_t(group * (n / packing.perWord()) + row / packing.perWord());
      orWord(qzeros.bytes, word,
             packing.place(uint32_t(zero - zeroOffset), row));
      storeScaleCode(scales.bytes, *scaleType, size_t(group * n + row),
                     tensor.scaleCodes[index]);
    }
  std::vector<OwnedTensor> out;
  out.push_back(std::move(qzeros));
  out.push_back(std::move(scales));
  return out;
}

} // namespace

Expected<ImportedWeight> importGptq(const Checkpoint &checkpoint,
                                    const std::string &prefix,
                                    const GptqConfig &config) {
  if (Status status = checkBits(config.bits); !status)
    return std::move(status).takeError();
  WordPacking packing{config.bits, kInOrder};
  Expected<Checkpoint::Entry> qweight =
      requireTensor(checkpoint, prefix + ".qweight", {DType::I32}, 2);
  if (!qweight)
    return std::move(qweight).takeError();
  Expected<Shape2D> extents =
      unpackedShape(*qweight->info, packing.perWord(), 1);
  if (!extents)
    return std::move(extents).takeError();
  int64_t k = extents->rows, n = extents->cols;
  int64_t groupSize = config.groupSize == -1 ? k : config.groupSize;
  if (groupSize <= 0 || n % packing.perWord() != 0)
    return invalid("GPTQ '" + prefix + "': group size " +
                   std::to_string(config.groupSize) +
                   " or N = " + std::to_string(n) + " does not fit the layout");
  Expected<Scheme> scheme = schemeOfScales(checkpoint, prefix + ".scales",
                                           config.bits, true, groupSize);
  if (!scheme)
    return std::move(scheme).takeError();
  int64_t groups = (k + groupSize - 1) / groupSize;

  ImportedWeight weight{emptyTensor(*scheme, n, k), {}};
  if (Status status =
          importGroups(checkpoint, prefix, packing,
                       config.zeroFormat == GptqZeroFormat::V1 ? 1 : 0,
                       weight.tensor, groups, "GPTQ");
      !status)
    return std::move(status).takeError();

  if (const Checkpoint::Entry *gIdx = checkpoint.find(prefix + ".g_idx")) {
    if (gIdx->info->dtype != DType::I32 ||
        gIdx->info->shape != std::vector<int64_t>{k})
      return invalid("GPTQ '" + prefix + "': g_idx should be I32 [" +
                     std::to_string(k) + "]");
    Expected<std::vector<int32_t>> order =
        inputOrderFromGroupIndex(gIdx->data(), k, groupSize, prefix + ".g_idx");
    if (!order)
      return std::move(order).takeError();
    weight.inputOrder = std::move(*order);
  }
  std::span<const std::byte> words = qweight->data();
  for (int64_t column = 0; column < k; ++column) {
    int64_t channel =
        weight.inputOrder.empty() ? column : weight.inputOrder[size_t(column)];
    for (int64_t row = 0; row < n; ++row)
      setCode(
          weight.tensor, row, column,
          uint8_t(packing.field(
              loadWord(words, size_t((channel / packing.perWord()) * n + row)),
              channel)));
  }
  if (Status status = checkImported(weight.tensor, "GPTQ"); !status)
    return std::move(status).takeError();
  return weight;
}

Expected<std::vector<OwnedTensor>> exportGptq(const ImportedWeight &weight,
                                              const std::string &prefix,
                                              const GptqConfig &config) {
  if (Status status = checkBits(config.bits); !status)
    return std::move(status).takeError();
  if (Status status = checkExportable(weight, config.bits, "GPTQ"); !status)
    return std::move(status).takeError();
  const QuantizedTensor &tensor = weight.tensor;
  WordPacking packing{config.bits, kInOrder};
  int64_t n = tensor.rows, k = tensor.cols;
  int64_t groupSize = tensor.scheme.scale.groupSize;
  if ((config.groupSize == -1 ? k : config.groupSize) != groupSize)
    return invalid("GPTQ: the config's group size " +
                   std::to_string(config.groupSize) + " is not the weight's " +
                   std::to_string(groupSize));
  if (k % packing.perWord() != 0 || n % packing.perWord() != 0)
    return invalid("GPTQ packs " + std::to_string(packing.perWord()) +
                   " codes a word: K = " + std::to_string(k) +
                   " and N = " + std::to_string(n) + " must be multiples");

  Expected<std::vector<OwnedTensor>> out =
      exportGroups(tensor, prefix, packing,
                   config.zeroFormat == GptqZeroFormat::V1 ? 1 : 0, "GPTQ v1");
  if (!out)
    return out;
  // Column c of the tensor is input channel order[c]; the file is in
  // channel order, with g_idx[channel] = the group of its column.
  std::vector<int64_t> columnOf = columnOfChannel(weight);
  OwnedTensor qweight{
      prefix + ".qweight", DType::I32, {k / packing.perWord(), n}, {}};
  OwnedTensor gIdx{prefix + ".g_idx", DType::I32, {k}, {}};
  qweight.bytes.assign(size_t(k * n / packing.perWord() * 4), std::byte{0});
  gIdx.bytes.assign(size_t(k * 4), std::byte{0});
  for (int64_t channel = 0; channel < k; ++channel) {
    int64_t column = columnOf[size_t(channel)];
    storeWord(gIdx.bytes, size_t(channel), uint32_t(column / groupSize));
    for (int64_t row = 0; row < n; ++row) {
      size_t word = size_t((channel / packing.perWord()) * n + row);
      orWord(qweight.bytes, word,
             packing.place(codeAt(tensor, row, column), channel));
    }
  }
  out->insert(out->begin(), std::move(qweight));
  out->push_back(std::move(gIdx));
  return out;
}

Expected<ImportedWeight> importAwq(const Checkpoint &checkpoint,
                                   const std::string &prefix, int groupSize) {
  WordPacking packing{4, kAwqPosition};
  Expected<Checkpoint::Entry> qweight =
      requireTensor(checkpoint, prefix + ".qweight", {DType::I32}, 2);
  if (!qweight)
    return std::move(qweight).takeError();
  Expected<Shape2D> extents =
      unpackedShape(*qweight->info, 1, packing.perWord());
  if (!extents)
    return std::move(extents).takeError();
  int64_t k = extents->rows, n = extents->cols;
  if (groupSize <= 0)
    return invalid("AWQ '" + prefix + "': group size " +
                   std::to_string(groupSize) + " is not positive");
  Expected<Scheme> scheme =
      schemeOfScales(checkpoint, prefix + ".scales", 4, true, groupSize);
  if (!scheme)
    return std::move(scheme).takeError();
  int64_t groups = (k + groupSize - 1) / groupSize;
  ImportedWeight weight{emptyTensor(*scheme, n, k), {}};
  if (Status status = importGroups(checkpoint, prefix, packing, 0,
                                   weight.tensor, groups, "AWQ");
      !status)
    return std::move(status).takeError();
  std::span<const std::byte> words = qweight->data();
  int64_t wordsPerRow = n / packing.perWord();
  for (int64_t column = 0; column < k; ++column)
    for (int64_t row = 0; row < n; ++row)
      setCode(weight.tensor, row, column,
              uint8_t(packing.field(
                  loadWord(words, size_t(column * wordsPerRow +
                                         row / packing.perWord())),
                  row)));
  if (Status status = checkImported(weight.tensor, "AWQ"); !status)
    return std::move(status).takeError();
  return weight;
}

Expected<std::vector<OwnedTensor>> exportAwq(const ImportedWeight &weight,
                                             const std::string &prefix) {
  if (Status status = checkExportable(weight, 4, "AWQ"); !status)
    return std::move(status).takeError();
  if (!weight.inputOrder.empty())
    return invalid("AWQ has no input channel order (g_idx); this weight "
                   "reorders its input channels");
  const QuantizedTensor &tensor = weight.tensor;
  WordPacking packing{4, kAwqPosition};
  int64_t n = tensor.rows, k = tensor.cols;
  if (n % packing.perWord() != 0)
    return invalid("AWQ packs 8 codes a word along N: N = " +
                   std::to_string(n) + " must be a multiple of 8");
  Expected<std::vector<OwnedTensor>> out =
      exportGroups(tensor, prefix, packing, 0, "AWQ");
  if (!out)
    return out;
  int64_t wordsPerRow = n / packing.perWord();
  OwnedTensor qweight{prefix + ".qweight", DType::I32, {k, wordsPerRow}, {}};
  qweight.bytes.assign(size_t(k * wordsPerRow * 4), std::byte{0});
  for (int64_t column = 0; column < k; ++column)
    for (int64_t row = 0; row < n; ++row) {
      size_t word = size_t(column * wordsPerRow + row / packing.perWord());
      orWord(qweight.bytes, word,
             packing.place(codeAt(tensor, row, column), row));
    }
  out->insert(out->begin(), std::move(qweight));
  return out;
}

} // namespace lowbit::checkpoint
