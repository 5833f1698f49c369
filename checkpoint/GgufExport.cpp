//===- GgufExport.cpp - A safetensors checkpoint as a GGUF file -----------===//

#include "checkpoint/GgufExport.h"

#include "checkpoint/GgufWeights.h"
#include "checkpoint/GgufWriter.h"

#include <algorithm>
#include <cstring>
#include <deque>

namespace lowbit::checkpoint {

namespace {

Error invalid(std::string message) {
  return makeError(ErrorCode::InvalidArgument, std::move(message));
}

std::vector<float> widened(const TensorInfo &info,
                           std::span<const std::byte> bytes) {
  std::vector<float> values(size_t(info.elementCount()));
  if (info.dtype == DType::F32) {
    std::memcpy(values.data(), bytes.data(), bytes.size());
    return values;
  }
  std::vector<uint16_t> halves(values.size());
  std::memcpy(halves.data(), bytes.data(), bytes.size());
  return widenToFloat(info.dtype == DType::F16 ? HalfType::F16 : HalfType::BF16,
                      halves);
}

/// llama.cpp's LlamaFileType of a file whose matrices are `blockType`.
uint32_t llamaFileType(uint32_t blockType) {
  constexpr uint32_t kMostlyQ4_0 = 2, kMostlyQ8_0 = 7;
  return blockType == kGgmlQ8_0 ? kMostlyQ8_0 : kMostlyQ4_0;
}

} // namespace

Status writeCheckpointAsGguf(const Checkpoint &checkpoint,
                             const std::string &path, uint32_t blockType,
                             const GgufLlamaModel *llama) {
  Expected<Scheme> scheme = ggufBlockScheme(blockType);
  if (!scheme)
    return std::move(scheme).takeError();
  // Holds permuted inputs and converted outputs; a deque keeps the bytes
  // of earlier entries where the spans point.
  std::deque<std::vector<std::byte>> owned;
  std::vector<GgufTensorData> tensors;
  for (const auto &[name, entry] : checkpoint.tensors()) {
    const TensorInfo &info = *entry.info;
    if (info.dtype != DType::F32 && info.dtype != DType::F16 &&
        info.dtype != DType::BF16)
      return invalid("tensor '" + name + "' is " +
                     std::string(dtypeName(info.dtype)) +
                     "; the GGUF export takes F32, F16 and BF16 tensors");
    if (info.shape.empty() || info.shape.size() > 4)
      return invalid("tensor '" + name + "' has " +
                     std::to_string(info.shape.size()) +
                     " axes; GGUF holds 1 to 4");
    GgufTensorData tensor{name, {}, kGgmlF32, entry.data()};
    tensor.extents.assign(info.shape.rbegin(), info.shape.rend());
    if (llama) {
      Expected<std::optional<GgufTensorName>> mapped = llama->tensorName(name);
      if (!mapped)
        return std::move(mapped).takeError();
      if (!*mapped)
        continue;
      tensor.name = (*mapped)->name;
      if (RopePermutation rope = (*mapped)->rope;
          rope != RopePermutation::None) {
        Expected<std::vector<std::byte>> permuted = permuteRopeRows(
            entry.data(), info.shape[0], llama->ropeHeads(rope), name);
        if (!permuted)
          return std::move(permuted).takeError();
        owned.push_back(std::move(*permuted));
        tensor.bytes = owned.back();
      }
    }
    std::span<const std::byte> source = tensor.bytes;
    // llama.cpp's converter keeps 1-D tensors (norms, biases) in F32.
    bool widen = info.dtype == DType::BF16 ||
                 (llama && info.dtype == DType::F16 && info.shape.size() == 1);
    if (info.shape.size() == 2 && info.shape[1] > 0 &&
        info.shape[1] % 32 == 0) {
      std::string error;
      std::optional<QuantizedTensor> quantized = quantize(
          *scheme, widened(info, source), info.shape[0], info.shape[1], &error);
      if (!quantized)
        return invalid("tensor '" + name + "': " + error);
      Expected<std::vector<std::byte>> blocks =
          exportGgufBlocks(*quantized, blockType);
      if (!blocks)
        return std::move(blocks).takeError();
      owned.push_back(std::move(*blocks));
      tensor.type = blockType;
      tensor.bytes = owned.back();
    } else if (widen) {
      std::vector<float> values = widened(info, source);
      owned.emplace_back(values.size() * 4);
      std::memcpy(owned.back().data(), values.data(), owned.back().size());
      tensor.bytes = owned.back();
    } else if (info.dtype == DType::F16) {
      tensor.type = kGgmlF16;
    }
    tensors.push_back(std::move(tensor));
  }
  std::vector<std::pair<std::string, GgufValue>> metadata;
  if (llama) {
    metadata = llama->metadata;
    metadata.emplace_back("general.file_type",
                          GgufValue::u32(llamaFileType(blockType)));
    metadata.emplace_back("general.quantization_version", GgufValue::u32(2));
  } else {
    metadata.emplace_back("general.quantized_by", GgufValue::text("lowbit"));
  }
  return writeGguf(path, metadata, tensors);
}

} // namespace lowbit::checkpoint
