//===- Format.cpp - Number formats: parameters, names, decoding ----------===//

#include "format/Format.h"
#include "format/Codec.h"

#include <charconv>
#include <cmath>
#include <limits>

namespace lowbit {
namespace {

void setError(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
}

/// Exponent field of the largest finite binade.
int topFiniteExponentField(const FloatParams &params) {
  int allOnes = (1 << params.expBits) - 1;
  if (params.specials == SpecialCodes::Ieee)
    return allOnes - 1;
  // With fn, the all-ones exponent still holds finite values unless there
  // is no mantissa left besides the NaN code (e8m0).
  if (params.specials == SpecialCodes::AllOnesNan && params.manBits == 0)
    return allOnes - 1;
  return allOnes;
}

std::string parametricName(const FloatParams &params) {
  std::string name = params.isSigned ? "" : "u";
  name += "e" + std::to_string(params.expBits) + "m" +
          std::to_string(params.manBits) + "b" + std::to_string(params.bias) +
          "-" + std::string(specialCodesName(params.specials));
  return name;
}

struct NamedFloat {
  const char *name;
  FloatParams params;
};

// The named float formats. Everything else about them is derived.
constexpr NamedFloat kNamedFloats[] = {
    {"e4m3", {4, 3, 7, true, SpecialCodes::AllOnesNan}},
    {"e5m2", {5, 2, 15, true, SpecialCodes::Ieee}},
    {"e2m3", {2, 3, 1, true, SpecialCodes::FiniteOnly}},
    {"e3m2", {3, 2, 3, true, SpecialCodes::FiniteOnly}},
    {"e2m1", {2, 1, 1, true, SpecialCodes::FiniteOnly}},
    {"e8m0", {8, 0, 127, false, SpecialCodes::AllOnesNan}},
    {"ue4m3", {4, 3, 7, false, SpecialCodes::AllOnesNan}},
    {"f16", {5, 10, 15, true, SpecialCodes::Ieee}},
    {"bf16", {8, 7, 127, true, SpecialCodes::Ieee}},
};

struct NamedInt {
  const char *name;
  int bits;
  bool isSigned;
};

constexpr NamedInt kNamedInts[] = {
    {"int8", 8, true}, {"int4", 4, true}, {"uint4", 4, false},
    {"uint8", 8, false}};

// Other spellings users bring from MLIR, PyTorch and ml_dtypes.
struct Alias {
  const char *alias;
  const char *name;
};
constexpr Alias kAliases[] = {
    {"e4m3fn", "e4m3"},   {"f8E4M3FN", "e4m3"}, {"f8E5M2", "e5m2"},
    {"e8m0fnu", "e8m0"},  {"f8E8M0FNU", "e8m0"}, {"f6E2M3FN", "e2m3"},
    {"f6E3M2FN", "e3m2"}, {"f4E2M1FN", "e2m1"}, {"fp16", "f16"},
};

const char *namedFloatFor(const FloatParams &params) {
  for (const NamedFloat &named : kNamedFloats)
    if (named.params == params)
      return named.name;
  return nullptr;
}

bool parseInt(std::string_view text, int &value) {
  if (text.empty())
    return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(),
                                   value);
  return ec == std::errc() && ptr == text.data() + text.size();
}

/// Parses [u]e<E>m<M>[b<BIAS>][-ieee|-fn|-finite].
std::optional<Format> parseParametricFloat(std::string_view name,
                                           std::string *error) {
  std::string_view rest = name;
  FloatParams params;
  params.isSigned = true;
  if (rest.starts_with("u")) {
    params.isSigned = false;
    rest.remove_prefix(1);
  }
  if (!rest.starts_with("e"))
    return std::nullopt;
  rest.remove_prefix(1);
  size_t mPos = rest.find('m');
  if (mPos == std::string_view::npos || !parseInt(rest.substr(0, mPos),
                                                  params.expBits))
    return std::nullopt;
  rest.remove_prefix(mPos + 1);
  size_t dash = rest.find('-');
  std::string_view specials =
      dash == std::string_view::npos ? "" : rest.substr(dash + 1);
  rest = rest.substr(0, dash);
  size_t bPos = rest.find('b');
  if (!parseInt(rest.substr(0, bPos), params.manBits))
    return std::nullopt;
  bool hasBias = bPos != std::string_view::npos;
  if (hasBias && !parseInt(rest.substr(bPos + 1), params.bias))
    return std::nullopt;
  if (!hasBias) {
    if (params.expBits < 1 || params.expBits > 8) {
      setError(error, "exponent bits must be 1..8, got " +
                          std::to_string(params.expBits));
      return std::nullopt;
    }
    params.bias = (1 << (params.expBits - 1)) - 1;
  }
  params.specials = SpecialCodes::FiniteOnly;
  if (dash != std::string_view::npos) {
    std::optional<SpecialCodes> parsed = parseSpecialCodes(specials);
    if (!parsed) {
      setError(error, "unknown special-code convention '" +
                          std::string(specials) +
                          "' (expected ieee, fn or finite)");
      return std::nullopt;
    }
    params.specials = *parsed;
  }
  return makeFloatFormat(params, error);
}

/// Parses int<N> and uint<N>.
std::optional<Format> parseParametricInt(std::string_view name,
                                         std::string *error) {
  bool isSigned = !name.starts_with("u");
  std::string_view rest = isSigned ? name : name.substr(1);
  if (!rest.starts_with("int"))
    return std::nullopt;
  int bits = 0;
  if (!parseInt(rest.substr(3), bits))
    return std::nullopt;
  return makeIntFormat(bits, isSigned, error);
}

} // namespace

