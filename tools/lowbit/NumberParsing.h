//===- NumberParsing.h - Reading values and codes from the command line -===//
//
// Values are read exactly as the user wrote them and rounded once to the
// type named by --from, so `lowbit encode` shows what a kernel that is fed
// that type produces.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TOOLS_LOWBIT_NUMBERPARSING_H
#define LOWBIT_TOOLS_LOWBIT_NUMBERPARSING_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lowbit::cli {

/// The type a value is held in before it is encoded (a kernel's input).
enum class SourceType { F32, F16, BF16 };

std::optional<SourceType> parseSourceType(std::string_view name);

/// Parses a decimal or C hex-float literal ("0x1.8p3"), or inf/nan with an
/// optional sign, and rounds it to `type` with round-to-nearest-even. The
/// result is exactly representable in `type`, widened to float.
///
/// The rounding is correct for every input: f32 uses glibc's correctly
/// rounded strtof; f16 and bf16 read the literal as a double rounded to odd
/// (two directed parses), which a second rounding to a type at least two
/// bits narrower than double cannot turn into a double-rounding error. If
/// the C library ignored the rounding mode, the only inputs that could come
/// out wrong would be decimals with more than 17 significant digits lying
/// within 2^-53 (relative) of an f16/bf16 tie.
std::optional<float> parseValue(std::string_view text, SourceType type,
                                std::string *error);

/// Parses a code: "0x" hex or decimal, no sign. A number too large for 64
/// bits reads as UINT64_MAX, which no format can hold, so the caller
/// reports it as not fitting.
std::optional<uint64_t> parseCode(std::string_view text, std::string *error);

/// Round-to-nearest-even of a finite or infinite double to a binary float
/// with `manBits` fraction bits, normal exponents in [minExp, maxExp] and
/// subnormals below; overflow gives inf and NaN stays NaN. Exposed for the
/// f16/bf16 path, which must not round through f32 first.
double roundToBinary(double value, int manBits, int minExp, int maxExp);

} // namespace lowbit::cli

#endif // LOWBIT_TOOLS_LOWBIT_NUMBERPARSING_H
