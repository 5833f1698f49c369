//===- Format.h - The one model of lowbit's number formats ------*- C++ -*-===//
//
// Every part of lowbit (dialect verifiers, lowering, runtime, CLI, tests)
// asks this model about a number format. There is no other table of formats.
// The model has no MLIR or LLVM dependency so that the MLIR-free runtime can
// use it too.
//
// A float format is described by its parameters (exponent bits, mantissa
// bits, bias, signedness and which codes are special); the named formats
// (e4m3, e5m2, e2m1, ...) are instances of the same parametric description.
// Integer formats are two's complement (signed) or plain binary (unsigned).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_FORMAT_FORMAT_H
#define LOWBIT_FORMAT_FORMAT_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lowbit {

enum class FormatKind : uint8_t { Float, Int };

/// Which codes of a float format are not finite numbers.
enum class SpecialCodes : uint8_t {
  /// Exponent all ones: inf when the mantissa is 0, NaN otherwise (e5m2,
  /// f16, bf16).
  Ieee,
  /// No inf. The code whose exponent and mantissa are all ones is NaN (OCP
  /// e4m3 "fn", e8m0).
  AllOnesNan,
  /// Every code is a finite number (OCP e2m1, e2m3, e3m2).
  FiniteOnly,
};

/// How a value between two representable numbers is rounded.
enum class Rounding : uint8_t {
  NearestEven, ///< PTX .rn, the default everywhere.
  TowardZero,  ///< PTX .rz.
  TowardPosInf ///< PTX .rp.
};

struct EncodeOptions {
  /// Saturating (PTX .satfinite): overflow and +-inf give the signed max.
  /// Non-saturating: overflow gives inf, or NaN where there is no inf.
  bool saturate = true;
  Rounding rounding = Rounding::NearestEven;
};

/// Parameters of a float format. Codes hold sign (if signed), exponent and
/// mantissa, from the most significant bit down.
struct FloatParams {
  int expBits = 0;
  int manBits = 0;
  int bias = 0;
  bool isSigned = true;
  SpecialCodes specials = SpecialCodes::FiniteOnly;

  bool operator==(const FloatParams &other) const = default;
};

/// One number format. Build it with lookupFormat() or makeFloatFormat() /
/// makeIntFormat(), which validate the parameters; the derived values are
/// computed once at construction.
class Format {
public:
  FormatKind kind() const { return formatKind; }
  bool isFloat() const { return formatKind == FormatKind::Float; }
  bool isInt() const { return formatKind == FormatKind::Int; }
  /// Canonical name: the named alias if the parameters match one, else the
  /// full parametric spelling (see docs/formats.md).
  const std::string &name() const { return canonicalName; }
  /// Significant bits of one code (sign included).
  int bits() const { return totalBits; }
  bool isSigned() const { return signedFormat; }
  /// Float parameters; meaningless for integer formats.
  const FloatParams &floatParams() const { return params; }
  /// Float formats without mantissa bits (e8m0) have no subnormal binade:
  /// exponent field 0 is a normal binade and there is no zero.
  bool hasSubnormals() const { return isFloat() && params.manBits > 0; }
  bool hasInf() const {
    return isFloat() && params.specials == SpecialCodes::Ieee;
  }
  bool hasNan() const {
    return isFloat() && params.specials != SpecialCodes::FiniteOnly;
  }
  bool hasZero() const { return !isFloat() || hasSubnormals(); }

  uint32_t codeCount() const { return uint32_t(1) << totalBits; }
  uint32_t codeMask() const { return codeCount() - 1; }
  /// Code of the largest finite value (positive).
  uint32_t maxCode() const { return maxFiniteCode; }
  /// Code of the most negative value (for unsigned formats, the smallest).
  uint32_t lowestCode() const { return lowestFiniteCode; }
  /// Largest finite value, smallest positive normal, smallest positive
  /// subnormal (0 when there are no subnormals). For integer formats,
  /// minNormal and minSubnormal are 1.
  double maxValue() const { return maxFinite; }
  double lowestValue() const { return lowestFinite; }
  double minNormal() const { return minNormalValue; }
  double minSubnormal() const { return minSubnormalValue; }
  /// Integer range; meaningless for float formats.
  int64_t intMin() const { return intMinValue; }
  int64_t intMax() const { return intMaxValue; }

  bool isNanCode(uint32_t code) const;
  bool isInfCode(uint32_t code) const;
  std::vector<uint32_t> nanCodes() const;
  std::vector<uint32_t> infCodes() const;
  /// The code a NaN input produces. For formats without NaN this is +max,
  /// as PTX cvt does; for formats with NaN it is the canonical (positive,
  /// all-ones) NaN.
  uint32_t nanResultCode() const { return nanResult; }

  /// Exact value of a code, as a double (every format value is exactly
  /// representable in f32, so also in double). Codes wider than the format
  /// are masked.
  double decode(uint32_t code) const;
  float decodeToFloat(uint32_t code) const { return float(decode(code)); }

  bool operator==(const Format &other) const {
    return formatKind == other.formatKind && totalBits == other.totalBits &&
           signedFormat == other.signedFormat &&
           (isInt() || params == other.params);
  }
  bool operator!=(const Format &other) const { return !(*this == other); }

private:
  friend std::optional<Format> makeFloatFormat(const FloatParams &,
                                               std::string *);
  friend std::optional<Format> makeIntFormat(int, bool, std::string *);
  Format() = default;
  void computeDerived();

  FormatKind formatKind = FormatKind::Int;
  std::string canonicalName;
  int totalBits = 0;
  bool signedFormat = true;
  FloatParams params;
  uint32_t maxFiniteCode = 0, lowestFiniteCode = 0, nanResult = 0;
  double maxFinite = 0, lowestFinite = 0, minNormalValue = 0,
         minSubnormalValue = 0;
  int64_t intMinValue = 0, intMaxValue = 0;
};

/// Validates float parameters: 1..8 exponent bits, at most 16 bits in all,
/// and every value exactly representable as an f32 normal or subnormal.
/// On failure returns nullopt and, if `error` is set, a message naming the
/// problem.
std::optional<Format> makeFloatFormat(const FloatParams &params,
                                      std::string *error = nullptr);
/// Integer formats of 2..16 bits.
std::optional<Format> makeIntFormat(int bits, bool isSigned,
                                    std::string *error = nullptr);

/// Looks a format up by name: a named format (e4m3, e5m2, e2m3, e3m2, e2m1,
/// e8m0, ue4m3, f16, bf16, int8, int4, uint4, ...), or a parametric one:
///   [u]e<E>m<M>[b<BIAS>][-ieee|-fn|-finite]   e.g. e3m4, e4m3b11-ieee
///   int<N>, uint<N>
/// An unknown or invalid name gives nullopt and a message in `error`.
std::optional<Format> lookupFormat(std::string_view name,
                                   std::string *error = nullptr);

/// The named formats, in the order `lowbit formats` prints them.
const std::vector<Format> &namedFormats();

/// Names of the special-code conventions, as spelled in format names and
/// dialect attributes: "ieee", "fn", "finite".
std::string_view specialCodesName(SpecialCodes specials);
std::optional<SpecialCodes> parseSpecialCodes(std::string_view name);

/// Encodes one f32 value into `format` (bit-exact PTX cvt semantics; see
/// docs/numerics.md). This is the fast path's scalar form.
uint32_t encode(const Format &format, float value,
                const EncodeOptions &options = {});

} // namespace lowbit

#endif // LOWBIT_FORMAT_FORMAT_H