std::string_view specialCodesName(SpecialCodes specials) {
  switch (specials) {
  case SpecialCodes::Ieee:
    return "ieee";
  case SpecialCodes::AllOnesNan:
    return "fn";
  case SpecialCodes::FiniteOnly:
    return "finite";
  }
  return "finite";
}

std::optional<SpecialCodes> parseSpecialCodes(std::string_view name) {
  for (SpecialCodes specials : {SpecialCodes::Ieee, SpecialCodes::AllOnesNan,
                                SpecialCodes::FiniteOnly})
    if (specialCodesName(specials) == name)
      return specials;
  return std::nullopt;
}

std::optional<Format> makeFloatFormat(const FloatParams &params,
                                      std::string *error) {
  int totalBits = int(params.isSigned) + params.expBits + params.manBits;
  if (params.expBits < 1 || params.expBits > 8) {
    setError(error, "exponent bits must be 1..8, got " +
                        std::to_string(params.expBits));
    return std::nullopt;
  }
  if (params.manBits < 0 || totalBits < 2 || totalBits > 16) {
    setError(error, "a float format has 2..16 bits in all, got " +
                        std::to_string(totalBits));
    return std::nullopt;
  }
  if (params.specials == SpecialCodes::Ieee &&
      (params.expBits < 2 || params.manBits < 1)) {
    setError(error, "an ieee format needs at least 2 exponent bits and 1 "
                    "mantissa bit (for its inf and NaN codes)");
    return std::nullopt;
  }
  // Keeping every value an exact f32 (and the smallest normal at or above
  // f32's smallest normal binade) is what lets the fast path work on f32
  // bits and decode without rounding.
  if (params.bias < 0 || params.bias > 127) {
    setError(error, "bias must be 0..127 so that every value is an exact "
                    "f32, got " +
                        std::to_string(params.bias));
    return std::nullopt;
  }
  int maxExponent = topFiniteExponentField(params) - params.bias;
  if (maxExponent > 127) {
    setError(error, "the largest value 2^" + std::to_string(maxExponent) +
                        " does not fit in f32; raise the bias to at least " +
                        std::to_string(params.bias + maxExponent - 127));
    return std::nullopt;
  }
  Format format;
  format.formatKind = FormatKind::Float;
  format.totalBits = totalBits;
  format.signedFormat = params.isSigned;
  format.params = params;
  const char *named = namedFloatFor(params);
  format.canonicalName = named ? named : parametricName(params);
  format.computeDerived();
  return format;
}

std::optional<Format> makeIntFormat(int bits, bool isSigned,
                                    std::string *error) {
  if (bits < 2 || bits > 16) {
    setError(error, "an integer format has 2..16 bits, got " +
                        std::to_string(bits));
    return std::nullopt;
  }
  Format format;
  format.formatKind = FormatKind::Int;
  format.totalBits = bits;
  format.signedFormat = isSigned;
  format.canonicalName =
      std::string(isSigned ? "int" : "uint") + std::to_string(bits);
  format.computeDerived();
  return format;
}

void Format::computeDerived() {
  if (isInt()) {
    intMinValue = signedFormat ? -(int64_t(1) << (totalBits - 1)) : 0;
    intMaxValue = signedFormat ? (int64_t(1) << (totalBits - 1)) - 1
                               : (int64_t(1) << totalBits) - 1;
    maxFiniteCode = uint32_t(intMaxValue);
    lowestFiniteCode = uint32_t(intMinValue) & codeMask();
    maxFinite = double(intMaxValue);
    lowestFinite = double(intMinValue);
    minNormalValue = minSubnormalValue = 1;
    nanResult = 0;
    return;
  }
  uint32_t magnitudeBits = uint32_t(params.expBits + params.manBits);
  uint32_t allOnes = (uint32_t(1) << magnitudeBits) - 1;
  switch (params.specials) {
  case SpecialCodes::Ieee:
    maxFiniteCode = (uint32_t(topFiniteExponentField(params)) << params.manBits) |
                    ((uint32_t(1) << params.manBits) - 1);
    break;
  case SpecialCodes::AllOnesNan:
    maxFiniteCode = allOnes - 1;
    break;
  case SpecialCodes::FiniteOnly:
    maxFiniteCode = allOnes;
    break;
  }
  uint32_t signBit = signedFormat ? uint32_t(1) << magnitudeBits : 0;
  lowestFiniteCode = signedFormat ? (maxFiniteCode | signBit) : 0;
  nanResult = params.specials == SpecialCodes::FiniteOnly ? maxFiniteCode
                                                          : allOnes;
  maxFinite = decode(maxFiniteCode);
  lowestFinite = decode(lowestFiniteCode);
  if (hasSubnormals()) {
    minNormalValue = std::ldexp(1.0, 1 - params.bias);
    minSubnormalValue = std::ldexp(1.0, 1 - params.bias - params.manBits);
  } else {
    minNormalValue = std::ldexp(1.0, -params.bias);
    minSubnormalValue = 0;
  }
}

