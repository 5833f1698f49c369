//===- GgufWeights.cpp - llama.cpp's Q8_0 / Q4_0 blocks as lowbit tensors -===//

#include "checkpoint/GgufWeights.h"

#include "checkpoint/ImportedWeight.h"

#include <cstring>

namespace lowbit::checkpoint {

namespace {

Error invalid(std::string message) {
  return makeError(ErrorCode::InvalidArgument, "GGUF: " + std::move(message));
}

constexpr int64_t kBlock = 32;

/// Bytes of one block's codes after its f16 d.
int64_t codeBytes(uint32_t typeId) {
  return typeId == kGgmlQ8_0 ? kBlock : kBlock / 2;
}

/// Q4_0 stores q, lowbit the two's complement of q - 8: the same nibble
/// with its top bit flipped, in both nibbles of a byte.
constexpr uint8_t kQ4_0Flip = 0x88;

} // namespace

Expected<Scheme> ggufBlockScheme(uint32_t typeId) {
  if (typeId != kGgmlQ8_0 && typeId != kGgmlQ4_0) {
    const GgmlType *type = ggmlType(typeId);
    return invalid("ggml type " +
                   (type ? std::string(type->name) : std::to_string(typeId)) +
                   " has no lowbit scheme (Q8_0 and Q4_0 have)");
  }
  bool q8 = typeId == kGgmlQ8_0;
  Scheme scheme{"", *lookupFormat(q8 ? "int8" : "int4"), ScaleSpec{},
                q8 ? Packing::Byte : Packing::NibbleHalves};
  scheme.scale.granularity = Granularity::Group;
  scheme.scale.axis = 1;
  scheme.scale.groupSize = int(kBlock);
  scheme.scale.type = ScaleType::F16;
  scheme.scale.rule =
      q8 ? ScaleRule::AbsMaxReciprocal : ScaleRule::SignedMaxReciprocal;
  return scheme;
}

Expected<QuantizedTensor> importGgufTensor(const GgufFile &file,
                                           const GgufTensorInfo &tensor) {
  return importGgufBlocks(tensor, file.data(tensor));
}

Expected<ImportedWeight> importGgufWeight(const GgufFile &file,
                                          std::string_view name) {
  const GgufTensorInfo *tensor = file.header().findTensor(name);
  if (!tensor)
    tensor = file.header().findTensor(std::string(name) + ".weight");
  if (!tensor)
    return invalid("'" + file.path() + "' has no tensor '" + std::string(name) +
                   "' (nor '" + std::string(name) + ".weight')");
  Expected<QuantizedTensor> imported = importGgufTensor(file, *tensor);
  if (!imported)
    return std::move(imported).takeError();
  return ImportedWeight{std::move(*imported), {}};
}

Expected<QuantizedTensor> importGgufBlocks(const GgufTensorInfo &tensor,
                                           std::span<const std::byte> blocks) {
  Expected<Scheme> scheme = ggufBlockScheme(tensor.type->id);
  if (!scheme)
    return invalid("tensor '" + tensor.name + "': " + scheme.error().message);
  if (tensor.extents.size() != 2)
    return invalid("tensor '" + tensor.name + "' has " +
                   std::to_string(tensor.extents.size()) +
                   " dimensions; lowbit imports matrices");
  int64_t cols = tensor.extents[0], rows = tensor.extents[1];
  std::string error;
  if (!validateShape(rows, cols, &error))
    return invalid("tensor '" + tensor.name + "': " + error);
  if (blocks.size() != tensor.byteSize)
    return invalid("tensor '" + tensor.name + "' has " +
                   std::to_string(blocks.size()) + " bytes, its blocks " +
                   std::to_string(tensor.byteSize));
  QuantizedTensor result = emptyTensor(*scheme, rows, cols);
  int64_t blockBytes = tensor.type->blockBytes, perRow = cols / kBlock;
  int64_t codesPerBlock = codeBytes(tensor.type->id);
  uint8_t flip = tensor.type->id == kGgmlQ4_0 ? kQ4_0Flip : 0;
  for (int64_t block = 0; block < rows * perRow; ++block) {
    std::span<const std::byte> bytes =
        blocks.subspan(size_t(block * blockBytes), size_t(blockBytes));
    result.scaleCodes[size_t(block)] = loadHalf(bytes, 0);
    // A block's codes are lowbit's packed bytes of the same elements: for
    // Q4_0, nibble_halves pairs j with j + 16 as the file does.
    for (int64_t index = 0; index < codesPerBlock; ++index)
      result.codes[size_t(block * codesPerBlock + index)] =
          uint8_t(std::to_integer<uint8_t>(bytes[size_t(2 + index)]) ^ flip);
  }
  if (!validateQuantized(result, &error))
    return invalid("tensor '" + tensor.name + "': " + error);
  return result;
}

Expected<QuantizedTensor> ggufAsKernelScheme(const QuantizedTensor &tensor) {
  bool q8 = tensor.scheme == *ggufBlockScheme(kGgmlQ8_0);
  if (!q8 && !(tensor.scheme == *ggufBlockScheme(kGgmlQ4_0)))
    return invalid("the tensor's scheme is not Q8_0's or Q4_0's");
  Expected<Scheme> scheme =
      integerGroupScheme(q8 ? 8 : 4, !q8, kBlock, ScaleType::F16);
  if (!scheme)
    return scheme.error();
  scheme->scale.allowTail = false;
  QuantizedTensor out = emptyTensor(*scheme, tensor.rows, tensor.cols);
  constexpr uint16_t kOne = 0x3C00, kSign = 0x8000;
  for (int64_t row = 0; row < tensor.rows; ++row)
    for (int64_t block = 0; block < tensor.cols / kBlock; ++block) {
      size_t index = size_t(row * (tensor.cols / kBlock) + block);
      uint16_t d = uint16_t(tensor.scaleCodes[index]);
      bool zero = (d & ~kSign) == 0, negative = !zero && (d & kSign);
      out.scaleCodes[index] = zero ? kOne : uint16_t(d & ~kSign);
      if (!q8)
        out.zeros[index] = negative ? 7 : 8;
      for (int64_t col = block * kBlock; col < (block + 1) * kBlock; ++col) {
        uint32_t code = codeAt(tensor, row, col);
        if (q8) {
          setCode(out, row, col, uint8_t(code));
          continue;
        }
        // The two's complement nibble of c, as c in -8..7.
        int c = int(code & 0x7) - int(code & 0x8);
        setCode(out, row, col, uint8_t(negative ? 7 - c : c + 8));
      }
    }
  std::string error;
  if (!validateQuantized(out, &error))
    return invalid(error);
  return out;
}

Expected<std::vector<std::byte>> exportGgufBlocks(const QuantizedTensor &tensor,
                                                  uint32_t typeId) {
  Expected<Scheme> scheme = ggufBlockScheme(typeId);
  if (!scheme)
    return scheme.error();
  if (!(tensor.scheme == *scheme))
    return invalid("the tensor's scheme is not " +
                   std::string(ggmlType(typeId)->name) + "'s");
  std::string error;
  if (!validateQuantized(tensor, &error))
    return invalid(error);
  const GgmlType &type = *ggmlType(typeId);
  int64_t blocks = tensor.rows * (tensor.cols / kBlock);
  int64_t codesPerBlock = codeBytes(typeId);
  uint8_t flip = typeId == kGgmlQ4_0 ? kQ4_0Flip : 0;
  std::vector<std::byte> out(size_t(blocks * type.blockBytes));
  for (int64_t block = 0; block < blocks; ++block) {
    std::byte *bytes = out.data() + block * type.blockBytes;
    uint16_t d = uint16_t(tensor.scaleCodes[size_t(block)]);
    std::memcpy(bytes, &d, 2);
    for (int64_t index = 0; index < codesPerBlock; ++index)
      bytes[2 + index] = std::byte(
          uint8_t(tensor.codes[size_t(block * codesPerBlock + index)] ^ flip));
  }
  return out;
}

} // namespace lowbit::checkpoint
