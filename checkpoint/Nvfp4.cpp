//===- Nvfp4.cpp - NVFP4 weights of compressed-tensors and ModelOpt -------===//

#include "checkpoint/Nvfp4.h"

#include <cstring>

namespace lowbit::checkpoint {

namespace {

Error invalid(std::string message) {
  return makeError(ErrorCode::InvalidArgument, std::move(message));
}

/// The names one file format gives the parts.
struct Nvfp4Names {
  std::string_view layout, codes, blockScales, global, inputGlobal;
  GlobalScale convention;
  /// ModelOpt writes its scalars 0-d, compressed-tensors as [1].
  bool scalarsHaveAxis;
};

constexpr Nvfp4Names kCompressedTensors = {"compressed-tensors nvfp4",
                                           "weight_packed",
                                           "weight_scale",
                                           "weight_global_scale",
                                           "input_global_scale",
                                           GlobalScale::EncodeReciprocal,
                                           true};
constexpr Nvfp4Names kModelOpt = {"ModelOpt NVFP4",
                                  "weight",
                                  "weight_scale",
                                  "weight_scale_2",
                                  "input_scale",
                                  GlobalScale::DecodeMultiplier,
                                  false};

Scheme nvfp4Scheme(GlobalScale convention) {
  Scheme scheme = *lookupScheme("nvfp4");
  if (scheme.scale.globalScale != convention) {
    scheme.scale.globalScale = convention;
    scheme.name.clear();
  }
  return scheme;
}

/// An F32 scalar stored as [] or [1].
Expected<float> readScalar(const Checkpoint &checkpoint,
                           const std::string &name) {
  Expected<Checkpoint::Entry> entry = checkpoint.get(name);
  if (!entry)
    return std::move(entry).takeError();
  if (entry->info->dtype != DType::F32 || entry->info->elementCount() != 1 ||
      entry->info->shape.size() > 1)
    return invalid("'" + name + "' should be one F32 value ([] or [1])");
  float value = 0;
  std::memcpy(&value, entry->data().data(), 4);
  return value;
}

Expected<Nvfp4Layer> importNvfp4(const Checkpoint &checkpoint,
                                 const std::string &prefix,
                                 const Nvfp4Names &names) {
  std::string at = prefix + ".";
  Expected<Checkpoint::Entry> codes =
      requireTensor(checkpoint, at + std::string(names.codes), {DType::U8}, 2);
  if (!codes)
    return std::move(codes).takeError();
  Expected<Checkpoint::Entry> scales = requireTensor(
      checkpoint, at + std::string(names.blockScales), {DType::F8_E4M3}, 2);
  if (!scales)
    return std::move(scales).takeError();
  Expected<float> global =
      readScalar(checkpoint, at + std::string(names.global));
  if (!global)
    return std::move(global).takeError();
  // A weight-only layer (NVFP4A16) has no activations' scale.
  std::optional<float> inputGlobal;
  std::string inputGlobalName = at + std::string(names.inputGlobal);
  if (checkpoint.find(inputGlobalName)) {
    Expected<float> value = readScalar(checkpoint, inputGlobalName);
    if (!value)
      return std::move(value).takeError();
    inputGlobal = *value;
  }

  Scheme scheme = nvfp4Scheme(names.convention);
  Expected<Shape2D> extents = unpackedShape(*codes->info, 1, 2);
  if (!extents)
    return std::move(extents).takeError();
  int64_t n = extents->rows, k = extents->cols;
  Shape2D scaleGrid = scaleShape(scheme, n, k);
  if (scales->info->shape !=
      std::vector<int64_t>{scaleGrid.rows, scaleGrid.cols})
    return invalid(std::string(names.layout) + " '" + prefix +
                   "': " + std::string(names.blockScales) + " should be [" +
                   std::to_string(scaleGrid.rows) + ", " +
                   std::to_string(scaleGrid.cols) + "] for codes [" +
                   std::to_string(n) + ", " + std::to_string(k / 2) + "]");
  Nvfp4Layer layer{{emptyTensor(scheme, n, k), {}}, inputGlobal};
  QuantizedTensor &tensor = layer.weight.tensor;
  // Both nibble orders are lowbit's (element 2i low): the bytes are the
  // codes. The scale bytes are ue4m3 codes (a set sign bit is refused by
  // the check below).
  std::span<const std::byte> codeBytes = codes->data();
  std::memcpy(tensor.codes.data(), codeBytes.data(), codeBytes.size());
  std::span<const std::byte> scaleBytes = scales->data();
  for (size_t index = 0; index < scaleBytes.size(); ++index)
    tensor.scaleCodes[index] = uint32_t(scaleBytes[index]);
  tensor.globalScale = *global;
  if (Status status = checkImported(tensor, names.layout); !status)
    return std::move(status).takeError();
  return layer;
}

Expected<std::vector<OwnedTensor>> exportNvfp4(Nvfp4Layer layer,
                                               const std::string &prefix,
                                               const Nvfp4Names &names) {
  if (Status status = convertGlobalConvention(layer, names.convention); !status)
    return std::move(status).takeError();
  const QuantizedTensor &tensor = layer.weight.tensor;
  if (!layer.weight.inputOrder.empty())
    return invalid(std::string(names.layout) + " has no input channel order");
  if (Status status = checkImported(tensor, names.layout); !status)
    return std::move(status).takeError();
  std::string at = prefix + ".";
  int64_t n = tensor.rows;
  Shape2D codes = codesShape(tensor.scheme, n, tensor.cols);
  Shape2D scales = scaleShape(tensor.scheme, n, tensor.cols);
  std::vector<OwnedTensor> out;
  OwnedTensor packed{
      at + std::string(names.codes), DType::U8, {codes.rows, codes.cols}, {}};
  packed.bytes.resize(tensor.codes.size());
  std::memcpy(packed.bytes.data(), tensor.codes.data(), tensor.codes.size());
  out.push_back(std::move(packed));
  OwnedTensor blockScales{at + std::string(names.blockScales),
                          DType::F8_E4M3,
                          {scales.rows, scales.cols},
                          {}};
  for (uint32_t code : tensor.scaleCodes)
    blockScales.bytes.push_back(std::byte(code));
  out.push_back(std::move(blockScales));
  auto scalar = [&](std::string_view name, float value) {
    OwnedTensor tensorOut{at + std::string(name), DType::F32, {}, {}};
    if (names.scalarsHaveAxis)
      tensorOut.shape = {1};
    tensorOut.bytes.resize(4);
    std::memcpy(tensorOut.bytes.data(), &value, 4);
    return tensorOut;
  };
  out.push_back(scalar(names.global, tensor.globalScale));
  if (layer.inputGlobalScale)
    out.push_back(scalar(names.inputGlobal, *layer.inputGlobalScale));
  return out;
}

} // namespace

Status convertGlobalConvention(Nvfp4Layer &layer, GlobalScale target) {
  QuantizedTensor &tensor = layer.weight.tensor;
  if (!(tensor.scheme == nvfp4Scheme(tensor.scheme.scale.globalScale)))
    return invalid("not an NVFP4 weight (e2m1 codes, ue4m3 scales per 16, "
                   "an f32 global scale)");
  if (target != GlobalScale::DecodeMultiplier &&
      target != GlobalScale::EncodeReciprocal)
    return invalid("an NVFP4 global scale is a decode or an encode "
                   "multiplier");
  if (tensor.scheme.scale.globalScale == target)
    return Status::success();
  Scheme converted = nvfp4Scheme(target);
  tensor.scheme = converted;
  tensor.globalScale = 1.0f / tensor.globalScale;
  if (layer.inputGlobalScale)
    layer.inputGlobalScale = 1.0f / *layer.inputGlobalScale;
  return Status::success();
}

bool isMxfp4Layout(const Scheme &scheme) {
  const ScaleSpec &scale = scheme.scale;
  return scheme.element == *lookupFormat("e2m1") &&
         scheme.packing == Packing::Nibble &&
         scale.granularity == Granularity::Group && scale.axis == 1 &&
         scale.groupSize == 32 && scale.type == ScaleType::E8M0 &&
         (scale.rule == ScaleRule::E8M0Floor ||
          scale.rule == ScaleRule::E8M0RCeil) &&
         scale.mode == ScaleMode::Dynamic && !scale.zeroPoint &&
         scale.layout == ScaleLayout::RowMajor &&
         scale.globalScale == GlobalScale::None;
}

Expected<ImportedWeight>
importMxfp4CompressedTensors(const Checkpoint &checkpoint,
                             const std::string &prefix, const Scheme &scheme) {
  if (!isMxfp4Layout(scheme))
    return invalid("compressed-tensors mxfp4 imports as an mxfp4 scheme");
  std::string at = prefix + ".";
  Expected<Checkpoint::Entry> codes =
      requireTensor(checkpoint, at + "weight_packed", {DType::U8}, 2);
  if (!codes)
    return std::move(codes).takeError();
  Expected<Checkpoint::Entry> scales =
      requireTensor(checkpoint, at + "weight_scale", {DType::U8}, 2);
  if (!scales)
    return std::move(scales).takeError();
  Expected<Shape2D> extents = unpackedShape(*codes->info, 1, 2);
  if (!extents)
    return std::move(extents).takeError();
  int64_t n = extents->rows, k = extents->cols;
  if (k % 32 != 0)
    return invalid("compressed-tensors mxfp4 '" + prefix +
                   "': K = " + std::to_string(k) + " is not a multiple of 32");
  if (scales->info->shape != std::vector<int64_t>{n, k / 32})
    return invalid("compressed-tensors mxfp4 '" + prefix +
                   "': weight_scale should be [" + std::to_string(n) + ", " +
                   std::to_string(k / 32) + "] for codes [" +
                   std::to_string(n) + ", " + std::to_string(k / 2) + "]");
  ImportedWeight weight{emptyTensor(scheme, n, k), {}};
  std::span<const std::byte> codeBytes = codes->data();
  std::memcpy(weight.tensor.codes.data(), codeBytes.data(), codeBytes.size());
  std::span<const std::byte> scaleBytes = scales->data();
  for (size_t index = 0; index < scaleBytes.size(); ++index)
    weight.tensor.scaleCodes[index] = uint32_t(scaleBytes[index]);
  if (Status status = checkImported(weight.tensor, "compressed-tensors mxfp4");
      !status)
    return std::move(status).takeError();
  return weight;
}

Expected<std::vector<OwnedTensor>>
exportMxfp4CompressedTensors(const ImportedWeight &weight,
                             const std::string &prefix) {
  const QuantizedTensor &tensor = weight.tensor;
  if (!isMxfp4Layout(tensor.scheme))
    return invalid("compressed-tensors mxfp4-pack-quantized holds mxfp4 "
                   "(e2m1 codes, e8m0 scales per 32 along K, row-major)");
  if (!weight.inputOrder.empty())
    return invalid("compressed-tensors mxfp4 has no input channel order");
  if (Status status = checkImported(tensor, "compressed-tensors mxfp4");
      !status)
    return std::move(status).takeError();
  std::string at = prefix + ".";
  Shape2D codes = codesShape(tensor.scheme, tensor.rows, tensor.cols);
  Shape2D scales = scaleShape(tensor.scheme, tensor.rows, tensor.cols);
  OwnedTensor packed{
      at + "weight_packed", DType::U8, {codes.rows, codes.cols}, {}};
  packed.bytes.resize(tensor.codes.size());
  std::memcpy(packed.bytes.data(), tensor.codes.data(), tensor.codes.size());
  OwnedTensor exponents{
      at + "weight_scale", DType::U8, {scales.rows, scales.cols}, {}};
  exponents.bytes.reserve(tensor.scaleCodes.size());
  for (uint32_t code : tensor.scaleCodes)
    exponents.bytes.push_back(std::byte(code));
  std::vector<OwnedTensor> out;
  out.push_back(std::move(packed));
  out.push_back(std::move(exponents));
  return out;
}

Expected<Nvfp4Layer> importNvfp4CompressedTensors(const Checkpoint &checkpoint,
                                                  const std::string &prefix) {
  return importNvfp4(checkpoint, prefix, kCompressedTensors);
}

Expected<Nvfp4Layer> importNvfp4ModelOpt(const Checkpoint &checkpoint,
                                         const std::string &prefix) {
  return importNvfp4(checkpoint, prefix, kModelOpt);
}

Expected<std::vector<OwnedTensor>>
exportNvfp4CompressedTensors(Nvfp4Layer layer, const std::string &prefix) {
  return exportNvfp4(std::move(layer), prefix, kCompressedTensors);
}

Expected<std::vector<OwnedTensor>>
exportNvfp4ModelOpt(Nvfp4Layer layer, const std::string &prefix) {
  return exportNvfp4(std::move(layer), prefix, kModelOpt);
}

} // namespace lowbit::checkpoint