bool Format::isNanCode(uint32_t code) const {
  if (!hasNan())
    return false;
  uint32_t magnitude = code & ((uint32_t(1) << (params.expBits +
                                                params.manBits)) - 1);
  uint32_t manMask = (uint32_t(1) << params.manBits) - 1;
  uint32_t exponent = magnitude >> params.manBits;
  uint32_t expAllOnes = (uint32_t(1) << params.expBits) - 1;
  if (params.specials == SpecialCodes::Ieee)
    return exponent == expAllOnes && (magnitude & manMask) != 0;
  return exponent == expAllOnes && (magnitude & manMask) == manMask;
}

bool Format::isInfCode(uint32_t code) const {
  if (!hasInf())
    return false;
  uint32_t magnitude = code & ((uint32_t(1) << (params.expBits +
                                                params.manBits)) - 1);
  return magnitude == (((uint32_t(1) << params.expBits) - 1) << params.manBits);
}

std::vector<uint32_t> Format::nanCodes() const {
  std::vector<uint32_t> codes;
  for (uint32_t code = 0; code < codeCount(); ++code)
    if (isNanCode(code))
      codes.push_back(code);
  return codes;
}

std::vector<uint32_t> Format::infCodes() const {
  std::vector<uint32_t> codes;
  for (uint32_t code = 0; code < codeCount(); ++code)
    if (isInfCode(code))
      codes.push_back(code);
  return codes;
}

double Format::decode(uint32_t code) const {
  code &= codeMask();
  if (isInt()) {
    if (signedFormat && (code >> (totalBits - 1)))
      return double(int64_t(code) - (int64_t(1) << totalBits));
    return double(code);
  }
  uint32_t magnitudeBits = uint32_t(params.expBits + params.manBits);
  bool negative = signedFormat && (code >> magnitudeBits);
  double sign = negative ? -1.0 : 1.0;
  if (isNanCode(code))
    return std::numeric_limits<double>::quiet_NaN();
  if (isInfCode(code))
    return sign * std::numeric_limits<double>::infinity();
  uint32_t magnitude = code & ((uint32_t(1) << magnitudeBits) - 1);
  int exponent = int(magnitude >> params.manBits);
  uint32_t mantissa = magnitude & ((uint32_t(1) << params.manBits) - 1);
  if (exponent == 0 && hasSubnormals())
    return sign * std::ldexp(double(mantissa),
                             1 - params.bias - params.manBits);
  double significand = 1.0 + std::ldexp(double(mantissa), -params.manBits);
  return sign * std::ldexp(significand, exponent - params.bias);
}

const std::vector<Format> &namedFormats() {
  static const std::vector<Format> formats = [] {
    std::vector<Format> result;
    for (const NamedFloat &named : kNamedFloats)
      result.push_back(*makeFloatFormat(named.params));
    for (const NamedInt &named : kNamedInts)
      result.push_back(*makeIntFormat(named.bits, named.isSigned));
    return result;
  }();
  return formats;
}

std::optional<Format> lookupFormat(std::string_view name, std::string *error) {
  for (const Alias &alias : kAliases)
    if (name == alias.alias)
      name = alias.name;
  for (const Format &format : namedFormats())
    if (format.name() == name)
      return format;
  std::string reason;
  if (std::optional<Format> format = parseParametricFloat(name, &reason))
    return format;
  if (std::optional<Format> format = parseParametricInt(name, &reason))
    return format;
  if (reason.empty())
    reason = "expected a named format (e4m3, e5m2, e2m3, e3m2, e2m1, e8m0, "
             "ue4m3, f16, bf16, int8, int4, uint4, uint8), "
             "[u]e<E>m<M>[b<BIAS>][-ieee|-fn|-finite] or [u]int<N>";
  setError(error, reason);
  return std::nullopt;
}

uint32_t encode(const Format &format, float value,
                const EncodeOptions &options) {
  return encodeWithConstants(format, makeEncodeConstants(format, options),
                             value);
}

} // namespace lowbit
