//===- Oracle.h - Slow, independent reference for format conversion -------===//
//
// The tests' second opinion on lowbit's format model. It is written unlike
// the fast path (format/Codec.cpp) on purpose: it enumerates every code of
// a format, decodes it with plain arithmetic (std::ldexp) from the format's
// parameters, keeps the sorted table of finite magnitudes, and rounds an
// input by searching that table with exact double comparisons. The special
// cases (NaN, inf, overflow, unsigned, integers) follow the numeric
// contract's text (docs/numerics.md), not the fast path's code.
//
// The oracle takes a format's parameters, not a lowbit::Format, so a wrong
// derived value in the model (max, bias handling, ...) cannot leak in.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TESTS_UNIT_ORACLE_H
#define LOWBIT_TESTS_UNIT_ORACLE_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace oracle {

enum class Specials { Ieee, AllOnesNan, FiniteOnly };
enum class Round { NearestEven, TowardZero, TowardPosInf };

struct Spec {
  bool isInt = false;
  int expBits = 0, manBits = 0, bias = 0; // float formats
  int intBits = 0;                        // integer formats
  bool isSigned = true;
  Specials specials = Specials::FiniteOnly;
};

/// The named formats' parameters, written from the contract's table (not
/// taken from lowbit). nullopt for an unknown name.
std::optional<Spec> namedSpec(const std::string &name);

class Oracle {
public:
  explicit Oracle(const Spec &spec);

  const Spec &spec() const { return spec_; }
  int bits() const { return bits_; }
  uint32_t codeCount() const { return uint32_t(1) << bits_; }

  /// Exact value of a code (NaN for NaN codes, +-inf for inf codes).
  double decode(uint32_t code) const;
  bool isNan(uint32_t code) const;

  /// The code an f32 input gives. Saturating follows PTX .satfinite;
  /// rounding modes other than NearestEven are defined for saturating
  /// conversion only.
  uint32_t encode(float input, bool saturate = true,
                  Round round = Round::NearestEven) const;

  double maxValue() const { return magnitudes_.back(); }
  uint32_t maxCode() const { return magnitudeCodes_.back(); }
  /// The code a NaN input gives: the positive all-ones NaN if the format
  /// has NaN, else +max (PTX); 0 for integers (cvt.rni.sat).
  uint32_t nanResult() const;

private:
  uint32_t encodeInt(double value, Round round) const;
  uint32_t withSign(uint32_t magnitudeCode, bool negative) const;
  uint32_t overflowCode(bool negative, bool saturate) const;

  Spec spec_;
  int bits_ = 0;
  // Finite magnitudes (>= 0), ascending, and the magnitude code of each.
  std::vector<double> magnitudes_;
  std::vector<uint32_t> magnitudeCodes_;
  // The value one ulp above max, as if the format had one more binade of
  // finite codes: rounding decides overflow against it, as hardware does.
  double virtualNext_ = 0;
};

/// OCP MX scale exponents for an element format with largest value
/// `elementMax`: FLOOR k = floor(log2(amax)) - floor(log2(elementMax)),
/// RCEIL: the smallest k with 2^k >= amax / elementMax. Both clamp k to
/// [-127, 127].
int mxFloorExponent(double amax, double elementMax);
int mxRceilExponent(double amax, double elementMax);

} // namespace oracle

#endif // LOWBIT_TESTS_UNIT_ORACLE_H
