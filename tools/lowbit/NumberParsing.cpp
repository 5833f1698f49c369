//===- NumberParsing.cpp - Reading values and codes -----------------------===//

#include "tools/lowbit/NumberParsing.h"

#include <bit>
#include <cctype>
#include <cfenv>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>

namespace lowbit::cli {

std::optional<SourceType> parseSourceType(std::string_view name) {
  if (name == "f32")
    return SourceType::F32;
  if (name == "f16")
    return SourceType::F16;
  if (name == "bf16")
    return SourceType::BF16;
  return std::nullopt;
}

namespace {

bool equalsIgnoringCase(std::string_view text, std::string_view word) {
  if (text.size() != word.size())
    return false;
  for (size_t index = 0; index < text.size(); ++index)
    if (std::tolower(static_cast<unsigned char>(text[index])) != word[index])
      return false;
  return true;
}

/// Consumes digits of the given base; returns how many.
size_t skipDigits(std::string_view text, size_t &pos, bool hex) {
  size_t start = pos;
  while (pos < text.size() &&
         (hex ? std::isxdigit(static_cast<unsigned char>(text[pos]))
              : std::isdigit(static_cast<unsigned char>(text[pos]))))
    ++pos;
  return pos - start;
}

/// strtod accepts more than we want (leading blanks, "infinity", "nan(...)",
/// a trailing garbage it silently ignores), so the grammar is checked first:
///   [+-] digits [. digits] [(e|E) [+-] digits]
///   [+-] 0x hexdigits [. hexdigits] [(p|P) [+-] digits]
/// with at least one mantissa digit.
bool isNumericLiteral(std::string_view text) {
  size_t pos = 0;
  if (pos < text.size() && (text[pos] == '+' || text[pos] == '-'))
    ++pos;
  bool hex = text.size() - pos > 2 && text[pos] == '0' &&
             (text[pos + 1] == 'x' || text[pos + 1] == 'X');
  if (hex)
    pos += 2;
  size_t mantissaDigits = skipDigits(text, pos, hex);
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    mantissaDigits += skipDigits(text, pos, hex);
  }
  if (mantissaDigits == 0)
    return false;
  char exponentMark = hex ? 'p' : 'e';
  if (pos < text.size() &&
      std::tolower(static_cast<unsigned char>(text[pos])) == exponentMark) {
    ++pos;
    if (pos < text.size() && (text[pos] == '+' || text[pos] == '-'))
      ++pos;
    if (skipDigits(text, pos, /*hex=*/false) == 0)
      return false;
  }
  return pos == text.size();
}

/// Parses a checked literal to the double nearest it, rounded to odd: exact
/// values stay exact, and an inexact one becomes the truncated double with
/// its last bit set. Rounding that to a narrower type with
/// round-to-nearest-even then gives the correctly rounded result (round to
/// odd keeps the "above or below the tie" information a plain nearest parse
/// loses).
double parseDoubleRoundedToOdd(const std::string &literal) {
  int savedMode = std::fegetround();
  std::fesetround(FE_DOWNWARD);
  double below = std::strtod(literal.c_str(), nullptr);
  std::fesetround(FE_UPWARD);
  double above = std::strtod(literal.c_str(), nullptr);
  std::fesetround(savedMode);
  if (below == above)
    return below;
  double truncated = std::fabs(below) < std::fabs(above) ? below : above;
  return std::bit_cast<double>(std::bit_cast<uint64_t>(truncated) | 1);
}

} // namespace

double roundToBinary(double value, int manBits, int minExp, int maxExp) {
  if (value == 0 || !std::isfinite(value))
    return value;
  double magnitude = std::fabs(value);
  int frexpExponent;
  std::frexp(magnitude, &frexpExponent);
  int exponent = std::max(frexpExponent - 1, minExp);
  int quantumExponent = exponent - manBits;
  // Scaling by a power of two is exact, and so are floor and the difference;
  // the rounding below never depends on the FPU's rounding mode.
  double scaled = std::ldexp(magnitude, -quantumExponent);
  double integral = std::floor(scaled);
  double fraction = scaled - integral;
  if (fraction > 0.5 || (fraction == 0.5 && std::fmod(integral, 2.0) == 1.0))
    integral += 1;
  double rounded = std::ldexp(integral, quantumExponent);
  double maxFinite = std::ldexp(2.0 - std::ldexp(1.0, -manBits), maxExp);
  if (rounded > maxFinite)
    rounded = std::numeric_limits<double>::infinity();
  return std::copysign(rounded, value);
}

std::optional<float> parseValue(std::string_view text, SourceType type,
                                std::string *error) {
  std::string_view magnitudeText = text;
  bool negative = false;
  if (!magnitudeText.empty() &&
      (magnitudeText[0] == '+' || magnitudeText[0] == '-')) {
    negative = magnitudeText[0] == '-';
    magnitudeText.remove_prefix(1);
  }
  if (equalsIgnoringCase(magnitudeText, "inf") ||
      equalsIgnoringCase(magnitudeText, "infinity"))
    return negative ? -std::numeric_limits<float>::infinity()
                    : std::numeric_limits<float>::infinity();
  if (equalsIgnoringCase(magnitudeText, "nan"))
    return negative ? -std::numeric_limits<float>::quiet_NaN()
                    : std::numeric_limits<float>::quiet_NaN();
  if (!isNumericLiteral(text)) {
    *error = fmt::format("malformed number '{}'", text);
    return std::nullopt;
  }

  std::string literal(text);
  switch (type) {
  case SourceType::F32:
    // glibc's strtof rounds correctly (nearest-even, overflow to inf,
    // gradual underflow) in the default rounding mode.
    return std::strtof(literal.c_str(), nullptr);
  case SourceType::F16:
    return float(roundToBinary(parseDoubleRoundedToOdd(literal), 10, -14, 15));
  case SourceType::BF16:
    return float(roundToBinary(parseDoubleRoundedToOdd(literal), 7, -126, 127));
  }
  *error = "unknown source type";
  return std::nullopt;
}

std::optional<uint64_t> parseCode(std::string_view text, std::string *error) {
  std::string_view digits = text;
  int base = 10;
  if (digits.size() > 2 && digits[0] == '0' &&
      (digits[1] == 'x' || digits[1] == 'X')) {
    digits.remove_prefix(2);
    base = 16;
  }
  uint64_t code = 0;
  auto [end, status] =
      std::from_chars(digits.data(), digits.data() + digits.size(), code, base);
  if (digits.empty() || end != digits.data() + digits.size() ||
      status == std::errc::invalid_argument) {
    *error = fmt::format("malformed code '{}'", text);
    return std::nullopt;
  }
  if (status == std::errc::result_out_of_range)
    return std::numeric_limits<uint64_t>::max();
  return code;
}

} // namespace lowbit::cli
