//===- CompressedTensorsForm.cpp - A lowbit scheme as compressed-tensors --===//

#include "checkpoint/CompressedTensorsForm.h"

namespace lowbit::checkpoint {

namespace {

using json::JsonValue;
using Strategy = FloatQuantizedConfig::Strategy;

Error invalid(std::string message) {
  return makeError(ErrorCode::InvalidArgument, std::move(message));
}

int64_t ceilDivide(int64_t value, int64_t divisor) {
  return (value + divisor - 1) / divisor;
}

/// Whether `scheme` is `candidate` apart from the granularity (and whether
/// a group may be short, which only matters for shapes the scheme refuses).
bool sameApartFromGranularity(const Scheme &scheme, Scheme candidate) {
  candidate.scale.granularity = scheme.scale.granularity;
  candidate.scale.axis = scheme.scale.axis;
  candidate.scale.groupSize = scheme.scale.groupSize;
  candidate.scale.blockRows = scheme.scale.blockRows;
  candidate.scale.blockCols = scheme.scale.blockCols;
  candidate.scale.allowTail = scheme.scale.allowTail;
  return scheme == candidate;
}

/// The nvfp4 scheme in `convention`, unnamed (a name would not compare).
Scheme unnamedNvfp4(GlobalScale convention) {
  Scheme scheme = *lookupScheme("nvfp4");
  scheme.scale.globalScale = convention;
  scheme.name.clear();
  return scheme;
}

/// NVFP4 in either global-scale convention.
bool isNvfp4(Scheme scheme) {
  scheme.name.clear();
  return scheme == unnamedNvfp4(GlobalScale::DecodeMultiplier) ||
         scheme == unnamedNvfp4(GlobalScale::EncodeReciprocal);
}

/// Why compressed-tensors has no form for `scheme`.
std::string refusal(const Scheme &scheme) {
  const Format &element = scheme.element;
  const ScaleSpec &scale = scheme.scale;
  std::string name = element.name();
  bool mx = scale.type == ScaleType::E8M0;
  if (name == "e5m2")
    return "compressed-tensors' float-quantized layout stores FP8 as e4m3 "
           "(torch.float8_e4m3fn) only: e5m2 codes have no compressed-tensors "
           "form; --format lowbit holds them";
  if (mx && name != "e2m1")
    return "compressed-tensors has no layout for MX scales on " + name +
           " codes (its formats are pack-quantized, float-quantized, "
           "nvfp4-pack-quantized and mxfp4-pack-quantized): MXFP8 and MXFP6 "
           "have no compressed-tensors form; --format lowbit holds them";
  if (mx && name == "e2m1")
    return "compressed-tensors' mxfp4-pack-quantized holds MXFP4 as vLLM "
           "reads it: e2m1 codes two to a byte, one e8m0 scale per 32 "
           "columns, row-major; this variant (" +
           std::string(scaleLayoutName(scale.layout)) + " scales, group " +
           std::to_string(scale.groupSize) +
           ") is not it; --format lowbit holds it";
  if (scale.globalScale != GlobalScale::None)
    return "compressed-tensors' nvfp4-pack-quantized holds NVFP4 exactly: "
           "e2m1 codes, ue4m3 absmax scales per 16 columns, one f32 global "
           "scale; this variant is not it; --format lowbit holds it";
  return "compressed-tensors holds 4- or 8-bit integer codes (int4/int8 "
         "absmax, or uint4/uint8 minmax with zero points) with f16, bf16 or "
         "f32 scales in groups along the columns or one per row "
         "(per_channel, axis 0), e4m3 codes with f32, bf16 or f16 absmax "
         "scales per tensor, per row or per block, nvfp4 and mxfp4; this "
         "scheme is none of them; --format lowbit holds it";
}

bool isRowsOnly(const ScaleSpec &scale) {
  return scale.granularity == Granularity::PerChannel && scale.axis == 0;
}

} // namespace

Expected<CompressedTensorsForm>
CompressedTensorsForm::of(const Scheme &scheme) {
  CompressedTensorsForm form(scheme);
  const ScaleSpec &scale = scheme.scale;
  form.scaleType = scale.type;
  form.zeroPoint = scale.zeroPoint;
  bool groupAlongK = scale.granularity == Granularity::Group && scale.axis == 1;
  const Format &element = scheme.element;
  if (element.isInt() && (element.bits() == 4 || element.bits() == 8) &&
      (groupAlongK || isRowsOnly(scale))) {
    Expected<Scheme> candidate =
        integerGroupScheme(element.bits(), scale.zeroPoint, 1, scale.type);
    if (candidate && sameApartFromGranularity(scheme, *candidate)) {
      form.kind = Kind::PackQuantized;
      form.pack = {element.bits(), groupAlongK ? scale.groupSize : -1};
      return form;
    }
  }
  std::optional<FloatQuantizedConfig> config;
  if (scale.granularity == Granularity::PerTensor)
    config = FloatQuantizedConfig{};
  else if (isRowsOnly(scale))
    config = FloatQuantizedConfig{Strategy::Channel};
  else if (scale.granularity == Granularity::Block)
    config =
        FloatQuantizedConfig{Strategy::Block, scale.blockRows, scale.blockCols};
  if (config && element == *lookupFormat("e4m3")) {
    Expected<Scheme> candidate = floatQuantizedScheme(*config, scale.type);
    if (candidate && sameApartFromGranularity(scheme, *candidate)) {
      form.kind = Kind::FloatQuantized;
      form.fp8 = *config;
      return form;
    }
  }
  if (isMxfp4Layout(scheme)) {
    form.kind = Kind::Mxfp4;
    return form;
  }
  if (isNvfp4(scheme)) {
    form.kind = Kind::Nvfp4;
    return form;
  }
  return invalid(refusal(scheme));
}

Expected<Scheme> CompressedTensorsForm::schemeFor(const std::string &name,
                                                  int64_t n, int64_t k) const {
  // NVFP4 is quantized in the layout's encode convention whichever the
  // scheme names: a decode-convention global g stored as 1 / g would
  // dequantize as q * s / (1 / g), not q * (s * g), in f32.
  Expected<Scheme> scheme = given;
  if (kind == Kind::PackQuantized)
    scheme = integerGroupScheme(pack.bits, zeroPoint,
                                pack.groupSize == -1 ? k : pack.groupSize,
                                scaleType);
  else if (kind == Kind::FloatQuantized)
    scheme = floatQuantizedScheme(fp8, scaleType);
  else if (kind == Kind::Nvfp4)
    scheme = unnamedNvfp4(GlobalScale::EncodeReciprocal);
  if (!scheme)
    return scheme;
  std::string error;
  // The FP4 layouts have no short last group: K / 16 or K / 32 scales.
  int64_t block = kind == Kind::Nvfp4 ? 16 : kind == Kind::Mxfp4 ? 32 : 1;
  if (k % block != 0)
    return invalid(
        "'" + name + "' [" + std::to_string(n) + ", " + std::to_string(k) +
        "]: compressed-tensors' " + (kind == Kind::Nvfp4 ? "nvfp4" : "mxfp4") +
        "-pack-quantized needs K a multiple of " + std::to_string(block));
  if (!validateSchemeForShape(given, n, k, &error) ||
      !validateSchemeForShape(*scheme, n, k, &error))
    return invalid("'" + name + "' [" + std::to_string(n) + ", " +
                   std::to_string(k) + "]: " + error);
  return scheme;
}

std::vector<TensorSpec>
CompressedTensorsForm::plannedTensors(const std::string &prefix, int64_t n,
                                      int64_t k) const {
  if (kind == Kind::Nvfp4)
    return {{prefix + ".weight_packed", DType::U8, {n, ceilDivide(k, 2)}},
            {prefix + ".weight_scale", DType::F8_E4M3, {n, ceilDivide(k, 16)}},
            {prefix + ".weight_global_scale", DType::F32, {1}}};
  if (kind == Kind::Mxfp4)
    return {{prefix + ".weight_packed", DType::U8, {n, ceilDivide(k, 2)}},
            {prefix + ".weight_scale", DType::U8, {n, ceilDivide(k, 32)}}};
  DType scales = *scaleDType(scaleType);
  if (kind == Kind::FloatQuantized) {
    Expected<Scheme> scheme = floatQuantizedScheme(fp8, scaleType);
    Shape2D grid = scaleShape(*scheme, n, k);
    return {{prefix + ".weight", DType::F8_E4M3, {n, k}},
            {prefix + ".weight_scale", scales,
             fp8.strategy == Strategy::Tensor
                 ? std::vector<int64_t>{1}
                 : std::vector<int64_t>{grid.rows, grid.cols}}};
  }
  int64_t perWord = 32 / pack.bits;
  int64_t groups =
      pack.groupSize == -1 ? 1 : ceilDivide(k, int64_t(pack.groupSize));
  std::vector<TensorSpec> specs = {
      {prefix + ".weight_packed", DType::I32, {n, ceilDivide(k, perWord)}},
      {prefix + ".weight_scale", scales, {n, groups}}};
  if (zeroPoint)
    specs.push_back({prefix + ".weight_zero_point",
                     DType::I32,
                     {ceilDivide(n, perWord), groups}});
  specs.push_back({prefix + ".weight_shape", DType::I64, {2}});
  return specs;
}

Expected<std::vector<OwnedTensor>>
CompressedTensorsForm::exportWeight(QuantizedTensor tensor,
                                    const std::string &prefix) const {
  ImportedWeight weight{std::move(tensor), {}};
  switch (kind) {
  case Kind::PackQuantized:
    return exportPackQuantized(weight, prefix);
  case Kind::FloatQuantized:
    return exportFloatQuantized(weight, prefix);
  case Kind::Nvfp4:
    // Weights only (NVFP4A16): RTN has no activations to calibrate.
    return exportNvfp4CompressedTensors({std::move(weight), std::nullopt},
                                        prefix);
  case Kind::Mxfp4:
    return exportMxfp4CompressedTensors(weight, prefix);
  }
  return invalid("unknown compressed-tensors form");
}

json::JsonValue CompressedTensorsForm::quantizationConfig(
    std::span<const std::string> ignore) const {
  JsonValue weights = JsonValue::object();
  weights.set("dynamic", JsonValue::boolean(false));
  if (kind == Kind::PackQuantized && pack.groupSize != -1)
    weights.set("group_size", JsonValue::number(int64_t(pack.groupSize)));
  if (kind == Kind::Nvfp4 || kind == Kind::Mxfp4)
    weights.set("group_size",
                JsonValue::number(int64_t(kind == Kind::Nvfp4 ? 16 : 32)));
  if (kind == Kind::FloatQuantized && fp8.strategy == Strategy::Block) {
    JsonValue block = JsonValue::array();
    block.push(JsonValue::number(int64_t(fp8.blockRows)));
    block.push(JsonValue::number(int64_t(fp8.blockCols)));
    weights.set("block_structure", std::move(block));
  }
  int64_t bits = 4;
  std::string_view strategy, format;
  switch (kind) {
  case Kind::PackQuantized:
    bits = pack.bits;
    strategy = pack.groupSize == -1 ? "channel" : "group";
    format = "pack-quantized";
    break;
  case Kind::FloatQuantized:
    bits = 8;
    strategy = fp8.strategy == Strategy::Tensor    ? "tensor"
               : fp8.strategy == Strategy::Channel ? "channel"
                                                   : "block";
    format = "float-quantized";
    break;
  case Kind::Nvfp4:
    strategy = "tensor_group";
    format = "nvfp4-pack-quantized";
    break;
  case Kind::Mxfp4:
    strategy = "group";
    format = "mxfp4-pack-quantized";
    break;
  }
  weights.set("num_bits", JsonValue::number(bits));
  weights.set("strategy", JsonValue::string(std::string(strategy)));
  weights.set("symmetric", JsonValue::boolean(!zeroPoint));
  weights.set("type",
              JsonValue::string(kind == Kind::PackQuantized ? "int" : "float"));

  JsonValue targets = JsonValue::array();
  targets.push(JsonValue::string("Linear"));
  JsonValue group = JsonValue::object();
  group.set("targets", std::move(targets));
  group.set("weights", std::move(weights));
  JsonValue groups = JsonValue::object();
  groups.set("group_0", std::move(group));

  JsonValue ignored = JsonValue::array();
  for (const std::string &module : ignore)
    ignored.push(JsonValue::string(module));
  JsonValue config = JsonValue::object();
  config.set("config_groups", std::move(groups));
  config.set("format", JsonValue::string(std::string(format)));
  config.set("ignore", std::move(ignored));
  config.set("quant_method", JsonValue::string("compressed-tensors"));
  config.set("quantization_status", JsonValue::string("compressed"));
  return config;
}

std::string CompressedTensorsForm::describe() const {
  if (kind == Kind::Nvfp4)
    return "nvfp4-pack-quantized, weights only, global scale 6*448/amax "
           "(encode convention)";
  if (kind == Kind::Mxfp4)
    return "mxfp4-pack-quantized, weights only, e8m0 scales per 32";
  if (kind == Kind::PackQuantized)
    return "pack-quantized " + std::string(zeroPoint ? "uint" : "int") +
           std::to_string(pack.bits) + ", " +
           (pack.groupSize == -1 ? std::string("per channel")
                                 : "group " + std::to_string(pack.groupSize)) +
           ", " + std::string(scaleTypeName(scaleType)) + " scales";
  return "float-quantized e4m3, " +
         std::string(fp8.strategy == Strategy::Tensor    ? "per tensor"
                     : fp8.strategy == Strategy::Channel ? "per channel"
                                                         : "block") +
         ", " + std::string(scaleTypeName(scaleType)) + " scales";
}

} // namespace lowbit::checkpoint
