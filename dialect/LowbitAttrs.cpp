//===- LowbitAttrs.cpp - lowbit formats, scales and schemes ---------------===//
//
// Parsing, printing and verification of the attributes. Names and keywords
// are resolved by the format model (lookupFormat, lookupScheme, parseX /
// xName), and validity is decided by it (makeFloatFormat, makeIntFormat,
// validateScheme); this file only moves values between text and the model.
//
//===----------------------------------------------------------------------===//

#include "dialect/LowbitAttrs.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <climits>
#include <optional>

using namespace mlir;
using namespace lowbit::dialect;

namespace {

using FieldParser = function_ref<ParseResult(StringRef key, SMLoc keyLoc)>;

/// Parses `key = value (, key = value)*`. `firstKey` is a key the caller has
/// already consumed (or empty). Each key may be given once; `parseValue`
/// parses what follows `=` and rejects unknown keys. Every key in
/// `required` must be given; missing ones are reported at `attrLoc`.
ParseResult parseFields(AsmParser &parser, SMLoc attrLoc, StringRef firstKey,
                        SMLoc firstKeyLoc, ArrayRef<StringRef> required,
                        FieldParser parseValue) {
  llvm::StringSet<> seen;
  StringRef key = firstKey;
  SMLoc keyLoc = firstKeyLoc;
  while (true) {
    if (key.empty()) {
      keyLoc = parser.getCurrentLocation();
      if (parser.parseKeyword(&key))
        return failure();
    }
    if (!seen.insert(key).second)
      return parser.emitError(keyLoc) << "field '" << key << "' is given twice";
    if (parser.parseEqual() || parseValue(key, keyLoc))
      return failure();
    if (failed(parser.parseOptionalComma()))
      break;
    key = {};
  }
  for (StringRef name : required)
    if (!seen.contains(name))
      return parser.emitError(attrLoc) << "missing field '" << name << "'";
  return success();
}

ParseResult unknownField(AsmParser &parser, SMLoc keyLoc, StringRef key,
                         StringRef expected) {
  return parser.emitError(keyLoc)
         << "unknown field '" << key << "' (expected " << expected << ")";
}

ParseResult parseBool(AsmParser &parser, bool &value) {
  if (succeeded(parser.parseOptionalKeyword("true"))) {
    value = true;
    return success();
  }
  if (succeeded(parser.parseOptionalKeyword("false"))) {
    value = false;
    return success();
  }
  return parser.emitError(parser.getCurrentLocation(),
                          "expected 'true' or 'false'");
}

/// Parses one keyword of a model enum through the model's parse function;
/// the error lists the model's spellings of `all`.
template <typename Enum>
ParseResult
parseModelKeyword(AsmParser &parser,
                  std::optional<Enum> (*parseName)(std::string_view),
                  std::string_view (*nameOf)(Enum), ArrayRef<Enum> all,
                  StringRef what, Enum &value) {
  SMLoc loc = parser.getCurrentLocation();
  std::string name;
  if (parser.parseKeywordOrString(&name))
    return failure();
  if (std::optional<Enum> parsed = parseName(name)) {
    value = *parsed;
    return success();
  }
  InFlightDiagnostic diag = parser.emitError(loc);
  diag << "unknown " << what << " '" << name << "' (expected ";
  llvm::interleaveComma(all, diag, [&](Enum each) { diag << nameOf(each); });
  return diag << ")";
}

constexpr lowbit::SpecialCodes kAllSpecialCodes[] = {
    lowbit::SpecialCodes::Ieee, lowbit::SpecialCodes::AllOnesNan,
    lowbit::SpecialCodes::FiniteOnly};
constexpr lowbit::Granularity kAllGranularities[] = {
    lowbit::Granularity::PerTensor, lowbit::Granularity::PerChannel,
    lowbit::Granularity::PerToken, lowbit::Granularity::Group,
    lowbit::Granularity::Block};
constexpr lowbit::ScaleType kAllScaleTypes[] = {
    lowbit::ScaleType::F32, lowbit::ScaleType::F16, lowbit::ScaleType::BF16,
    lowbit::ScaleType::E8M0, lowbit::ScaleType::UE4M3};
constexpr lowbit::ScaleRule kAllScaleRules[] = {
    lowbit::ScaleRule::AbsMax, lowbit::ScaleRule::MinMax,
    lowbit::ScaleRule::E8M0Floor, lowbit::ScaleRule::E8M0RCeil};
constexpr lowbit::ScaleMode kAllScaleModes[] = {lowbit::ScaleMode::Static,
                                                lowbit::ScaleMode::Dynamic};
constexpr lowbit::GlobalScale kAllGlobalScales[] = {
    lowbit::GlobalScale::None, lowbit::GlobalScale::DecodeMultiplier,
    lowbit::GlobalScale::EncodeReciprocal};
constexpr lowbit::ScaleLayout kAllScaleLayouts[] = {
    lowbit::ScaleLayout::RowMajor, lowbit::ScaleLayout::Swizzle128x4};
constexpr lowbit::Packing kAllPackings[] = {lowbit::Packing::Byte,
                                            lowbit::Packing::Nibble};

/// Parses a format name (string or bare identifier) through lookupFormat.
std::optional<lowbit::Format> parseFormatName(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  std::string name;
  if (parser.parseKeywordOrString(&name))
    return std::nullopt;
  std::string error;
  std::optional<lowbit::Format> format = lowbit::lookupFormat(name, &error);
  if (!format)
    parser.emitError(loc) << "invalid format name '" << name << "': " << error;
  return format;
}

/// The short form is printed only for the model's named formats, so that a
/// parametric name the model canonicalizes differently still round-trips.
bool isNamedFormat(const lowbit::Format &format) {
  return llvm::is_contained(lowbit::namedFormats(), format);
}

void printBool(AsmPrinter &printer, bool value) {
  printer << (value ? "true" : "false");
}

} // namespace

