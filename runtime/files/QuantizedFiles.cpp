//===- QuantizedFiles.cpp - A quantized tensor as a directory -------------===//

#include "runtime/files/QuantizedFiles.h"

#include "format/Codec.h"
#include "runtime/core/AtomicDirectory.h"
#include "runtime/core/Sha256.h"

#include <algorithm>
#include <cerrno>
#include <map>
#include <tuple>
#include <type_traits>

#include <fmt/format.h>

namespace lowbit::files {
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
  // Read as int64 and bounded, never narrowed: a field the granularity
  // uses must be in range, one it does not use keeps ScaleSpec's default
  // (what makeMeta writes), so two meta.json files that mean the same are
  // the same.
  const ScaleSpec defaults;
  bool usesAxis = *granularity == Granularity::PerChannel ||
                  *granularity == Granularity::Group;
  auto boundedField = [&](const char *key, int64_t value, bool used,
                          int64_t defaultValue,
                          std::optional<int> (*narrow)(int64_t, std::string *),
                          int &out) {
    if (!used) {
      if (value == defaultValue)
        return true;
      setError(error, fmt::format("meta.json: \"{}\" is {} but {} scales do "
                                  "not use it (want {})",
                                  key, value, granularityName(*granularity),
                                  defaultValue));
      return false;
    }
    std::string reason;
    std::optional<int> narrowed = narrow(value, &reason);
    if (!narrowed) {
      setError(error, fmt::format("meta.json: \"{}\": {}", key, reason));
      return false;
    }
    out = *narrowed;
    return true;
  };
  auto groupNarrow = [](int64_t value, std::string *reason) {
    return scaleExtentFromInt64("group size", value, reason);
  };
  auto blockNarrow = [](int64_t value, std::string *reason) {
    return scaleExtentFromInt64("block dimension", value, reason);
  };
  bool isBlock = *granularity == Granularity::Block;
  if (!boundedField("axis", *axis, usesAxis, defaults.axis, axisFromInt64,
                    scheme.scale.axis) ||
      !boundedField("group_size", *groupSize,
                    *granularity == Granularity::Group, defaults.groupSize,
                    groupNarrow, scheme.scale.groupSize) ||
      !boundedField("block_rows", *blockRows, isBlock, defaults.blockRows,
                    blockNarrow, scheme.scale.blockRows) ||
      !boundedField("block_cols", *blockCols, isBlock, defaults.blockCols,
                    blockNarrow, scheme.scale.blockCols))
    return std::nullopt;
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
  // A user scheme (`quantize --spec "quantize scheme(...)"`) has no name:
  // the validated fields are the whole scheme.
  if (name->empty())
    return scheme;
  // "scheme" names the scheme the fields spell out; only what quantize's
  // options change (--rule, --global, --layout, --scale) may differ.
  std::optional<Scheme> named = lookupScheme(*name, &reason);
  if (!named) {
    setError(error, "meta.json: " + reason);
    return std::nullopt;
  }
  auto yesNo = [](bool value) { return std::string(value ? "true" : "false"); };
  const ScaleSpec &want = named->scale, &have = scheme.scale;
  const std::tuple<const char *, std::string, std::string> fixed[] = {
      {"element", named->element.name(), scheme.element.name()},
      {"packing", std::string(packingName(named->packing)),
       std::string(packingName(scheme.packing))},
      {"granularity", std::string(granularityName(want.granularity)),
       std::string(granularityName(have.granularity))},
      {"axis", std::to_string(want.axis), std::to_string(have.axis)},
      {"group_size", std::to_string(want.groupSize),
       std::to_string(have.groupSize)},
      {"block_rows", std::to_string(want.blockRows),
       std::to_string(have.blockRows)},
      {"block_cols", std::to_string(want.blockCols),
       std::to_string(have.blockCols)},
      {"allow_tail", yesNo(want.allowTail), yesNo(have.allowTail)},
      {"scale_type", std::string(scaleTypeName(want.type)),
       std::string(scaleTypeName(have.type))},
      {"zero_point", yesNo(want.zeroPoint), yesNo(have.zeroPoint)},
  };
  for (const auto &[key, expected, actual] : fixed)
    if (expected != actual) {
      setError(error, fmt::format("meta.json: \"scheme\" is '{}', whose {} "
                                  "is {}, but \"{}\" says {}",
                                  *name, key, expected, key, actual));
      return std::nullopt;
    }
  return scheme;
}

/// Every file a quantized set can hold; manifest.json lists the others.
constexpr std::string_view kSetFileNames[] = {"q.npy",     "scales.npy",
                                              "zeros.npy", "global_scale.npy",
                                              "meta.json", "manifest.json"};
