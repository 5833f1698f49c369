//===- ImportedWeight.h - Other tools' quantized weights in lowbit's layout -*-
// C++ -*-===//
//
// What every importer (GPTQ, AWQ, compressed-tensors) returns and every
// exporter takes: a linear layer's weight W [N, K] (out x in features, the
// PyTorch layout) as one lowbit QuantizedTensor of rows N and cols K with
// its groups along K (docs/quantization.md, "Storage"), plus the input
// channel order when the layout reorders K (GPTQ's act-order). And the
// pieces they share: fetching a checkpoint tensor of an expected dtype and
// rank, little-endian int32 words, a code of lowbit's packing by (row,
// col), and the integer group scheme these layouts use.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_CHECKPOINT_IMPORTEDWEIGHT_H
#define LOWBIT_CHECKPOINT_IMPORTEDWEIGHT_H

#include "checkpoint/Checkpoint.h"
#include "format/Quantize.h"

#include <array>
#include <initializer_list>

namespace lowbit::checkpoint {

struct ImportedWeight {
  QuantizedTensor tensor;
  /// Empty (the identity), or K entries: column c of `tensor` holds input
  /// channel inputOrder[c]. A matmul gathers x[inputOrder] before it.
  std::vector<int32_t> inputOrder;
};

/// A tensor an exporter produced; it owns its bytes.
struct OwnedTensor {
  std::string name;
  DType dtype = DType::U8;
  std::vector<int64_t> shape;
  std::vector<std::byte> bytes;

  TensorData view() const { return {name, dtype, shape, bytes}; }
};

/// `name` in `checkpoint`, of one of `dtypes` and rank `rank`; an error
/// naming what differs.
Expected<Checkpoint::Entry> requireTensor(const Checkpoint &checkpoint,
                                          const std::string &name,
                                          std::initializer_list<DType> dtypes,
                                          size_t rank);

/// A packed 2-D tensor's unpacked extents, [rows * rowFactor, cols *
/// colFactor], each checked against lowbit's size bounds (validateShape)
/// before it is multiplied: a file's shape can be anything its byte count
/// allows, e.g. [2^62, 0].
Expected<Shape2D> unpackedShape(const TensorInfo &packed, int64_t rowFactor,
                                int64_t colFactor);

/// Little-endian 32-bit word `index` of `bytes` (the caller checked the
/// size).
uint32_t loadWord(std::span<const std::byte> bytes, size_t index);
void storeWord(std::vector<std::byte> &bytes, size_t index, uint32_t word);
/// Sets `fields` in word `index` (an exporter packing code by code).
void orWord(std::vector<std::byte> &bytes, size_t index, uint32_t fields);
/// A 16-bit code (F16/BF16 scales), likewise.
uint16_t loadHalf(std::span<const std::byte> bytes, size_t index);

/// Codes of `bits` bits packed 32 / bits to a little-endian int32 word:
/// element `offset` of a word's run sits in field position[offset % per
/// word], bits [bits * field, bits * (field + 1)). GPTQ and
/// compressed-tensors keep elements in field order; AWQ's 4-bit word holds
/// elements 0, 2, 4, 6, 1, 3, 5, 7 in fields 0..7 (its GEMM kernel's
/// interleave), so element o sits in field kAwqPosition[o].
constexpr std::array<int, 8> kInOrder = {0, 1, 2, 3, 4, 5, 6, 7};
constexpr std::array<int, 8> kAwqPosition = {0, 4, 1, 5, 2, 6, 3, 7};

struct WordPacking {
  int bits;
  std::array<int, 8> position;
  int perWord() const { return 32 / bits; }
  uint32_t mask() const { return (uint32_t(1) << bits) - 1; }
  uint32_t field(uint32_t word, int64_t element) const {
    return (word >> (bits * position[size_t(element % perWord())])) & mask();
  }
  uint32_t place(uint32_t value, int64_t element) const {
    return value << (bits * position[size_t(element % perWord())]);
  }
};

/// A tensor of `scheme` for W [n, k] with zero codes, scales and zero
/// points (none without a zero point), for an importer to fill.
QuantizedTensor emptyTensor(const Scheme &scheme, int64_t n, int64_t k);

/// An act-order group index (GPTQ's g_idx, compressed-tensors'
/// weight_g_idx: I32 [K], the group of each input channel) as an input
/// order: the channels sorted by group (stable), or empty when that is the
/// identity. An error naming `tensorName` when a value is not a group or
/// the groups are not `groupSize` channels each (the last one shorter),
/// the only grouping lowbit's layout holds.
Expected<std::vector<int32_t>>
inputOrderFromGroupIndex(std::span<const std::byte> gIdx, int64_t k,
                         int64_t groupSize, const std::string &tensorName);
/// The column of each input channel: the inverse of weight.inputOrder (the
/// identity when it is empty). An exporter writes channel k from column
/// columnOf[k], and its group index as columnOf[k] / groupSize.
std::vector<int64_t> columnOfChannel(const ImportedWeight &weight);

/// Stores the code of element (row, col) in lowbit's packing (nibbles:
/// element 0 low); format/Quantize.h's codeAt reads it.
void setCode(QuantizedTensor &tensor, int64_t row, int64_t col, uint8_t code);

/// Integer codes of `bits` (4 or 8), one scale of `scaleType` per
/// `groupSize` elements along K (a short last group allowed), with an
/// unsigned element and a zero point, or a signed one without. The named
/// scheme's name when it is one (int4_g128).
Expected<Scheme> integerGroupScheme(int bits, bool zeroPoint, int64_t groupSize,
                                    ScaleType scaleType);

/// integerGroupScheme with the scale type of the checkpoint's tensor
/// `scalesName` (F16, BF16 or F32).
Expected<Scheme> schemeOfScales(const Checkpoint &checkpoint,
                                const std::string &scalesName, int bits,
                                bool zeroPoint, int64_t groupSize);

/// The safetensors dtype of a stored F16/BF16/F32 scale and back.
Expected<ScaleType> scaleTypeOf(DType dtype, std::string_view tensorName);
Expected<DType> scaleDType(ScaleType type);

/// Scale code `index` of a scales tensor of dtype `dtype` (F16, BF16, F32).
uint32_t loadScaleCode(std::span<const std::byte> bytes, DType dtype,
                       size_t index);
void storeScaleCode(std::vector<std::byte> &bytes, DType dtype, size_t index,
                    uint32_t code);

/// validateQuantized, as an Error naming the importer.
Status checkImported(const QuantizedTensor &tensor, std::string_view layout);

} // namespace lowbit::checkpoint

#endif // LOWBIT_CHECKPOINT_IMPORTEDWEIGHT_H