//===----------------------------------------------------------------------===//
// FloatFormatAttr
//===----------------------------------------------------------------------===//

lowbit::FloatParams FloatFormatAttr::getParams() const {
  return {getExpBits(), getManBits(), getBias(), getIsSigned(), getSpecials()};
}

lowbit::Format FloatFormatAttr::getFormat() const {
  std::optional<lowbit::Format> format = lowbit::makeFloatFormat(getParams());
  assert(format && "the verifier accepted these parameters");
  return *format;
}

LogicalResult
FloatFormatAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        int expBits, int manBits, int bias, bool isSigned,
                        lowbit::SpecialCodes specials) {
  std::string error;
  if (!lowbit::makeFloatFormat({expBits, manBits, bias, isSigned, specials},
                               &error))
    return emitError() << "invalid float format: " << error;
  return success();
}

Attribute FloatFormatAttr::parse(AsmParser &parser, Type) {
  SMLoc attrLoc = parser.getCurrentLocation();
  if (parser.parseLess())
    return {};
  SMLoc keyLoc = parser.getCurrentLocation();
  StringRef firstKey;
  if (failed(parser.parseOptionalKeyword(
          &firstKey, {"exp", "man", "bias", "signed", "specials"}))) {
    std::optional<lowbit::Format> format = parseFormatName(parser);
    if (!format)
      return {};
    if (!format->isFloat()) {
      parser.emitError(keyLoc)
          << "'" << format->name()
          << "' is an integer format; write it as #lowbit.int<\""
          << format->name() << "\">";
      return {};
    }
    if (parser.parseGreater())
      return {};
    return get(parser.getContext(), format->floatParams());
  }

  lowbit::FloatParams params;
  auto parseValue = [&](StringRef key, SMLoc loc) -> ParseResult {
    if (key == "exp")
      return parser.parseInteger(params.expBits);
    if (key == "man")
      return parser.parseInteger(params.manBits);
    if (key == "bias")
      return parser.parseInteger(params.bias);
    if (key == "signed")
      return parseBool(parser, params.isSigned);
    if (key == "specials")
      return parseModelKeyword<lowbit::SpecialCodes>(
          parser, lowbit::parseSpecialCodes, lowbit::specialCodesName,
          kAllSpecialCodes, "special-code convention", params.specials);
    return unknownField(parser, loc, key, "exp, man, bias, signed, specials");
  };
  if (parseFields(parser, attrLoc, firstKey, keyLoc,
                  {"exp", "man", "bias", "signed", "specials"}, parseValue) ||
      parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(attrLoc); },
                    parser.getContext(), params.expBits, params.manBits,
                    params.bias, params.isSigned, params.specials);
}

