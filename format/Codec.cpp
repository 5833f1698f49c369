//===- Codec.cpp - Bit-level f32 -> format conversion ---------------------===//
//
// Encoding works on the f32 bit pattern. An f32 subnormal input is first
// scaled by 2^64 (exact) so every input is a normalized (exponent, 24-bit
// significand) pair. Then, with t = ((E + bias) << 23) | fraction:
//   - if E is in the format's normal range, rounding t at bit (23 - manBits)
//     gives the code directly; a carry out of the mantissa bumps the exponent
//     field, which is exactly what rounding up to the next binade means;
//   - below it, the 24-bit significand is shifted right into the subnormal
//     grid and rounded there.
// Both candidates are computed and one is selected, so the loop has no
// data-dependent branches and vectorizes.
//
//===----------------------------------------------------------------------===//

#include "format/Codec.h"

#include <algorithm>
#include <cmath>

// The array loops are vectorized integer code that needs per-lane variable
// shifts: AVX2 has them, baseline x86-64 does not. Clone the entry points
// and let the loader pick; the results are the same bits either way.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define LOWBIT_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define LOWBIT_VECTOR_CLONES
#endif

namespace lowbit {
namespace {

FloatEncodeConstants makeFloatConstants(const Format &format,
                                        const EncodeOptions &options) {
  const FloatParams &params = format.floatParams();
  FloatEncodeConstants constants{};
  constants.droppedBits = uint32_t(23 - params.manBits);
  constants.rebias = (127 - params.bias) << 23;
  constants.minNormalT = format.hasSubnormals() ? (1 << 23) : 0;
  constants.subnormalShiftBase = 24 - params.bias - params.manBits;
  uint32_t magnitudeBits = uint32_t(params.expBits + params.manBits);
  uint32_t magnitudeMask = (uint32_t(1) << magnitudeBits) - 1;
  constants.maxMagnitude = format.maxCode();
  constants.overflowMagnitude = format.maxCode();
  if (!options.saturate) {
    if (params.specials == SpecialCodes::Ieee)
      constants.overflowMagnitude = ((uint32_t(1) << params.expBits) - 1)
                                    << params.manBits;
    else if (params.specials == SpecialCodes::AllOnesNan)
      constants.overflowMagnitude = magnitudeMask;
  }
  constants.nanCode = format.nanResultCode();
  constants.signShift = magnitudeBits;
  // Unsigned float formats encode |x|, as NVIDIA's __nv_cvt_float_to_e8m0
  // does.
  constants.signKeep = format.isSigned() ? 1 : 0;
  constants.subnormalMask = format.hasSubnormals() ? ~0u : 0u;
  // With no mantissa bits the significand's last digit is the implicit 1,
  // so a tie has no even neighbour; it rounds up in magnitude (ml_dtypes
  // does the same for e8m0).
  constants.parityMask = params.manBits == 0 ? 0 : 1;
  constants.parityForce = params.manBits == 0 ? 1 : 0;
  constants.rounding = options.rounding;
  return constants;
}

// Written with masks and value selects only, so that the array loops below
// vectorize; every flag of the format is folded into a constant mask.
template <Rounding kRounding>
inline uint32_t encodeFloatBits(const FloatEncodeConstants &c, uint32_t bits) {
  uint32_t sign = (bits >> 31) & c.signKeep;
  uint32_t magnitudeBits = bits & 0x7fffffffu;
  uint32_t f32Subnormal = magnitudeBits < 0x00800000u;
  uint32_t scaled = floatBits(bitsToFloat(magnitudeBits) * 0x1p64f);
  uint32_t normalized = f32Subnormal ? scaled : magnitudeBits;
  int32_t exponent =
      int32_t(normalized >> 23) - 127 - int32_t(f32Subnormal * 64);
  int32_t t = int32_t(normalized) - c.rebias - int32_t(f32Subnormal << 29);
  // Toward +inf rounds magnitudes up for positive inputs (and for every
  // input of an unsigned format, which encodes |x|).
  uint32_t roundUp = kRounding == Rounding::TowardPosInf ? (sign ^ 1u) : 0u;

  // Normal range: round t at droppedBits. Unsigned arithmetic: t is huge for
  // inf and NaN, and the add must not overflow.
  uint32_t droppedMask = (uint32_t(1) << c.droppedBits) - 1;
  uint32_t increment = 0;
  if constexpr (kRounding == Rounding::NearestEven)
    increment = (droppedMask >> 1) +
                (((uint32_t(t) >> c.droppedBits) & c.parityMask) |
                 c.parityForce);
  else if constexpr (kRounding == Rounding::TowardPosInf)
    increment = droppedMask & (0u - roundUp);
  uint32_t normalCode = (uint32_t(t) + increment) >> c.droppedBits;

  // Subnormal range: shift the 24-bit significand onto the subnormal grid.
  uint32_t significand = (normalized & 0x007fffffu) | 0x00800000u;
  int32_t shiftSigned = c.subnormalShiftBase - exponent;
  uint32_t shift = uint32_t(std::min(std::max(shiftSigned, 1), 31));
  // The same add-then-shift rounding as the normal range; significand <
  // 2^24 and shift <= 31 keep the sum below 2^32.
  uint32_t shiftMask = (uint32_t(1) << shift) - 1;
  uint32_t subnormalIncrement = 0;
  if constexpr (kRounding == Rounding::NearestEven)
    subnormalIncrement = (shiftMask >> 1) + ((significand >> shift) & 1);
  else if constexpr (kRounding == Rounding::TowardPosInf)
    subnormalIncrement = shiftMask & (0u - roundUp);
  uint32_t subnormalCode =
      ((significand + subnormalIncrement) >> shift) & c.subnormalMask;

  uint32_t magnitude = t >= c.minNormalT ? normalCode : subnormalCode;
  magnitude = magnitudeBits == 0 ? 0u : magnitude;
  magnitude = magnitude > c.maxMagnitude ? c.overflowMagnitude : magnitude;
  uint32_t code = magnitude | (sign << c.signShift);
  return magnitudeBits > 0x7f800000u ? c.nanCode : code;
}

template <Rounding kRounding>
inline uint32_t encodeIntValue(const Format &format, float value) {
  if (std::isnan(value))
    return 0;
  float rounded;
  if constexpr (kRounding == Rounding::NearestEven)
    rounded = std::nearbyint(value);
  else if constexpr (kRounding == Rounding::TowardZero)
    rounded = std::trunc(value);
  else
    rounded = std::ceil(value);
  float clamped =
      std::clamp(rounded, float(format.intMin()), float(format.intMax()));
  return uint32_t(int32_t(clamped)) & format.codeMask();
}

template <Rounding kRounding, typename In, typename Out, typename Widen>
[[gnu::always_inline]] inline void encodeArray(const Format &format, const FloatEncodeConstants &constants,
                 const In *input, Out *codes, size_t count, Widen widen) {
  if (format.isInt()) {
    for (size_t i = 0; i < count; ++i)
      codes[i] = Out(encodeIntValue<kRounding>(format, widen(input[i])));
    return;
  }
  // A local copy: byte stores may alias the constants, which would force a
  // reload per element and block vectorization.
  const FloatEncodeConstants local = constants;
  for (size_t i = 0; i < count; ++i)
    codes[i] =
        Out(encodeFloatBits<kRounding>(local, floatBits(widen(input[i]))));
}

template <typename In, typename Out, typename Widen>
[[gnu::always_inline]] inline void dispatchEncode(const Format &format, const FloatEncodeConstants &constants,
                    const In *input, Out *codes, size_t count, Widen widen) {
  switch (constants.rounding) {
  case Rounding::NearestEven:
    return encodeArray<Rounding::NearestEven>(format, constants, input, codes,
                                              count, widen);
  case Rounding::TowardZero:
    return encodeArray<Rounding::TowardZero>(format, constants, input, codes,
                                             count, widen);
  case Rounding::TowardPosInf:
    return encodeArray<Rounding::TowardPosInf>(format, constants, input,
                                               codes, count, widen);
  }
}

// Lambdas rather than function pointers, so that the widening inlines.
constexpr auto kIdentity = [](float value) { return value; };
constexpr auto kWidenHalf = [](uint16_t bits) { return halfToFloat(bits); };
constexpr auto kWidenBFloat16 = [](uint16_t bits) {
  return bfloat16ToFloat(bits);
};

} // namespace

float halfToFloat(uint16_t bits) {
  uint32_t sign = uint32_t(bits >> 15) << 31;
  uint32_t exponent = (bits >> 10) & 0x1f;
  uint32_t mantissa = bits & 0x3ff;
  if (exponent == 0x1f)
    return bitsToFloat(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    // Subnormal or zero: mantissa * 2^-24, exact in f32.
    float magnitude = float(mantissa) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  return bitsToFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

uint16_t floatToHalf(float value) {
  static const Codec codec(*lookupFormat("f16"), EncodeOptions{false});
  uint32_t bits = floatBits(value);
  // Keep the sign and payload of a NaN, as IEEE conversions do.
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((bits >> 16 & 0x8000u) | 0x7e00u | (bits >> 13 & 0x3ffu));
  return uint16_t(codec.encode(value));
}

uint16_t floatToBFloat16(float value) {
  static const Codec codec(*lookupFormat("bf16"), EncodeOptions{false});
  uint32_t bits = floatBits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((bits >> 16) | 0x0040u);
  return uint16_t(codec.encode(value));
}

FloatEncodeConstants makeEncodeConstants(const Format &format,
                                         const EncodeOptions &options) {
  if (!format.isFloat()) {
    FloatEncodeConstants constants;
    constants.rounding = options.rounding;
    return constants;
  }
  return makeFloatConstants(format, options);
}

uint32_t encodeWithConstants(const Format &format,
                             const FloatEncodeConstants &constants,
                             float value) {
  uint32_t code = 0;
  dispatchEncode(format, constants, &value, &code, 1, kIdentity);
  return code;
}

Codec::Codec(const Format &format, const EncodeOptions &options)
    : fmt(format), opts(options),
      floatConstants(makeEncodeConstants(format, options)) {
  decodeTable.resize(format.codeCount());
  for (uint32_t code = 0; code < format.codeCount(); ++code)
    decodeTable[code] = format.decodeToFloat(code);
}

uint32_t Codec::encode(float value) const {
  return encodeWithConstants(fmt, floatConstants, value);
}

LOWBIT_VECTOR_CLONES
void Codec::encode(const float *input, uint8_t *codes, size_t count) const {
  dispatchEncode(fmt, floatConstants, input, codes, count, kIdentity);
}

LOWBIT_VECTOR_CLONES
void Codec::encode(const float *input, uint16_t *codes, size_t count) const {
  dispatchEncode(fmt, floatConstants, input, codes, count, kIdentity);
}

LOWBIT_VECTOR_CLONES
void Codec::encodeHalf(const uint16_t *input, uint8_t *codes,
                       size_t count) const {
  dispatchEncode(fmt, floatConstants, input, codes, count, kWidenHalf);
}

LOWBIT_VECTOR_CLONES
void Codec::encodeBFloat16(const uint16_t *input, uint8_t *codes,
                           size_t count) const {
  dispatchEncode(fmt, floatConstants, input, codes, count, kWidenBFloat16);
}

void Codec::decode(const uint8_t *codes, float *output, size_t count) const {
  uint32_t mask = fmt.codeMask();
  for (size_t i = 0; i < count; ++i)
    output[i] = decodeTable[codes[i] & mask];
}

} // namespace lowbit
