//===- Scheme.cpp - Named schemes, validation and tensor shapes -----------===//

#include "format/Scheme.h"

#include <cmath>
#include <utility>

namespace lowbit {
namespace {

void setError(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
}

/// For value >= 0 and divisor > 0; cannot overflow, whatever the sizes.
int64_t ceilDiv(int64_t value, int64_t divisor) {
  return value / divisor + (value % divisor != 0);
}

int64_t roundUp(int64_t value, int64_t multiple) {
  return ceilDiv(value, multiple) * multiple;
}

/// Keeps kDynamic dynamic through shape arithmetic.
template <typename Fn> int64_t mapDim(int64_t dim, Fn fn) {
  return dim == kDynamic ? kDynamic : fn(dim);
}

Format format(const char *name) { return *lookupFormat(name); }

ScaleSpec groupScale(int groupSize, ScaleType type, ScaleRule rule) {
  ScaleSpec scale;
  scale.granularity = Granularity::Group;
  scale.axis = 1;
  scale.groupSize = groupSize;
  // Every named scheme handles a short last group (ragged shapes), so that
  // any [rows, cols] can be quantized; the amax of a short group is taken
  // over the elements it has.
  scale.allowTail = true;
  scale.type = type;
  scale.rule = rule;
  return scale;
}

Scheme makeScheme(const char *name, const char *element, ScaleSpec scale,
                  Packing packing = Packing::Byte) {
  return Scheme{name, format(element), scale, packing};
}

std::vector<Scheme> buildNamedSchemes() {
  ScaleSpec perTensor; // f32, absmax, dynamic
  ScaleSpec mx = groupScale(32, ScaleType::E8M0, ScaleRule::E8M0Floor);
  ScaleSpec nvfp4 = groupScale(16, ScaleType::UE4M3, ScaleRule::AbsMax);
  nvfp4.globalScale = GlobalScale::DecodeMultiplier;
  ScaleSpec int4g128 = groupScale(128, ScaleType::F16, ScaleRule::MinMax);
  int4g128.zeroPoint = true;
  ScaleSpec int8g64 = groupScale(64, ScaleType::F32, ScaleRule::AbsMax);
  return {
      makeScheme("fp8_e4m3", "e4m3", perTensor),
      makeScheme("fp8_e5m2", "e5m2", perTensor),
      makeScheme("mxfp8", "e4m3", mx),
      makeScheme("mxfp6_e2m3", "e2m3", mx),
      makeScheme("mxfp6_e3m2", "e3m2", mx),
      makeScheme("mxfp4", "e2m1", mx, Packing::Nibble),
      makeScheme("nvfp4", "e2m1", nvfp4, Packing::Nibble),
      makeScheme("int4_g128", "uint4", int4g128, Packing::Nibble),
      makeScheme("int8", "int8", perTensor),
      makeScheme("int8_g64", "int8", int8g64),
  };
}

template <typename Enum, size_t N>
std::optional<Enum> parseEnum(std::string_view name, const Enum (&values)[N],
                              std::string_view (*nameOf)(Enum)) {
  for (Enum value : values)
    if (nameOf(value) == name)
      return value;
  return std::nullopt;
}

} // namespace

const std::vector<Scheme> &namedSchemes() {
  static const std::vector<Scheme> schemes = buildNamedSchemes();
  return schemes;
}

std::optional<Scheme> lookupScheme(std::string_view name, std::string *error) {
  for (const Scheme &scheme : namedSchemes())
    if (scheme.name == name)
      return scheme;
  std::string known;
  for (const Scheme &scheme : namedSchemes())
    known += (known.empty() ? "" : ", ") + scheme.name;
  setError(error,
           "unknown scheme '" + std::string(name) + "' (known: " + known + ")");
  return std::nullopt;
}

const Scheme *findNamedScheme(const Scheme &scheme) {
  for (const Scheme &named : namedSchemes())
    if (named == scheme)
      return &named;
  return nullptr;
}

bool isNibblePacked(Packing packing) { return packing != Packing::Byte; }

int containerBits(const Scheme &scheme) {
  if (isNibblePacked(scheme.packing))
    return 4;
  return 8;
}

std::optional<std::string> referenceOnlyReason(const Scheme &scheme) {
  if (scheme.scale.rule == ScaleRule::AbsMaxReciprocal ||
      scheme.scale.rule == ScaleRule::SignedMaxReciprocal)
    return "the scale rule " + std::string(scaleRuleName(scheme.scale.rule)) +
           " (llama.cpp's) has no kernel yet, only the reference quantizer";
  if (scheme.packing == Packing::NibbleHalves)
    return std::string("the nibble_halves packing (llama.cpp's Q4_0) has no "
                       "kernel yet, only the reference quantizer");
  return std::nullopt;
}

std::optional<int> scaleExtentFromInt64(std::string_view what, int64_t value,
                                        std::string *error) {
  if (value >= 1 && value <= kMaxScaleExtent)
    return int(value);
  setError(error, value < 1 ? std::string(what) + " must be positive, got " +
                                  std::to_string(value)
                            : std::string(what) + " " + std::to_string(value) +
                                  " is larger than the maximum 2^30 (" +
                                  std::to_string(kMaxScaleExtent) + ")");
  return std::nullopt;
}

std::optional<int> axisFromInt64(int64_t value, std::string *error) {
  if (value == 0 || value == 1)
    return int(value);
  setError(error,
           "axis must be 0 (rows) or 1 (cols), got " + std::to_string(value));
  return std::nullopt;
}

bool validateShape(int64_t rows, int64_t cols, std::string *error) {
  for (auto [dim, name] : {std::pair{rows, "rows"}, std::pair{cols, "cols"}}) {
    if (dim == kDynamic)
      continue;
    if (dim < 1) {
      setError(error, std::string(name) + " " + std::to_string(dim) +
                          " must be positive");
      return false;
    }
    if (dim > kMaxDimension) {
      setError(error, std::string(name) + " " + std::to_string(dim) +
                          " is larger than the maximum dimension 2^40 (" +
                          std::to_string(kMaxDimension) + ")");
      return false;
    }
  }
  // Both are at most 2^40 here, so the product fits in int64.
  if (rows != kDynamic && cols != kDynamic && rows * cols > kMaxElements) {
    setError(error, std::to_string(rows) + "x" + std::to_string(cols) +
                        " has " + std::to_string(rows * cols) +
                        " elements, more than the maximum 2^40 (" +
                        std::to_string(kMaxElements) + ")");
    return false;
  }
  return true;
}

bool validateScaleSpec(const ScaleSpec &scale, std::string *error) {
  switch (scale.granularity) {
  case Granularity::PerTensor:
  case Granularity::PerToken:
    break;
  case Granularity::PerChannel:
  case Granularity::Group:
    if (scale.axis != 0 && scale.axis != 1) {
      setError(error, "axis must be 0 (rows) or 1 (cols), got " +
                          std::to_string(scale.axis));
      return false;
    }
    if (scale.granularity == Granularity::Group && scale.groupSize <= 0) {
      setError(error, "group size must be positive, got " +
                          std::to_string(scale.groupSize));
      return false;
    }
    if (scale.granularity == Granularity::Group &&
        !scaleExtentFromInt64("group size", scale.groupSize, error))
      return false;
    break;
  case Granularity::Block:
    if (scale.blockRows <= 0 || scale.blockCols <= 0) {
      setError(error, "block must be positive in both dimensions, got " +
                          std::to_string(scale.blockRows) + "x" +
                          std::to_string(scale.blockCols));
      return false;
    }
    if (!scaleExtentFromInt64("block height", scale.blockRows, error) ||
        !scaleExtentFromInt64("block width", scale.blockCols, error))
      return false;
    break;
  }
  return true;
}

bool validateScheme(const Scheme &scheme, std::string *error) {
  const Format &element = scheme.element;
  const ScaleSpec &scale = scheme.scale;
  if (element.bits() > containerBits(scheme)) {
    setError(error,
             "format " + element.name() + " has " +
                 std::to_string(element.bits()) + " bits, more than its " +
                 std::to_string(containerBits(scheme)) + "-bit container (" +
                 std::string(packingName(scheme.packing)) + " packing)");
    return false;
  }
  if (!validateScaleSpec(scale, error))
    return false;
  bool e8m0Rule =
      scale.rule == ScaleRule::E8M0Floor || scale.rule == ScaleRule::E8M0RCeil;
  if (scale.type == ScaleType::E8M0 && !e8m0Rule) {
    setError(error, "an e8m0 scale is a power of two: its rule must be floor "
                    "or rceil, not " +
                        std::string(scaleRuleName(scale.rule)));
    return false;
  }
  if (e8m0Rule && scale.type != ScaleType::E8M0) {
    setError(error, "rule " + std::string(scaleRuleName(scale.rule)) +
                        " picks a power of two and needs an e8m0 scale, not " +
                        std::string(scaleTypeName(scale.type)));
    return false;
  }
  if (scale.zeroPoint && scale.type == ScaleType::E8M0) {
    setError(error, "an e8m0 scale cannot have a zero point (MX scaling is "
                    "symmetric)");
    return false;
  }
  if (scale.zeroPoint && !element.isInt()) {
    setError(error, "a zero point needs an integer element format, not " +
                        element.name());
    return false;
  }
  if (scale.zeroPoint != (scale.rule == ScaleRule::MinMax)) {
    setError(error, scale.zeroPoint
                        ? "a zero point needs the minmax rule"
                        : "the minmax rule is asymmetric and needs a zero "
                          "point");
    return false;
  }
  if (scale.rule == ScaleRule::MinMax && element.isSigned()) {
    setError(error, "the minmax rule needs an unsigned integer element "
                    "(codes 0..2^b-1), not " +
                        element.name());
    return false;
  }
  bool reciprocalRule = scale.rule == ScaleRule::AbsMaxReciprocal ||
                        scale.rule == ScaleRule::SignedMaxReciprocal;
  if (reciprocalRule &&
      (!element.isInt() || !element.isSigned() ||
       scale.globalScale != GlobalScale::None ||
       !(scale.type == ScaleType::F32 || scale.type == ScaleType::F16 ||
         scale.type == ScaleType::BF16))) {
    setError(error, "rule " + std::string(scaleRuleName(scale.rule)) +
                        " (llama.cpp's) needs a signed integer element and "
                        "one f32, f16 or bf16 scale per group, not " +
                        element.name() + " with " +
                        std::string(scaleTypeName(scale.type)) + " scales");
    return false;
  }
  if (scheme.packing == Packing::NibbleHalves &&
      !(scale.granularity == Granularity::Group && scale.axis == 1 &&
        scale.groupSize % 2 == 0)) {
    setError(error, "the nibble_halves packing pairs the halves of each "
                    "group along the last axis and needs groups of an even "
                    "size there");
    return false;
  }
  if (scale.rule == ScaleRule::AbsMax && !element.isSigned()) {
    setError(error, "the absmax rule is symmetric and needs a signed element "
                    "format, not " +
                        element.name());
    return false;
  }
  if (scale.rule == ScaleRule::MinMax &&
      (scale.type == ScaleType::UE4M3 || scale.type == ScaleType::E8M0)) {
    setError(error, "the minmax rule needs an f32, f16 or bf16 scale, not " +
                        std::string(scaleTypeName(scale.type)));
    return false;
  }
  if (scale.globalScale != GlobalScale::None &&
      (scale.type == ScaleType::F32 || scale.type == ScaleType::E8M0)) {
    setError(error, "a second-level per-tensor scale is for low-precision "
                    "block scales (ue4m3, f16, bf16), not " +
                        std::string(scaleTypeName(scale.type)));
    return false;
  }
  if (scale.globalScale != GlobalScale::None &&
      scale.granularity == Granularity::PerTensor) {
    setError(error, "a per-tensor scale cannot have a second-level "
                    "per-tensor scale");
    return false;
  }
  if (scale.layout == ScaleLayout::Swizzle128x4 &&
      !(scale.granularity == Granularity::Group && scale.axis == 1 &&
        (scale.type == ScaleType::E8M0 || scale.type == ScaleType::UE4M3))) {
    setError(error, "the swizzle_128x4 layout holds one-byte scales (e8m0 or "
                    "ue4m3) of groups along the last axis");
    return false;
  }
  return true;
}

bool validateSchemeForShape(const Scheme &scheme, int64_t rows, int64_t cols,
                            std::string *error) {
  if (!validateScheme(scheme, error))
    return false;
  // Non-positive sizes are the callers' to refuse ("empty"); the upper
  // bounds are checked here, where every shape passes.
  if ((rows > 0 || cols > 0) &&
      !validateShape(rows > 0 ? rows : kDynamic, cols > 0 ? cols : kDynamic,
                     error))
    return false;
  const ScaleSpec &scale = scheme.scale;
  auto checkDivides = [&](int64_t size, int64_t dim, const char *what,
                          const char *dimName) {
    if (scale.allowTail || dim == kDynamic || dim % size == 0)
      return true;
    setError(error, std::string(what) + " " + std::to_string(size) +
                        " does not divide " + std::to_string(dim) + " " +
                        dimName + " and the scheme allows no tail");
    return false;
  };
  if (scheme.packing == Packing::NibbleHalves && cols != kDynamic &&
      cols % scale.groupSize != 0) {
    setError(error, "the nibble_halves packing needs whole groups: group "
                    "size " +
                        std::to_string(scale.groupSize) + " does not divide " +
                        std::to_string(cols) + " columns");
    return false;
  }
  if (scale.granularity == Granularity::Group)
    return scale.axis == 1
               ? checkDivides(scale.groupSize, cols, "group size", "columns")
               : checkDivides(scale.groupSize, rows, "group size", "rows");
  if (scale.granularity == Granularity::Block)
    return checkDivides(scale.blockRows, rows, "block height", "rows") &&
           checkDivides(scale.blockCols, cols, "block width", "columns");
  return true;
}

Shape2D codesShape(const Scheme &scheme, int64_t rows, int64_t cols) {
  if (isNibblePacked(scheme.packing))
    return {rows, mapDim(cols, [](int64_t c) { return ceilDiv(c, 2); })};
  return {rows, cols};
}

bool scaleRowsFollowRows(const Scheme &scheme) {
  // A row count that no padding (128) or grouping of rows keeps.
  constexpr int64_t kProbeRows = 769;
  return scaleShape(scheme, kProbeRows, 64).rows == kProbeRows;
}

Shape2D scaleShape(const Scheme &scheme, int64_t rows, int64_t cols) {
  const ScaleSpec &scale = scheme.scale;
  Shape2D shape;
  switch (scale.granularity) {
  case Granularity::PerTensor:
    shape = {1, 1};
    break;
  case Granularity::PerToken:
    shape = {rows, 1};
    break;
  case Granularity::PerChannel:
    shape = scale.axis == 0 ? Shape2D{rows, 1} : Shape2D{1, cols};
    break;
  case Granularity::Group: {
    auto groups = [&](int64_t d) { return ceilDiv(d, scale.groupSize); };
    shape = scale.axis == 1 ? Shape2D{rows, mapDim(cols, groups)}
                            : Shape2D{mapDim(rows, groups), cols};
    break;
  }
  case Granularity::Block:
    shape = {
        mapDim(rows, [&](int64_t d) { return ceilDiv(d, scale.blockRows); }),
        mapDim(cols, [&](int64_t d) { return ceilDiv(d, scale.blockCols); })};
    break;
  }
  if (scale.layout == ScaleLayout::Swizzle128x4) {
    shape.rows = mapDim(shape.rows, [](int64_t d) { return roundUp(d, 128); });
    shape.cols = mapDim(shape.cols, [](int64_t d) { return roundUp(d, 4); });
  }
  return shape;
}

double quantMax(const Scheme &scheme) {
  const Format &element = scheme.element;
  if (element.isFloat())
    return element.maxValue();
  // Symmetric int ranges exclude the most negative code so that +-qmax are
  // both representable (int8: 127, not 128).
  return double(element.intMax());
}

int elementEmax(const Format &element) {
  return int(std::floor(std::log2(element.maxValue())));
}

std::string_view granularityName(Granularity granularity) {
  switch (granularity) {
  case Granularity::PerTensor:
    return "per_tensor";
  case Granularity::PerChannel:
    return "per_channel";
  case Granularity::PerToken:
    return "per_token";
  case Granularity::Group:
    return "group";
  case Granularity::Block:
    return "block";
  }
  return "";
}

std::string_view scaleTypeName(ScaleType type) {
  switch (type) {
  case ScaleType::F32:
    return "f32";
  case ScaleType::F16:
    return "f16";
  case ScaleType::BF16:
    return "bf16";
  case ScaleType::E8M0:
    return "e8m0";
  case ScaleType::UE4M3:
    return "ue4m3";
  }
  return "";
}

std::string_view scaleRuleName(ScaleRule rule) {
  switch (rule) {
  case ScaleRule::AbsMax:
    return "absmax";
  case ScaleRule::MinMax:
    return "minmax";
  case ScaleRule::E8M0Floor:
    return "floor";
  case ScaleRule::E8M0RCeil:
    return "rceil";
  case ScaleRule::AbsMaxReciprocal:
    return "absmax_reciprocal";
  case ScaleRule::SignedMaxReciprocal:
    return "signed_max_reciprocal";
  }
  return "";
}

std::string_view scaleModeName(ScaleMode mode) {
  return mode == ScaleMode::Static ? "static" : "dynamic";
}

std::string_view scaleLayoutName(ScaleLayout layout) {
  return layout == ScaleLayout::RowMajor ? "row_major" : "swizzle_128x4";
}

std::string_view globalScaleName(GlobalScale global) {
  switch (global) {
  case GlobalScale::None:
    return "none";
  case GlobalScale::DecodeMultiplier:
    return "decode";
  case GlobalScale::EncodeReciprocal:
    return "encode";
  }
  return "";
}

std::string_view packingName(Packing packing) {
  switch (packing) {
  case Packing::Byte:
    return "byte";
  case Packing::Nibble:
    return "nibble";
  case Packing::NibbleHalves:
    return "nibble_halves";
  }
  return "";
}

std::optional<Granularity> parseGranularity(std::string_view name) {
  static constexpr Granularity kAll[] = {
      Granularity::PerTensor, Granularity::PerChannel, Granularity::PerToken,
      Granularity::Group, Granularity::Block};
  return parseEnum(name, kAll, granularityName);
}

std::optional<ScaleType> parseScaleType(std::string_view name) {
  static constexpr ScaleType kAll[] = {ScaleType::F32, ScaleType::F16,
                                       ScaleType::BF16, ScaleType::E8M0,
                                       ScaleType::UE4M3};
  return parseEnum(name, kAll, scaleTypeName);
}

std::optional<ScaleRule> parseScaleRule(std::string_view name) {
  static constexpr ScaleRule kAll[] = {
      ScaleRule::AbsMax,           ScaleRule::MinMax,
      ScaleRule::E8M0Floor,        ScaleRule::E8M0RCeil,
      ScaleRule::AbsMaxReciprocal, ScaleRule::SignedMaxReciprocal};
  return parseEnum(name, kAll, scaleRuleName);
}

std::optional<ScaleMode> parseScaleMode(std::string_view name) {
  static constexpr ScaleMode kAll[] = {ScaleMode::Static, ScaleMode::Dynamic};
  return parseEnum(name, kAll, scaleModeName);
}

std::optional<ScaleLayout> parseScaleLayout(std::string_view name) {
  static constexpr ScaleLayout kAll[] = {ScaleLayout::RowMajor,
                                         ScaleLayout::Swizzle128x4};
  return parseEnum(name, kAll, scaleLayoutName);
}

std::optional<GlobalScale> parseGlobalScale(std::string_view name) {
  static constexpr GlobalScale kAll[] = {GlobalScale::None,
                                         GlobalScale::DecodeMultiplier,
                                         GlobalScale::EncodeReciprocal};
  return parseEnum(name, kAll, globalScaleName);
}

std::optional<Packing> parsePacking(std::string_view name) {
  static constexpr Packing kAll[] = {Packing::Byte, Packing::Nibble,
                                     Packing::NibbleHalves};
  return parseEnum(name, kAll, packingName);
}

std::optional<Format> scaleTypeFormat(ScaleType type) {
  switch (type) {
  case ScaleType::F32:
    return std::nullopt;
  case ScaleType::F16:
    return lookupFormat("f16");
  case ScaleType::BF16:
    return lookupFormat("bf16");
  case ScaleType::E8M0:
    return lookupFormat("e8m0");
  case ScaleType::UE4M3:
    return lookupFormat("ue4m3");
  }
  return std::nullopt;
}

} // namespace lowbit