void FloatFormatAttr::print(AsmPrinter &printer) const {
  lowbit::Format format = getFormat();
  printer << '<';
  if (isNamedFormat(format)) {
    printer.printString(format.name());
  } else {
    printer << "exp = " << getExpBits() << ", man = " << getManBits()
            << ", bias = " << getBias() << ", signed = ";
    printBool(printer, getIsSigned());
    printer << ", specials = ";
    printer.printKeywordOrString(lowbit::specialCodesName(getSpecials()));
  }
  printer << '>';
}

//===----------------------------------------------------------------------===//
// IntFormatAttr
//===----------------------------------------------------------------------===//

lowbit::Format IntFormatAttr::getFormat() const {
  std::optional<lowbit::Format> format =
      lowbit::makeIntFormat(getBits(), getIsSigned());
  assert(format && "the verifier accepted these parameters");
  return *format;
}

LogicalResult
IntFormatAttr::verify(function_ref<InFlightDiagnostic()> emitError, int bits,
                      bool isSigned) {
  std::string error;
  if (!lowbit::makeIntFormat(bits, isSigned, &error))
    return emitError() << "invalid integer format: " << error;
  return success();
}

Attribute IntFormatAttr::parse(AsmParser &parser, Type) {
  SMLoc attrLoc = parser.getCurrentLocation();
  if (parser.parseLess())
    return {};
  SMLoc keyLoc = parser.getCurrentLocation();
  StringRef firstKey;
  if (failed(parser.parseOptionalKeyword(&firstKey, {"bits", "signed"}))) {
    std::optional<lowbit::Format> format = parseFormatName(parser);
    if (!format)
      return {};
    if (!format->isInt()) {
      parser.emitError(keyLoc)
          << "'" << format->name()
          << "' is a float format; write it as #lowbit.float<\""
          << format->name() << "\">";
      return {};
    }
    if (parser.parseGreater())
      return {};
    return get(parser.getContext(), format->bits(), format->isSigned());
  }

  int bits = 0;
  bool isSigned = true;
  auto parseValue = [&](StringRef key, SMLoc loc) -> ParseResult {
    if (key == "bits")
      return parser.parseInteger(bits);
    if (key == "signed")
      return parseBool(parser, isSigned);
    return unknownField(parser, loc, key, "bits, signed");
  };
  if (parseFields(parser, attrLoc, firstKey, keyLoc, {"bits", "signed"},
                  parseValue) ||
      parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(attrLoc); },
                    parser.getContext(), bits, isSigned);
}

void IntFormatAttr::print(AsmPrinter &printer) const {
  lowbit::Format format = getFormat();
  printer << '<';
  if (isNamedFormat(format)) {
    printer.printString(format.name());
  } else {
    printer << "bits = " << getBits() << ", signed = ";
    printBool(printer, getIsSigned());
  }
  printer << '>';
}

//===----------------------------------------------------------------------===//
// ScaleAttr
//===----------------------------------------------------------------------===//

