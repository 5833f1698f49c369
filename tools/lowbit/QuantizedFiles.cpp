//===- QuantizedFiles.cpp - A quantized tensor as a directory -------------===//

#include "tools/lowbit/QuantizedFiles.h"

#include "format/Codec.h"
#include "runtime/core/AtomicFile.h"

#include <filesystem>
#include <type_traits>
#include <system_error>

#include <fmt/format.h>

namespace lowbit::cli {
namespace {

void setError(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
}

std::string shapeText(Shape2D shape) {
  return fmt::format("({}, {})", shape.rows, shape.cols);
}

bool checkArray(const npy::Array &array, npy::DType dtype, Shape2D shape,
                std::string_view what, std::string *error) {
  if (array.dtype != dtype) {
    setError(error,
             fmt::format("{} must be {}, got {}", what, npy::dtypeName(dtype),
                         npy::dtypeName(array.dtype)));
    return false;
  }
  if (array.shape != std::vector<int64_t>{shape.rows, shape.cols}) {
    setError(error, fmt::format("{} has shape {}, the scheme needs {}", what,
                                array.shapeText(), shapeText(shape)));
    return false;
  }
  return true;
}

using json::JsonValue;

/// The value of `key` in meta.json, which must be a T (std::string, int64_t
/// or bool).
template <typename T>
std::optional<T> field(const JsonValue &meta, std::string_view key,
                       std::string *error) {
  const JsonValue *value = meta.get(key);
  if (!value) {
    setError(error, fmt::format("meta.json lacks \"{}\"", key));
    return std::nullopt;
  }
  if constexpr (std::is_same_v<T, std::string>) {
    if (value->isString())
      return value->text();
  } else if constexpr (std::is_same_v<T, bool>) {
    if (value->kind() == JsonValue::Kind::Bool)
      return value->asBool();
  } else {
    static_assert(std::is_same_v<T, int64_t>);
    if (std::optional<int64_t> number = value->asInt())
      return number;
  }
  setError(error, fmt::format("meta.json: \"{}\" has the wrong type", key));
  return std::nullopt;
}

/// Parses an enum field of meta.json with the scheme model's own parser.
template <typename Enum>
std::optional<Enum> enumField(const JsonValue &meta, std::string_view key,
                              std::optional<Enum> (*parse)(std::string_view),
                              std::string *error) {
  std::optional<std::string> text = field<std::string>(meta, key, error);
  if (!text)
    return std::nullopt;
  std::optional<Enum> value = parse(*text);
  if (!value)
    setError(error, fmt::format("meta.json: unknown {} '{}'", key, *text));
  return value;
}

std::optional<Scheme> schemeFromMeta(const JsonValue &meta,
                                     std::string *error) {
  auto element = field<std::string>(meta, "element", error);
  if (!element)
    return std::nullopt;
  std::string reason;
  std::optional<Format> format = lookupFormat(*element, &reason);
  if (!format) {
    setError(error, "meta.json: element '" + *element + "': " + reason);
    return std::nullopt;
  }
  auto name = field<std::string>(meta, "scheme", error);
  auto packing = enumField(meta, "packing", parsePacking, error);
  auto granularity = enumField(meta, "granularity", parseGranularity, error);
  auto type = enumField(meta, "scale_type", parseScaleType, error);
  auto rule = enumField(meta, "scale_rule", parseScaleRule, error);
  auto mode = enumField(meta, "scale_mode", parseScaleMode, error);
  auto layout = enumField(meta, "scale_layout", parseScaleLayout, error);
  auto global = enumField(meta, "global_scale", parseGlobalScale, error);
  auto axis = field<int64_t>(meta, "axis", error);
  auto groupSize = field<int64_t>(meta, "group_size", error);
  auto blockRows = field<int64_t>(meta, "block_rows", error);
  auto blockCols = field<int64_t>(meta, "block_cols", error);
  auto allowTail = field<bool>(meta, "allow_tail", error);
  auto zeroPoint = field<bool>(meta, "zero_point", error);
  // Each lookup sets `error` on failure; the first missing one wins below.
  if (!name || !packing || !granularity || !type || !rule || !mode || !layout ||
      !global || !axis || !groupSize || !blockRows || !blockCols ||
      !allowTail || !zeroPoint)
    return std::nullopt;
  Scheme scheme{*name, *format, ScaleSpec{}, *packing};
  scheme.scale.granularity = *granularity;
  scheme.scale.axis = int(*axis);
  scheme.scale.groupSize = int(*groupSize);
  scheme.scale.blockRows = int(*blockRows);
  scheme.scale.blockCols = int(*blockCols);
  scheme.scale.allowTail = *allowTail;
  scheme.scale.type = *type;
  scheme.scale.rule = *rule;
  scheme.scale.mode = *mode;
  scheme.scale.layout = *layout;
  scheme.scale.zeroPoint = *zeroPoint;
  scheme.scale.globalScale = *global;
  if (!validateScheme(scheme, &reason)) {
    setError(error, "meta.json describes an invalid scheme: " + reason);
    return std::nullopt;
  }
  return scheme;
}

std::string pathIn(const std::string &directory, const char *name) {
  return (std::filesystem::path(directory) / name).string();
}

} // namespace

npy::DType scaleFileDType(ScaleType type) {
  switch (type) {
  case ScaleType::F32:
    return npy::DType::F32;
  case ScaleType::F16:
    return npy::DType::F16;
  case ScaleType::BF16:
    return npy::DType::U16;
  case ScaleType::E8M0:
  case ScaleType::UE4M3:
    return npy::DType::U8;
  }
  return npy::DType::F32;
}

npy::Array scalesToArray(const QuantizedTensor &tensor) {
  Shape2D shape = scaleShape(tensor.scheme, tensor.rows, tensor.cols);
  npy::Array array;
  array.dtype = scaleFileDType(tensor.scheme.scale.type);
  array.shape = {shape.rows, shape.cols};
  size_t width = npy::dtypeSize(array.dtype);
  array.bytes.reserve(tensor.scaleCodes.size() * width);
  // Codes are stored little-endian in the dtype's width: the f32 bits, the
  // f16/bf16 bits or the byte.
  for (uint32_t code : tensor.scaleCodes)
    for (size_t byte = 0; byte < width; ++byte)
      array.bytes.push_back(uint8_t(code >> (8 * byte)));
  return array;
}

std::optional<std::vector<uint32_t>> scalesFromArray(const npy::Array &array,
                                                     const Scheme &scheme,
                                                     int64_t rows, int64_t cols,
                                                     std::string *error) {
  if (!checkArray(array, scaleFileDType(scheme.scale.type),
                  scaleShape(scheme, rows, cols), "the scale file", error))
    return std::nullopt;
  size_t width = npy::dtypeSize(array.dtype);
  std::vector<uint32_t> codes(array.bytes.size() / width, 0);
  for (size_t index = 0; index < codes.size(); ++index)
    for (size_t byte = 0; byte < width; ++byte)
      codes[index] |= uint32_t(array.bytes[index * width + byte]) << (8 * byte);
  return codes;
}

std::optional<std::vector<uint8_t>> zerosFromArray(const npy::Array &array,
                                                   const Scheme &scheme,
                                                   int64_t rows, int64_t cols,
                                                   std::string *error) {
  if (!checkArray(array, npy::DType::U8, scaleShape(scheme, rows, cols),
                  "the zero-point file", error))
    return std::nullopt;
  return array.bytes;
}

std::optional<float> globalFromArray(const npy::Array &array,
                                     std::string *error) {
  if (array.dtype != npy::DType::F32 || array.elementCount() != 1) {
    setError(error,
             fmt::format("the global scale file must hold one "
                         "float32, got {} of shape {}",
                         npy::dtypeName(array.dtype), array.shapeText()));
    return std::nullopt;
  }
  return array.values<float>()[0];
}

JsonValue makeMeta(const QuantizedTensor &tensor, std::string_view inputDType) {
  const Scheme &scheme = tensor.scheme;
  const ScaleSpec &scale = scheme.scale;
  auto text = [](std::string_view value) {
    return JsonValue::string(std::string(value));
  };
  // Alphabetical, as meta.json has always been written.
  JsonValue meta = JsonValue::object();
  meta.set("allow_tail", JsonValue::boolean(scale.allowTail));
  meta.set("axis", JsonValue::number(int64_t(scale.axis)));
  meta.set("block_cols", JsonValue::number(int64_t(scale.blockCols)));
  meta.set("block_rows", JsonValue::number(int64_t(scale.blockRows)));
  meta.set("cols", JsonValue::number(int64_t(tensor.cols)));
  meta.set("element", text(scheme.element.name()));
  meta.set("global_scale", text(globalScaleName(scale.globalScale)));
  meta.set("granularity", text(granularityName(scale.granularity)));
  meta.set("group_size", JsonValue::number(int64_t(scale.groupSize)));
  meta.set("input_dtype", text(inputDType));
  meta.set("packing", text(packingName(scheme.packing)));
  meta.set("rows", JsonValue::number(int64_t(tensor.rows)));
  meta.set("scale_layout", text(scaleLayoutName(scale.layout)));
  meta.set("scale_mode", text(scaleModeName(scale.mode)));
  meta.set("scale_rule", text(scaleRuleName(scale.rule)));
  meta.set("scale_type", text(scaleTypeName(scale.type)));
  meta.set("scheme", text(scheme.name));
  meta.set("zero_point", JsonValue::boolean(scale.zeroPoint));
  return meta;
}

bool writeQuantizedDirectory(const std::string &directory,
                             const QuantizedTensor &tensor,
                             std::string_view inputDType, std::string *error) {
  Shape2D codes = codesShape(tensor.scheme, tensor.rows, tensor.cols);
  std::vector<std::pair<const char *, npy::Array>> arrays;
  arrays.emplace_back(
      "q.npy", npy::Array::fromValues<uint8_t>(
                   npy::DType::U8, {codes.rows, codes.cols}, tensor.codes));
  arrays.emplace_back("scales.npy", scalesToArray(tensor));
  if (tensor.scheme.scale.zeroPoint) {
    Shape2D shape = scaleShape(tensor.scheme, tensor.rows, tensor.cols);
    arrays.emplace_back(
        "zeros.npy", npy::Array::fromValues<uint8_t>(npy::DType::U8,
                                                     {shape.rows, shape.cols},
                                                     tensor.zeros));
  }
  bool hasGlobal = tensor.scheme.scale.globalScale != GlobalScale::None;
  if (hasGlobal) {
    float global = tensor.globalScale;
    arrays.emplace_back("global_scale.npy",
                        npy::Array::fromValues<float>(npy::DType::F32, {1},
                                                      std::span(&global, 1)));
  }

  std::error_code code;
  std::filesystem::create_directories(directory, code);
  if (code) {
    setError(error,
             "cannot create directory '" + directory + "': " + code.message());
    return false;
  }
  runtime::StagedFiles staged;
  for (const auto &[name, array] : arrays) {
    std::optional<std::string> contents = npy::serializeNpy(array, error);
    if (!contents || !staged.stage(pathIn(directory, name), *contents, error))
      return false;
  }
  // meta.json last, so a reader that finds it finds the arrays too.
  if (!staged.stage(pathIn(directory, "meta.json"),
                    makeMeta(tensor, inputDType).serialize(), error) ||
      !staged.commit(error))
    return false;
  if (!tensor.scheme.scale.zeroPoint)
    std::filesystem::remove(pathIn(directory, "zeros.npy"), code);
  if (!hasGlobal)
    std::filesystem::remove(pathIn(directory, "global_scale.npy"), code);
  return true;
}

std::optional<QuantizedTensor>
readQuantizedDirectory(const std::string &directory, std::string *error) {
  std::string text;
  if (!runtime::readFile(pathIn(directory, "meta.json"), text, error))
    return std::nullopt;
  std::string reason;
  std::optional<JsonValue> meta = json::parseJson(text, &reason);
  if (!meta) {
    setError(error, "malformed meta.json: " + reason);
    return std::nullopt;
  }
  if (!meta->isObject()) {
    setError(error, "malformed meta.json: not a JSON object");
    return std::nullopt;
  }
  std::optional<Scheme> scheme = schemeFromMeta(*meta, error);
  auto rows = field<int64_t>(*meta, "rows", error);
  auto cols = field<int64_t>(*meta, "cols", error);
  if (!scheme || !rows || !cols)
    return std::nullopt;
  if (*rows <= 0 || *cols <= 0) {
    setError(error,
             fmt::format("meta.json: shape {}x{} is empty", *rows, *cols));
    return std::nullopt;
  }
  QuantizedTensor tensor(*scheme);
  tensor.rows = *rows;
  tensor.cols = *cols;

  auto codes = npy::readNpy(pathIn(directory, "q.npy"), error);
  if (!codes || !checkArray(*codes, npy::DType::U8,
                            codesShape(*scheme, *rows, *cols), "q.npy", error))
    return std::nullopt;
  tensor.codes = codes->bytes;
  auto scales = npy::readNpy(pathIn(directory, "scales.npy"), error);
  if (!scales)
    return std::nullopt;
  auto scaleCodes = scalesFromArray(*scales, *scheme, *rows, *cols, error);
  if (!scaleCodes)
    return std::nullopt;
  tensor.scaleCodes = std::move(*scaleCodes);
  if (scheme->scale.zeroPoint) {
    auto zeros = npy::readNpy(pathIn(directory, "zeros.npy"), error);
    if (!zeros)
      return std::nullopt;
    auto zeroPoints = zerosFromArray(*zeros, *scheme, *rows, *cols, error);
    if (!zeroPoints)
      return std::nullopt;
    tensor.zeros = std::move(*zeroPoints);
  }
  if (scheme->scale.globalScale != GlobalScale::None) {
    auto global = npy::readNpy(pathIn(directory, "global_scale.npy"), error);
    if (!global)
      return std::nullopt;
    auto value = globalFromArray(*global, error);
    if (!value)
      return std::nullopt;
    tensor.globalScale = *value;
  }
  if (!validateQuantized(tensor, error))
    return std::nullopt;
  return tensor;
}

} // namespace lowbit::cli
