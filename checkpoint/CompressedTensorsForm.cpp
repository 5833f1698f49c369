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
  return invalid(
      "compressed-tensors holds 4- or 8-bit integer codes (int4/int8 "
      "absmax, or uint4/uint8 minmax with zero points) with f16, bf16 or f32 "
      "scales in groups along the columns or one per row (per_channel, axis "
      "0), and e4m3 codes with f32, bf16 or f16 absmax scales per tensor, "
      "per row or per block; this scheme is none of them");
}

Expected<Scheme> CompressedTensorsForm::schemeFor(const std::string &name,
                                                  int64_t n, int64_t k) const {
  Expected<Scheme> scheme =
      kind == Kind::PackQuantized
          ? integerGroupScheme(pack.bits, zeroPoint,
                               pack.groupSize == -1 ? k : pack.groupSize,
                               scaleType)
          : floatQuantizedScheme(fp8, scaleType);
  if (!scheme)
    return scheme;
  std::string error;
  if (!validateSchemeForShape(given, n, k, &error) ||
      !validateSchemeForShape(*scheme, n, k, &error))
    return invalid("'" + name + "' [" + std::to_string(n) + ", " +
                   std::to_string(k) + "]: " + error);
  return scheme;
}

std::vector<TensorSpec>
CompressedTensorsForm::plannedTensors(const std::string &prefix, int64_t n,
                                      int64_t k) const {
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
  return kind == Kind::PackQuantized ? exportPackQuantized(weight, prefix)
                                     : exportFloatQuantized(weight, prefix);
}

json::JsonValue CompressedTensorsForm::quantizationConfig(
    std::span<const std::string> ignore) const {
  JsonValue weights = JsonValue::object();
  weights.set("dynamic", JsonValue::boolean(false));
  if (kind == Kind::PackQuantized && pack.groupSize != -1)
    weights.set("group_size", JsonValue::number(int64_t(pack.groupSize)));
  if (kind == Kind::FloatQuantized && fp8.strategy == Strategy::Block) {
    JsonValue block = JsonValue::array();
    block.push(JsonValue::number(int64_t(fp8.blockRows)));
    block.push(JsonValue::number(int64_t(fp8.blockCols)));
    weights.set("block_structure", std::move(block));
  }
  weights.set("num_bits", JsonValue::number(int64_t(
                              kind == Kind::PackQuantized ? pack.bits : 8)));
  std::string_view strategy =
      kind == Kind::PackQuantized
          ? (pack.groupSize == -1 ? "channel" : "group")
          : (fp8.strategy == Strategy::Tensor    ? "tensor"
             : fp8.strategy == Strategy::Channel ? "channel"
                                                 : "block");
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
  config.set("format", JsonValue::string(kind == Kind::PackQuantized
                                             ? "pack-quantized"
                                             : "float-quantized"));
  config.set("ignore", std::move(ignored));
  config.set("quant_method", JsonValue::string("compressed-tensors"));
  config.set("quantization_status", JsonValue::string("compressed"));
  return config;
}

std::string CompressedTensorsForm::describe() const {
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