namespace {

bool hasAxis(lowbit::Granularity granularity) {
  return granularity == lowbit::Granularity::PerChannel ||
         granularity == lowbit::Granularity::Group;
}

/// Fields a granularity does not use are kept at the model's defaults, so
/// that two specs that mean the same are one attribute and print the same.
lowbit::ScaleSpec canonicalScale(lowbit::ScaleSpec spec) {
  lowbit::ScaleSpec defaults;
  if (!hasAxis(spec.granularity))
    spec.axis = defaults.axis;
  if (spec.granularity != lowbit::Granularity::Group)
    spec.groupSize = defaults.groupSize;
  if (spec.granularity != lowbit::Granularity::Block) {
    spec.blockRows = defaults.blockRows;
    spec.blockCols = defaults.blockCols;
  }
  return spec;
}

/// Sizes and the axis are read as int64 and bounded by the model before
/// they are narrowed to ScaleSpec's int (never truncated).
ParseResult parseBounded(AsmParser &parser, int &result,
                         std::optional<int> (*narrow)(int64_t, std::string *)) {
  SMLoc loc = parser.getCurrentLocation();
  int64_t value = 0;
  if (parser.parseInteger(value))
    return failure();
  std::string error;
  std::optional<int> narrowed = narrow(value, &error);
  if (!narrowed)
    return parser.emitError(loc) << error;
  result = *narrowed;
  return success();
}

std::optional<int> groupSizeFromInt64(int64_t value, std::string *error) {
  return lowbit::scaleExtentFromInt64("group size", value, error);
}

ParseResult parseGranularitySpec(AsmParser &parser, lowbit::ScaleSpec &spec) {
  if (parseModelKeyword<lowbit::Granularity>(
          parser, lowbit::parseGranularity, lowbit::granularityName,
          kAllGranularities, "granularity", spec.granularity))
    return failure();
  auto parseAxis = [&]() -> ParseResult {
    return failure(parser.parseKeyword("axis") || parser.parseEqual() ||
                   parseBounded(parser, spec.axis, lowbit::axisFromInt64));
  };
  switch (spec.granularity) {
  case lowbit::Granularity::PerTensor:
  case lowbit::Granularity::PerToken:
    return success();
  case lowbit::Granularity::PerChannel:
    return failure(parser.parseLParen() || parseAxis() || parser.parseRParen());
  case lowbit::Granularity::Group:
    if (parser.parseLParen() ||
        parseBounded(parser, spec.groupSize, groupSizeFromInt64))
      return failure();
    if (succeeded(parser.parseOptionalComma()) && parseAxis())
      return failure();
    return parser.parseRParen();
  case lowbit::Granularity::Block: {
    if (parser.parseLParen())
      return failure();
    SMLoc dimsLoc = parser.getCurrentLocation();
    SmallVector<int64_t, 2> dims;
    if (parser.parseDimensionList(dims, /*allowDynamic=*/false,
                                  /*withTrailingX=*/false) ||
        parser.parseRParen())
      return failure();
    if (dims.size() != 2)
      return parser.emitError(dimsLoc) << "a block is <rows>x<cols>, got "
                                       << dims.size() << " dimension(s)";
    // Zero is left to the verifier ("positive in both dimensions"); a size
    // past the bound is refused here, before it is narrowed.
    std::string error;
    for (auto [dim, what] : {std::pair{dims[0], "block height"},
                             std::pair{dims[1], "block width"}})
      if (dim > 0 && !lowbit::scaleExtentFromInt64(what, dim, &error))
        return parser.emitError(dimsLoc) << error;
    spec.blockRows = int(dims[0]);
    spec.blockCols = int(dims[1]);
    return success();
  }
  }
  return failure();
}

} // namespace

lowbit::ScaleSpec ScaleAttr::getSpec() const {
  lowbit::ScaleSpec spec;
  spec.granularity = getGranularity();
  spec.axis = getAxis();
  spec.groupSize = getGroupSize();
  spec.blockRows = getBlockRows();
  spec.blockCols = getBlockCols();
  spec.allowTail = getAllowTail();
  spec.type = getScaleType();
  spec.rule = getRule();
  spec.mode = getMode();
  spec.zeroPoint = getZeroPoint();
  spec.globalScale = getGlobalScale();
  spec.layout = getLayout();
  return spec;
}

LogicalResult ScaleAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                lowbit::Granularity granularity, int axis,
                                int groupSize, int blockRows, int blockCols,
                                bool allowTail, lowbit::ScaleType scaleType,
                                lowbit::ScaleRule rule, lowbit::ScaleMode mode,
                                bool zeroPoint, lowbit::GlobalScale globalScale,
                                lowbit::ScaleLayout layout) {
  // These are the checks a scale can fail on its own (the model's
  // validateScaleSpec); how it combines with an element format is
  // validateScheme's job (see SchemeAttr::verify).
  lowbit::ScaleSpec spec{granularity, axis,      groupSize,   blockRows,
                         blockCols,   allowTail, scaleType,   rule,
                         mode,        zeroPoint, globalScale, layout};
  std::string error;
  if (!lowbit::validateScaleSpec(spec, &error))
    return emitError() << error;
  // Only C++ callers of the raw builder can get here; the parser and the
  // ScaleSpec builder always produce the canonical form.
  if (!(canonicalScale(spec) == spec))
    return emitError() << "a " << lowbit::granularityName(granularity)
                       << " scale must leave the axis, group size and block "
                          "it does not use at their defaults";
  return success();
}

