//===- TestVectors.h - Reading tests/data and reporting mismatches --------===//
//
// The vector files are written by tools/gen_test_vectors.py; the layout is
// in tests/data/README.md: a 16-byte header ("LBV1", uint32 element bytes,
// uint64 count) and little-endian elements.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TESTS_UNIT_TESTVECTORS_H
#define LOWBIT_TESTS_UNIT_TESTVECTORS_H

#include "Oracle.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#ifndef LOWBIT_TEST_DATA_DIR
#error "LOWBIT_TEST_DATA_DIR must name tests/data"
#endif

namespace testvectors {

inline std::string dataPath(const std::string &name) {
  return std::string(LOWBIT_TEST_DATA_DIR) + "/" + name;
}

/// Reads one vector file; widens the elements to uint32. Throws (so the
/// test fails loudly) if the file is missing or malformed.
inline std::vector<uint32_t> load(const std::string &name) {
  std::ifstream in(dataPath(name), std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot open test vector file " + dataPath(name));
  char header[16];
  in.read(header, sizeof header);
  uint32_t elementBytes;
  uint64_t count;
  std::memcpy(&elementBytes, header + 4, 4);
  std::memcpy(&count, header + 8, 8);
  if (!in || std::memcmp(header, "LBV1", 4) != 0 ||
      (elementBytes != 1 && elementBytes != 2 && elementBytes != 4))
    throw std::runtime_error("bad header in " + name);
  std::vector<unsigned char> raw(size_t(count) * elementBytes);
  in.read(reinterpret_cast<char *>(raw.data()), std::streamsize(raw.size()));
  if (!in || in.peek() != EOF)
    throw std::runtime_error("wrong size: " + name);
  std::vector<uint32_t> values(count);
  for (size_t i = 0; i < count; ++i) {
    uint32_t value = 0;
    for (uint32_t b = 0; b < elementBytes; ++b) // little-endian
      value |= uint32_t(raw[i * elementBytes + b]) << (8 * b);
    values[i] = value;
  }
  return values;
}

inline float toFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}
inline uint32_t toBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

inline std::string hex(uint32_t value) {
  std::ostringstream out;
  out << "0x" << std::hex << value;
  return out.str();
}

/// Counts checks and mismatches of one vector set and keeps the first few
/// mismatches for the log. Prints one "vectors:" summary line.
class Tally {
public:
  explicit Tally(std::string label) : label(std::move(label)) {}

  void check(bool ok, const std::string &detail) {
    ++checked;
    if (ok)
      return;
    if (mismatches < 8)
      examples.push_back(detail);
    ++mismatches;
  }
  /// Convenience for code comparisons on an f32 input.
  void checkCode(float input, uint32_t got, uint32_t expected,
                 const char *what = "") {
    ++checked;
    if (got == expected)
      return;
    if (mismatches < 8) {
      std::ostringstream out;
      out.precision(9);
      out << what << (*what ? " " : "") << "input " << hex(toBits(input))
          << " (" << input << "): expected " << hex(expected) << ", got "
          << hex(got);
      examples.push_back(out.str());
    }
    ++mismatches;
  }

  /// Prints the summary and the first mismatches; returns the mismatch
  /// count (the test then REQUIREs it to be 0).
  uint64_t report() const {
    std::cout << "vectors: " << label << " " << checked << " checked, "
              << mismatches << " mismatches\n";
    for (const std::string &example : examples)
      std::cout << "  mismatch: " << example << "\n";
    return mismatches;
  }

  uint64_t checked = 0, mismatches = 0;

private:
  std::string label;
  std::vector<std::string> examples;
};

/// The code lowbit must give where ml_dtypes/numpy gave `reference` for
/// f32 `input`. ml_dtypes implements the non-saturating conversions; the
/// differences to lowbit's (PTX cvt) conventions are applied here, each
/// named:
///  - NaN input: PTX gives the canonical positive NaN (0x7F for e4m3 and
///    e5m2, 0xFF for e8m0, 0x7FFF for f16/bf16) and +max for e2m1, e2m3 and
///    e3m2. ml_dtypes keeps the NaN's sign (e4m3 0xFF), gives 0x7E/0xFE for
///    e5m2, and -0/+0 for FP4/FP6; numpy keeps the payload for f16.
///  - e8m0 zero gives 0x00 (2^-127, the smallest scale); ml_dtypes gives
///    0xFF (NaN).
///  - e8m0 negative inputs: lowbit encodes |x|, as NVIDIA's
///    __nv_cvt_float_to_e8m0 does (NvidiaConversionTest checks that);
///    ml_dtypes gives 0xFF (NaN). The expectation is the oracle's code for
///    |x|, since the vector row holds no reference for |x|.
///  - e8m0 inputs in (2^-127, 1.5 * 2^-127): ml_dtypes gives 0x01; the
///    nearest value is 2^-127 (0x00). (Exact ties between powers of two
///    round up in magnitude in both.)
///  - Saturating mode: where ml_dtypes gives inf or NaN for a non-NaN input
///    (overflow, +-inf), lowbit gives the signed max.
/// Integer vectors are already made with PTX's rule (rint, clip, NaN -> 0).
inline uint32_t expectedCode(const oracle::Oracle &format, float input,
                             uint32_t reference, bool saturate) {
  const oracle::Spec &spec = format.spec();
  if (spec.isInt)
    return reference;
  if (std::isnan(input))
    return format.nanResult();
  if (!spec.isSigned && input == 0)
    return 0; // e8m0 (ml_dtypes: 0xFF for +-0).
  if (!spec.isSigned && std::signbit(input))
    return format.encode(-input, saturate, oracle::Round::NearestEven);
  if (spec.manBits == 0 && !spec.isInt && input > std::ldexp(1.0f, -127) &&
      input < 1.5f * std::ldexp(1.0f, -127))
    return 0; // e8m0: ml_dtypes rounds every f32 subnormal input in
              // (2^-127, 2^-126) up to 2^-126 (0x01); the nearest value
              // below 1.5 * 2^-127 is 2^-127 (0x00).
  if (saturate && !std::isfinite(format.decode(reference))) {
    uint32_t sign = spec.isSigned && std::signbit(input)
                        ? 1u << (format.bits() - 1)
                        : 0;
    return format.maxCode() | sign;
  }
  return reference;
}

/// The formats the ml_dtypes vectors cover, with the bytes of their codes.
inline const std::vector<std::string> &mlDtypesFormats() {
  static const std::vector<std::string> names = {"e4m3", "e5m2", "e2m3",
                                                 "e3m2", "e2m1", "e8m0"};
  return names;
}

} // namespace testvectors

#endif // LOWBIT_TESTS_UNIT_TESTVECTORS_H