constexpr std::string_view kManifestName = "manifest.json";
constexpr std::string_view kManifestFormat = "lowbit-quantized-set-1";

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

JsonValue makeMeta(const QuantizedTensor &tensor, std::string_view inputDType,
                   std::span<const int64_t> shape) {
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
  if (shape.size() > 2) {
    JsonValue dims = JsonValue::array();
    for (int64_t dim : shape)
      dims.push(JsonValue::number(dim));
    meta.set("shape", std::move(dims));
  }
  meta.set("zero_point", JsonValue::boolean(scale.zeroPoint));
  return meta;
}

bool flattenLeadingAxes(npy::Array &array, std::span<const int64_t> leading) {
  if (array.shape.size() != leading.size() + 1 ||
      !std::equal(leading.begin(), leading.end(), array.shape.begin()))
    return false;
  int64_t rows = 1;
  for (int64_t dim : leading)
    rows *= dim;
  array.shape = {rows, array.shape.back()};
  return true;
}

bool isQuantizedSetName(std::string_view name) {
  for (std::string_view known : kSetFileNames)
    // Exactly a set file, or a set file's temporary left by an older lowbit
    // that renamed file by file ("meta.json.tmp.<pid>.<n>").
    if (name == known || (name.starts_with(known) &&
                          name.substr(known.size()).starts_with(".tmp.")))
      return true;
  return false;
}

bool writeQuantizedDirectory(const std::string &directory,
                             const QuantizedTensor &tensor,
                             std::string_view inputDType, std::string *error,
                             std::span<const int64_t> shape) {
  bool nd = shape.size() > 2;
  std::vector<int64_t> leading(shape.begin(),
                               nd ? shape.end() - 1 : shape.begin());
  if (nd) {
    int64_t rows = 1;
    for (int64_t dim : leading)
      rows *= dim;
    if (rows != tensor.rows || shape.back() != tensor.cols) {
      setError(error,
               fmt::format("the shape ({}) does not flatten to {}x{}",
                           fmt::join(shape, ", "), tensor.rows, tensor.cols));
      return false;
    }
  }
  // N-D: the arrays whose rows are the tensor's rows keep its leading axes.
  auto keepLeading = [&](npy::Array array, bool followsRows) {
    if (nd && followsRows) {
      int64_t width = array.shape.back();
      array.shape = leading;
      array.shape.push_back(width);
    }
    return array;
  };
  bool scalesFollow = scaleRowsFollowRows(tensor.scheme);
  Shape2D codes = codesShape(tensor.scheme, tensor.rows, tensor.cols);
  std::vector<std::pair<const char *, npy::Array>> arrays;
  arrays.emplace_back(
      "q.npy",
      keepLeading(npy::Array::fromValues<uint8_t>(
                      npy::DType::U8, {codes.rows, codes.cols}, tensor.codes),
                  true));
  arrays.emplace_back("scales.npy",
                      keepLeading(scalesToArray(tensor), scalesFollow));
  if (tensor.scheme.scale.zeroPoint) {
    Shape2D scales = scaleShape(tensor.scheme, tensor.rows, tensor.cols);
    arrays.emplace_back(
        "zeros.npy", keepLeading(npy::Array::fromValues<uint8_t>(
                                     npy::DType::U8, {scales.rows, scales.cols},
                                     tensor.zeros),
                                 scalesFollow));
  }
  if (tensor.scheme.scale.globalScale != GlobalScale::None) {
    float global = tensor.globalScale;
    arrays.emplace_back("global_scale.npy",
                        npy::Array::fromValues<float>(npy::DType::F32, {1},
                                                      std::span(&global, 1)));
  }
  std::vector<runtime::DirectoryFile> files;
  for (const auto &[name, array] : arrays) {
    std::optional<std::string> contents = npy::serializeNpy(array, error);
    if (!contents)
      return false;
    files.push_back({name, std::move(*contents)});
  }
  files.push_back(
      {"meta.json", makeMeta(tensor, inputDType, shape).serialize()});
  // The manifest covers every other file, meta.json included.
  JsonValue listed = JsonValue::object();
  for (const runtime::DirectoryFile &file : files) {
    JsonValue entry = JsonValue::object();
    entry.set("bytes", JsonValue::number(int64_t(file.bytes.size())));
    entry.set("sha256", JsonValue::string(runtime::sha256Hex(file.bytes)));
    listed.set(file.name, std::move(entry));
  }
  JsonValue manifest = JsonValue::object();
  manifest.set("format", JsonValue::string(std::string(kManifestFormat)));
  manifest.set("files", std::move(listed));
  files.push_back({std::string(kManifestName), manifest.serialize()});
  return runtime::replaceDirectory(directory, files, isQuantizedSetName, error);
}