Attribute ScaleAttr::parse(AsmParser &parser, Type) {
  SMLoc attrLoc = parser.getCurrentLocation();
  // Omitted fields keep the model's defaults.
  lowbit::ScaleSpec spec;
  if (parser.parseLess() || parseGranularitySpec(parser, spec))
    return {};
  if (succeeded(parser.parseOptionalComma())) {
    auto parseValue = [&](StringRef key, SMLoc loc) -> ParseResult {
      if (key == "tail")
        return parseBool(parser, spec.allowTail);
      if (key == "type")
        return parseModelKeyword<lowbit::ScaleType>(
            parser, lowbit::parseScaleType, lowbit::scaleTypeName,
            kAllScaleTypes, "scale type", spec.type);
      if (key == "rule")
        return parseModelKeyword<lowbit::ScaleRule>(
            parser, lowbit::parseScaleRule, lowbit::scaleRuleName,
            kAllScaleRules, "scale rule", spec.rule);
      if (key == "mode")
        return parseModelKeyword<lowbit::ScaleMode>(
            parser, lowbit::parseScaleMode, lowbit::scaleModeName,
            kAllScaleModes, "scale mode", spec.mode);
      if (key == "zero_point")
        return parseBool(parser, spec.zeroPoint);
      if (key == "global")
        return parseModelKeyword<lowbit::GlobalScale>(
            parser, lowbit::parseGlobalScale, lowbit::globalScaleName,
            kAllGlobalScales, "global scale convention", spec.globalScale);
      if (key == "layout")
        return parseModelKeyword<lowbit::ScaleLayout>(
            parser, lowbit::parseScaleLayout, lowbit::scaleLayoutName,
            kAllScaleLayouts, "scale layout", spec.layout);
      return unknownField(parser, loc, key,
                          "tail, type, rule, mode, zero_point, global, layout");
    };
    if (parseFields(parser, attrLoc, {}, {}, {}, parseValue))
      return {};
  }
  if (parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(attrLoc); },
                    parser.getContext(), spec);
}

void ScaleAttr::print(AsmPrinter &printer) const {
  printer << '<';
  printer.printKeywordOrString(lowbit::granularityName(getGranularity()));
  switch (getGranularity()) {
  case lowbit::Granularity::PerTensor:
  case lowbit::Granularity::PerToken:
    break;
  case lowbit::Granularity::PerChannel:
    printer << "(axis = " << getAxis() << ")";
    break;
  case lowbit::Granularity::Group:
    printer << "(" << getGroupSize() << ", axis = " << getAxis() << ")";
    break;
  case lowbit::Granularity::Block:
    printer << "(" << getBlockRows() << "x" << getBlockCols() << ")";
    break;
  }
  printer << ", tail = ";
  printBool(printer, getAllowTail());
  printer << ", type = ";
  printer.printKeywordOrString(lowbit::scaleTypeName(getScaleType()));
  printer << ", rule = ";
  printer.printKeywordOrString(lowbit::scaleRuleName(getRule()));
  printer << ", mode = ";
  printer.printKeywordOrString(lowbit::scaleModeName(getMode()));
  printer << ", zero_point = ";
  printBool(printer, getZeroPoint());
  printer << ", global = ";
  printer.printKeywordOrString(lowbit::globalScaleName(getGlobalScale()));
  printer << ", layout = ";
  printer.printKeywordOrString(lowbit::scaleLayoutName(getLayout()));
  printer << '>';
}

//===----------------------------------------------------------------------===//
// SchemeAttr
//===----------------------------------------------------------------------===//

lowbit::Scheme SchemeAttr::getScheme() const {
  lowbit::Scheme scheme{"", getFormat().getFormat(), getScale().getSpec(),
                        getPacking()};
  if (const lowbit::Scheme *named = lowbit::findNamedScheme(scheme))
    scheme.name = named->name;
  return scheme;
}

LogicalResult SchemeAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 FormatAttrInterface format, ScaleAttr scale,
                                 lowbit::Packing packing) {
  lowbit::Scheme scheme{"", format.getFormat(), scale.getSpec(), packing};
  std::string error;
  if (!lowbit::validateScheme(scheme, &error))
    return emitError() << "invalid scheme: " << error;
  if (std::optional<std::string> reason = lowbit::referenceOnlyReason(scheme))
    return emitError() << "scheme not supported by the compiler: " << *reason;
  return success();
}

