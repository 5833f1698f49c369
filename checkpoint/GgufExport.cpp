//===- GgufExport.cpp - A safetensors checkpoint as a GGUF file -----------===//

#include "checkpoint/GgufExport.h"

#include "checkpoint/GgufWeights.h"
#include "checkpoint/GgufWriter.h"

#include <algorithm>
#include <cstring>

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

} // namespace

Status writeCheckpointAsGguf(const Checkpoint &checkpoint,
                             const std::string &path, uint32_t blockType) {
  Expected<Scheme> scheme = ggufBlockScheme(blockType);
  if (!scheme)
    return std::move(scheme).takeError();
  std::vector<std::vector<std::byte>> owned;
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
    if (info.shape.size() == 2 && info.shape[1] > 0 &&
        info.shape[1] % 32 == 0) {
      std::string error;
      std::optional<QuantizedTensor> quantized =
          quantize(*scheme, widened(info, entry.data()), info.shape[0],
                   info.shape[1], &error);
      if (!quantized)
        return invalid("tensor '" + name + "': " + error);
      Expected<std::vector<std::byte>> blocks =
          exportGgufBlocks(*quantized, blockType);
      if (!blocks)
        return std::move(blocks).takeError();
      owned.push_back(std::move(*blocks));
      tensor.type = blockType;
      tensor.bytes = owned.back();
    } else if (info.dtype == DType::F16) {
      tensor.type = kGgmlF16;
    } else if (info.dtype == DType::BF16) {
      std::vector<float> values = widened(info, entry.data());
      owned.emplace_back(values.size() * 4);
      std::memcpy(owned.back().data(), values.data(), owned.back().size());
      tensor.bytes = owned.back();
    }
    tensors.push_back(std::move(tensor));
  }
  GgufValue quantizedBy;
  quantizedBy.type = GgufValueType::String;
  quantizedBy.string = "lowbit";
  std::vector<std::pair<std::string, GgufValue>> metadata = {
      {"general.quantized_by", quantizedBy}};
  return writeGguf(path, metadata, tensors);
}

} // namespace lowbit::checkpoint
