//===- Codec.h - Fast f32/f16/bf16 <-> format conversion --------*- C++ -*-===//
//
// The bit-level fast path. One Codec is built per (format, options) and then
// converts arrays; the per-value work is branch-free integer arithmetic so
// that the compiler vectorizes it. The same arithmetic is what the lowering
// generates for targets without a native cvt.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_FORMAT_CODEC_H
#define LOWBIT_FORMAT_CODEC_H

#include "format/Format.h"

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace lowbit {

inline uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

inline float bitsToFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

/// Exact widening of IEEE binary16 and bfloat16 to f32.
float halfToFloat(uint16_t bits);
inline float bfloat16ToFloat(uint16_t bits) {
  return bitsToFloat(uint32_t(bits) << 16);
}
/// Round-to-nearest-even narrowing to IEEE binary16 and bfloat16, with
/// overflow to inf and NaN kept NaN (non-saturating, as IEEE conversions).
uint16_t floatToHalf(float value);
uint16_t floatToBFloat16(float value);

/// Precomputed constants for encoding f32 into one float format; see
/// Codec.cpp for how they are used.
struct FloatEncodeConstants {
  uint32_t droppedBits = 0;       // 23 - manBits
  int32_t rebias = 0;             // (127 - bias) << 23
  int32_t minNormalT = 0;         // smallest rebiased t of a normal
  int32_t subnormalShiftBase = 0; // right shift = base - unbiased exponent
  uint32_t maxMagnitude = 0;      // magnitude code of the largest finite
  uint32_t overflowMagnitude = 0; // magnitude code that overflow produces
  uint32_t nanCode = 0;           // full code a NaN input produces
  uint32_t signShift = 0;         // bit position of the sign in the code
  uint32_t signKeep = 1;          // 1 if signed, 0 if the sign is dropped
  uint32_t subnormalMask = ~0u;   // 0 when there are no subnormals
  uint32_t parityMask = 1;        // ties-to-even parity bit mask...
  uint32_t parityForce = 0;       // ...or 1 when a tie always rounds up
  Rounding rounding = Rounding::NearestEven;
};

/// Constants for `format` (all zero for integer formats, which need none).
FloatEncodeConstants makeEncodeConstants(const Format &format,
                                         const EncodeOptions &options);
/// Encodes one value with precomputed constants; cheap enough to call per
/// element.
uint32_t encodeWithConstants(const Format &format,
                             const FloatEncodeConstants &constants,
                             float value);

class Codec {
public:
  Codec(const Format &format, const EncodeOptions &options = {});

  const Format &format() const { return fmt; }

  uint32_t encode(float value) const;
  /// Array forms. Codes are stored one per element (no packing), in the
  /// smallest unsigned type that holds them.
  void encode(const float *input, uint8_t *codes, size_t count) const;
  void encode(const float *input, uint16_t *codes, size_t count) const;
  void encodeHalf(const uint16_t *input, uint8_t *codes, size_t count) const;
  void encodeBFloat16(const uint16_t *input, uint8_t *codes,
                      size_t count) const;

  float decode(uint32_t code) const { return decodeTable[code & fmt.codeMask()]; }
  void decode(const uint8_t *codes, float *output, size_t count) const;

private:
  Format fmt;
  EncodeOptions opts;
  FloatEncodeConstants floatConstants{};
  std::vector<float> decodeTable;
};

} // namespace lowbit

#endif // LOWBIT_FORMAT_CODEC_H