Attribute SchemeAttr::parse(AsmParser &parser, Type) {
  MLIRContext *context = parser.getContext();
  SMLoc attrLoc = parser.getCurrentLocation();
  if (parser.parseLess())
    return {};
  SMLoc keyLoc = parser.getCurrentLocation();
  auto emitError = [&] { return parser.emitError(attrLoc); };
  StringRef firstKey;
  if (failed(parser.parseOptionalKeyword(&firstKey,
                                         {"format", "scale", "packing"}))) {
    std::string name;
    if (parser.parseKeywordOrString(&name))
      return {};
    std::string error;
    std::optional<lowbit::Scheme> scheme = lowbit::lookupScheme(name, &error);
    if (!scheme) {
      parser.emitError(keyLoc) << error;
      return {};
    }
    if (parser.parseGreater())
      return {};
    return getChecked(emitError, context,
                      toFormatAttr(context, scheme->element),
                      ScaleAttr::get(context, scheme->scale), scheme->packing);
  }

  FormatAttrInterface format;
  ScaleAttr scale;
  lowbit::Packing packing = lowbit::Packing::Byte;
  auto parseValue = [&](StringRef key, SMLoc loc) -> ParseResult {
    if (key == "packing")
      return parseModelKeyword<lowbit::Packing>(
          parser, lowbit::parsePacking, lowbit::packingName, kAllPackings,
          "packing", packing);
    if (key != "format" && key != "scale")
      return unknownField(parser, loc, key, "format, scale, packing");
    SMLoc valueLoc = parser.getCurrentLocation();
    Attribute value;
    if (parser.parseAttribute(value))
      return failure();
    if (key == "format") {
      format = dyn_cast<FormatAttrInterface>(value);
      if (!format)
        return parser.emitError(valueLoc)
               << "expected #lowbit.float or #lowbit.int, got " << value;
      return success();
    }
    scale = dyn_cast<ScaleAttr>(value);
    if (!scale)
      return parser.emitError(valueLoc)
             << "expected #lowbit.scale, got " << value;
    return success();
  };
  if (parseFields(parser, attrLoc, firstKey, keyLoc,
                  {"format", "scale", "packing"}, parseValue) ||
      parser.parseGreater())
    return {};
  return getChecked(emitError, context, format, scale, packing);
}

void SchemeAttr::print(AsmPrinter &printer) const {
  printer << '<';
  if (const lowbit::Scheme *named = lowbit::findNamedScheme(getScheme())) {
    printer.printString(named->name);
  } else {
    printer << "format = ";
    printer.printAttribute(getFormat());
    printer << ", scale = ";
    printer.printAttribute(getScale());
    printer << ", packing = ";
    printer.printKeywordOrString(lowbit::packingName(getPacking()));
  }
  printer << '>';
}

//===----------------------------------------------------------------------===//
// Conversions and registration
//===----------------------------------------------------------------------===//

FormatAttrInterface
lowbit::dialect::toFormatAttr(MLIRContext *context,
                              const lowbit::Format &format) {
  if (format.isInt())
    return cast<FormatAttrInterface>(
        IntFormatAttr::get(context, format.bits(), format.isSigned()));
  return cast<FormatAttrInterface>(
      FloatFormatAttr::get(context, format.floatParams()));
}

FailureOr<SchemeAttr> lowbit::dialect::toSchemeAttr(
    MLIRContext *context, const lowbit::Scheme &scheme, std::string *error) {
  std::string reason;
  if (!lowbit::validateScheme(scheme, &reason)) {
    if (error)
      *error = reason;
    return failure();
  }
  if (std::optional<std::string> referenceOnly =
          lowbit::referenceOnlyReason(scheme)) {
    if (error)
      *error = *referenceOnly;
    return failure();
  }
  return SchemeAttr::get(context, toFormatAttr(context, scheme.element),
                         ScaleAttr::get(context, scheme.scale), scheme.packing);
}

#include "dialect/LowbitAttrInterfaces.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialect/LowbitAttrs.cpp.inc"

void LowbitDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialect/LowbitAttrs.cpp.inc"
      >();
}