namespace {

constexpr size_t kMaxJsonBytes = size_t(1) << 16;
/// Room for a .npy header beyond its data (lowbit writes about 128 bytes).
constexpr size_t kMaxNpyHeaderBytes = size_t(1) << 16;

/// The files manifest.json lists: name -> (bytes, sha256).
struct ManifestEntry {
  int64_t bytes = 0;
  std::string sha256;
};
using Manifest = std::map<std::string, ManifestEntry, std::less<>>;

std::optional<Manifest> parseManifest(std::string_view text,
                                      std::string *error) {
  std::string reason;
  std::optional<JsonValue> document = json::parseJson(text, &reason);
  auto bad = [&](std::string message) -> std::optional<Manifest> {
    setError(error, "manifest.json: " + message);
    return std::nullopt;
  };
  if (!document)
    return bad("malformed: " + reason);
  const JsonValue *format =
      document->isObject() ? document->get("format") : nullptr;
  const JsonValue *files =
      document->isObject() ? document->get("files") : nullptr;
  if (!format || !format->isString() || format->text() != kManifestFormat)
    return bad(fmt::format("not a \"{}\" manifest", kManifestFormat));
  if (!files || !files->isObject())
    return bad("\"files\" must be an object");
  Manifest manifest;
  for (const auto &[name, entry] : files->members()) {
    if (!isQuantizedSetName(name) || name == kManifestName ||
        name.find(".tmp.") != std::string::npos)
      return bad(fmt::format("lists '{}', which is not a file of a quantized "
                             "set",
                             name));
    const JsonValue *bytes = entry.isObject() ? entry.get("bytes") : nullptr;
    const JsonValue *sha = entry.isObject() ? entry.get("sha256") : nullptr;
    std::optional<int64_t> size = bytes ? bytes->asInt() : std::nullopt;
    if (!size || *size < 0 || !sha || !sha->isString() ||
        sha->text().size() != 64 ||
        sha->text().find_first_not_of("0123456789abcdef") != std::string::npos)
      return bad(fmt::format("the entry of '{}' needs \"bytes\" (a size) and "
                             "\"sha256\" (64 hex digits)",
                             name));
    manifest[name] = {*size, sha->text()};
  }
  return manifest;
}

/// Reads `name`, which must match its manifest entry in size and checksum.
bool readListed(const runtime::DirectoryReader &reader,
                const Manifest &manifest, const std::string &name,
                size_t maxBytes, std::string &bytes, std::string *error,
                int *errnoOut) {
  auto entry = manifest.find(name);
  if (entry == manifest.end()) {
    setError(error, "manifest.json does not list " + name);
    return false;
  }
  if (uint64_t(entry->second.bytes) > maxBytes) {
    setError(error, fmt::format("manifest.json gives {} {} bytes, more than "
                                "its shape allows ({})",
                                name, entry->second.bytes, maxBytes));
    return false;
  }
  if (!reader.read(name, maxBytes, bytes, error, errnoOut))
    return false;
  if (int64_t(bytes.size()) != entry->second.bytes) {
    setError(error, fmt::format("{} has {} bytes, manifest.json says {}: the "
                                "set is incomplete or mixed",
                                name, bytes.size(), entry->second.bytes));
    return false;
  }
  if (runtime::sha256Hex(bytes) != entry->second.sha256) {
    setError(error, fmt::format("{} does not match its checksum in "
                                "manifest.json: the set is corrupt or mixed",
                                name));
    return false;
  }
  return true;
}

/// Every element code must be one of the format's: FP6 codes have their
/// two high bits clear, and the padding nibble of an odd row is zero.
bool checkElementCodes(const QuantizedTensor &tensor, std::string *error) {
  const Scheme &scheme = tensor.scheme;
  uint32_t mask = scheme.element.codeMask();
  Shape2D shape = codesShape(scheme, tensor.rows, tensor.cols);
  for (int64_t row = 0; row < shape.rows; ++row)
    for (int64_t byteCol = 0; byteCol < shape.cols; ++byteCol) {
      uint8_t byte = tensor.codes[size_t(row * shape.cols + byteCol)];
      if (scheme.packing == Packing::Byte) {
        if (byte > mask) {
          setError(error, fmt::format("q.npy [{}, {}] holds 0x{:02x}, not a "
                                      "code of {} ({} bits)",
                                      row, byteCol, byte, scheme.element.name(),
                                      scheme.element.bits()));
          return false;
        }
        continue;
      }
      for (int half = 0; half < 2; ++half) {
        int64_t col = byteCol * 2 + half;
        uint32_t code = half ? byte >> 4 : byte & 0xF;
        bool padding = col >= tensor.cols;
        if (padding ? code != 0 : code > mask) {
          setError(error,
                   padding ? fmt::format("q.npy [{}, {}]: the padding nibble "
                                         "of a row of {} columns must be 0, "
                                         "got 0x{:x}",
                                         row, byteCol, tensor.cols, code)
                           : fmt::format("q.npy element [{}, {}] holds 0x{:x}, "
                                         "not a code of {} ({} bits)",
                                         row, col, code, scheme.element.name(),
                                         scheme.element.bits()));
          return false;
        }
      }
    }
  return true;
}

/// The keys makeMeta writes; any other is refused.
constexpr std::string_view kMetaKeys[] = {
    "allow_tail", "axis",         "block_cols",   "block_rows", "cols",
    "element",    "global_scale", "granularity",  "group_size", "input_dtype",
    "packing",    "rows",         "scale_layout", "scale_mode", "scale_rule",
    "scale_type", "scheme",       "shape",        "zero_point"};

/// One attempt at reading the set in `reader`. `missing` is set when a
/// file the manifest lists is gone (a writer may have swapped the set).
std::optional<QuantizedTensor> readSet(const runtime::DirectoryReader &reader,
                                       std::string *error, bool &missing,
                                       std::vector<int64_t> &shape) {
  int code = 0;
  std::string manifestText;
  if (!reader.read(std::string(kManifestName), kMaxJsonBytes, manifestText,
                   error, &code)) {
    if (code == ENOENT)
      setError(error, "no manifest.json: not a complete output of 'lowbit "
                      "quantize' (an interrupted run, or one written before "
                      "manifests)");
    return std::nullopt;
  }
  std::optional<Manifest> manifest = parseManifest(manifestText, error);
  if (!manifest)
    return std::nullopt;
  // A set file that the manifest does not list belongs to another set.
  for (const std::string &name : reader.names())
    if (isQuantizedSetName(name) && name != kManifestName &&
        !manifest->count(name)) {
      setError(error, fmt::format("{} is not listed in manifest.json (a file "
                                  "of another set?)",
                                  name));
      return std::nullopt;
    }
  auto readFile = [&](const std::string &name, size_t maxBytes,
                      std::string &bytes) {
    int failure = 0;
    bool read =
        readListed(reader, *manifest, name, maxBytes, bytes, error, &failure);
    missing = missing || failure == ENOENT;
    return read;
  };

  std::string text;
  if (!readFile("meta.json", kMaxJsonBytes, text))
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
  for (const auto &[key, value] : meta->members())
    if (std::find(std::begin(kMetaKeys), std::end(kMetaKeys), key) ==
        std::end(kMetaKeys)) {
      setError(error, fmt::format("meta.json has an unknown key \"{}\"", key));
      return std::nullopt;
    }
  std::optional<Scheme> scheme = schemeFromMeta(*meta, error);
  auto rows = field<int64_t>(*meta, "rows", error);
  auto cols = field<int64_t>(*meta, "cols", error);
  auto inputDType = field<std::string>(*meta, "input_dtype", error);
  if (!scheme || !rows || !cols || !inputDType)
    return std::nullopt;
  if (*rows <= 0 || *cols <= 0) {
    setError(error,
             fmt::format("meta.json: shape {}x{} is empty", *rows, *cols));
    return std::nullopt;
  }
  if (!validateShape(*rows, *cols, &reason)) {
    setError(error, "meta.json: " + reason);
    return std::nullopt;
  }
  // An N-D set: "shape" of rank 3 to 8 that flattens to rows x cols.
  shape = {*rows, *cols};
  std::vector<int64_t> leading;
  if (const JsonValue *dims = meta->get("shape")) {
    bool valid = dims->isArray() && dims->items().size() > 2 &&
                 dims->items().size() <= size_t(npy::kMaxNpyRank);
    std::vector<int64_t> values;
    int64_t product = 1;
    for (size_t i = 0; valid && i < dims->items().size(); ++i) {
      std::optional<int64_t> dim = dims->items()[i].asInt();
      bool last = i + 1 == dims->items().size();
      valid = dim && *dim >= 1 && *dim <= (last ? *cols : *rows);
      if (valid) {
        values.push_back(*dim);
        int64_t factor = last ? 1 : *dim;
        valid = !__builtin_mul_overflow(product, factor, &product) &&
                product <= *rows;
      }
    }
    if (!valid || product != *rows || values.back() != *cols) {
      setError(error, fmt::format("meta.json: 'shape' must list 3 to {} "
                                  "dimensions whose leading ones multiply "
                                  "to rows ({}) and whose last is cols ({})",
                                  npy::kMaxNpyRank, *rows, *cols));
      return std::nullopt;
    }
    shape = values;
    leading.assign(values.begin(), values.end() - 1);
  }
  bool scalesFollow = scaleRowsFollowRows(*scheme);
  if (*inputDType != "f32" && *inputDType != "f16" && *inputDType != "bf16") {
    setError(error, fmt::format("meta.json: unknown input_dtype '{}' (want "
                                "f32, f16 or bf16)",
                                *inputDType));
    return std::nullopt;
  }
  // The files a scheme has, and no others.
  bool hasZeros = scheme->scale.zeroPoint;
  bool hasGlobal = scheme->scale.globalScale != GlobalScale::None;
  for (auto [name, expected] : {std::pair{"zeros.npy", hasZeros},
                                std::pair{"global_scale.npy", hasGlobal}})
    if (manifest->count(name) && !expected) {
      setError(error, fmt::format("the set has {} but its scheme '{}' does "
                                  "not use one",
                                  name, scheme->name));
      return std::nullopt;
    }

  QuantizedTensor tensor(*scheme);
  tensor.rows = *rows;
  tensor.cols = *cols;
  // Each array is read from the bytes the manifest vouched for, at most
  // its shape's size plus a header.
  auto readArray = [&](const char *name, Shape2D shape,
                       size_t width) -> std::optional<npy::Array> {
    std::string bytes;
    size_t limit = size_t(shape.rows * shape.cols) * width + kMaxNpyHeaderBytes;
    if (!readFile(name, limit, bytes))
      return std::nullopt;
    std::string parseError;
    std::optional<npy::Array> array = npy::parseNpy(
        bytes, &parseError, leading.empty() ? 2 : npy::kMaxNpyRank);
    if (!array)
      setError(error, fmt::format("{}: {}", name, parseError));
    // An N-D set's arrays read as the 2-D ones they flatten to.
    bool followsRows = std::string_view(name) == "q.npy" || scalesFollow;
    if (array && !leading.empty() && followsRows)
      flattenLeadingAxes(*array, leading);
    return array;
  };
  Shape2D codeShape = codesShape(*scheme, *rows, *cols);
  Shape2D scales = scaleShape(*scheme, *rows, *cols);
  auto codes = readArray("q.npy", codeShape, 1);
  if (!codes || !checkArray(*codes, npy::DType::U8, codeShape, "q.npy", error))
    return std::nullopt;
  tensor.codes = std::move(codes->bytes);
  auto scaleArray = readArray(
      "scales.npy", scales, npy::dtypeSize(scaleFileDType(scheme->scale.type)));
  if (!scaleArray)
    return std::nullopt;
  auto scaleCodes = scalesFromArray(*scaleArray, *scheme, *rows, *cols, error);
  if (!scaleCodes)
    return std::nullopt;
  tensor.scaleCodes = std::move(*scaleCodes);
  if (hasZeros) {
    auto zeros = readArray("zeros.npy", scales, 1);
    if (!zeros)
      return std::nullopt;
    auto zeroPoints = zerosFromArray(*zeros, *scheme, *rows, *cols, error);
    if (!zeroPoints)
      return std::nullopt;
    tensor.zeros = std::move(*zeroPoints);
  }
  if (hasGlobal) {
    auto global = readArray("global_scale.npy", Shape2D{1, 1}, 4);
    if (!global)
      return std::nullopt;
    auto value = globalFromArray(*global, error);
    if (!value)
      return std::nullopt;
    tensor.globalScale = *value;
  }
  if (!checkElementCodes(tensor, error) || !validateQuantized(tensor, error))
    return std::nullopt;
  return tensor;
}

} // namespace

std::optional<QuantizedTensor>
readQuantizedDirectory(const std::string &directory, std::string *error,
                       std::vector<int64_t> *shape) {
  // A writer may swap a new set in while this one is read: the read then
  // fails on a file that is gone (never mixes: every file comes through
  // one directory descriptor). Read the new set instead, a few times.
  for (int attempt = 0;; ++attempt) {
    runtime::DirectoryReader reader;
    if (!reader.open(directory, error))
      return std::nullopt;
    bool missing = false;
    std::vector<int64_t> setShape;
    std::optional<QuantizedTensor> tensor =
        readSet(reader, error, missing, setShape);
    if (tensor && shape)
      *shape = std::move(setShape);
    if (tensor || !missing || reader.stillAt() || attempt == 4)
      return tensor;
  }
}

} // namespace lowbit::files
