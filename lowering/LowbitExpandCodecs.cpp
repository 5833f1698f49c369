//===- LowbitExpandCodecs.cpp - lowbit.encode/decode -> arith -------------===//
//
// Expands the scalar conversion ops into plain integer and float arith ops
// that run the same on every target. Encoding reproduces format/Codec.cpp
// (encodeFloatBits, encodeIntValue) step for step, with the constants from
// the model's makeEncodeConstants, so the two are bit-identical by
// construction and the Catch2 test in tests/gpu checks it over every f16 and
// bf16 input and random f32.
//
// Decoding uses bit arithmetic rather than a table built from
// Format::decode: a table would need 65536 entries for 16-bit formats, and
// on the GPU a dynamically indexed constant array goes through local
// memory. The arithmetic below is branch-free and exact for every format
// the model accepts (every value is an f32 normal or subnormal). Where every
// value is an f32 normal (e2m1, e4m3, e5m2, ue4m3, ...; not e8m0), the
// code's bits are rebiased in place: one multiply-add, and for a subnormal
// code one subtraction, instead of the general form's int-to-float
// conversion and exponent arithmetic (a third of a dequantize kernel's
// integer instructions on sm_90a; docs/numerics.md, "Decoding").
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"

#include "dialect/LowbitOps.h"
#include "format/Codec.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <algorithm>
#include <cmath>

#define DEBUG_TYPE "lowbit-expand-codecs"

namespace lowbit {
#define GEN_PASS_DEF_LOWBITEXPANDCODECS
#include "lowering/Passes.h.inc"
} // namespace lowbit

using namespace mlir;

namespace {

/// Emits i32 / f32 arithmetic on scalars or on vectors of `shapeLike`'s
/// shape; constants are splatted to match.
class CodecBuilder {
public:
  CodecBuilder(ImplicitLocOpBuilder &builder, Type shapeLike)
      : b(builder), vectorType(dyn_cast<VectorType>(shapeLike)) {}

  Type shaped(Type element) const {
    return vectorType ? Type(VectorType::get(vectorType.getShape(), element))
                      : element;
  }
  Type i32() const { return shaped(b.getI32Type()); }
  Type f32() const { return shaped(b.getF32Type()); }
  Type i1() const { return shaped(b.getI1Type()); }

  Value u32(uint32_t value) {
    Attribute attr = b.getI32IntegerAttr(int32_t(value));
    if (vectorType)
      attr = DenseElementsAttr::get(cast<ShapedType>(i32()), attr);
    return arith::ConstantOp::create(b, cast<TypedAttr>(attr));
  }
  Value s32(int32_t value) { return u32(uint32_t(value)); }
  Value f32Const(float value) {
    Attribute attr = b.getF32FloatAttr(value);
    if (vectorType)
      attr = DenseElementsAttr::get(cast<ShapedType>(f32()), attr);
    return arith::ConstantOp::create(b, cast<TypedAttr>(attr));
  }

  Value add(Value x, Value y) { return arith::AddIOp::create(b, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, x, y); }
  Value band(Value x, Value y) { return arith::AndIOp::create(b, x, y); }
  Value bor(Value x, Value y) { return arith::OrIOp::create(b, x, y); }
  Value bxor(Value x, Value y) { return arith::XOrIOp::create(b, x, y); }
  Value shl(Value x, Value y) { return arith::ShLIOp::create(b, x, y); }
  Value lshr(Value x, Value y) { return arith::ShRUIOp::create(b, x, y); }
  Value ashr(Value x, Value y) { return arith::ShRSIOp::create(b, x, y); }
  Value cmp(arith::CmpIPredicate predicate, Value x, Value y) {
    return arith::CmpIOp::create(b, predicate, x, y);
  }
  Value cmpf(arith::CmpFPredicate predicate, Value x, Value y) {
    return arith::CmpFOp::create(b, predicate, x, y);
  }
  Value select(Value condition, Value x, Value y) {
    return arith::SelectOp::create(b, condition, x, y);
  }
  Value zext(Value flag) { return arith::ExtUIOp::create(b, i32(), flag); }
  Value toBits(Value value) {
    return arith::BitcastOp::create(b, i32(), value);
  }
  Value toFloat(Value bits) { return arith::BitcastOp::create(b, f32(), bits); }

  ImplicitLocOpBuilder &b;
  VectorType vectorType;
};

/// Codec.cpp's encodeFloatBits, one arith op per C++ operation.
Value encodeFloat(CodecBuilder &cb, const lowbit::FloatEncodeConstants &c,
                  Value input) {
  using P = arith::CmpIPredicate;
  Value bits = cb.toBits(input);
  Value sign = cb.band(cb.lshr(bits, cb.u32(31)), cb.u32(c.signKeep));
  Value magnitudeBits = cb.band(bits, cb.u32(0x7fffffffu));
  Value f32Subnormal = cb.cmp(P::ult, magnitudeBits, cb.u32(0x00800000u));
  // Scaling an f32 subnormal by 2^64 is exact and makes it normal; arith
  // float ops keep subnormals on both targets (no flush-to-zero flag).
  Value scaled = cb.toBits(arith::MulFOp::create(
      cb.b, cb.toFloat(magnitudeBits), cb.f32Const(0x1p64f)));
  Value normalized = cb.select(f32Subnormal, scaled, magnitudeBits);
  Value exponent = cb.sub(cb.sub(cb.lshr(normalized, cb.u32(23)), cb.u32(127)),
                          cb.select(f32Subnormal, cb.u32(64), cb.u32(0)));
  Value t = cb.sub(cb.sub(normalized, cb.s32(c.rebias)),
                   cb.select(f32Subnormal, cb.u32(1u << 29), cb.u32(0)));
  Value roundUp = c.rounding == lowbit::Rounding::TowardPosInf
                      ? cb.bxor(sign, cb.u32(1))
                      : cb.u32(0);

  // Normal range: round t at droppedBits.
  uint32_t droppedMask = (uint32_t(1) << c.droppedBits) - 1;
  Value dropped = cb.u32(c.droppedBits);
  Value increment = cb.u32(0);
  if (c.rounding == lowbit::Rounding::NearestEven)
    increment =
        cb.add(cb.u32(droppedMask >> 1),
               cb.bor(cb.band(cb.lshr(t, dropped), cb.u32(c.parityMask)),
                      cb.u32(c.parityForce)));
  else if (c.rounding == lowbit::Rounding::TowardPosInf)
    increment = cb.band(cb.u32(droppedMask), cb.sub(cb.u32(0), roundUp));
  Value normalCode = cb.lshr(cb.add(t, increment), dropped);

  // Subnormal range: the 24-bit significand shifted onto the format's grid.
  Value significand =
      cb.bor(cb.band(normalized, cb.u32(0x007fffffu)), cb.u32(0x00800000u));
  Value shiftSigned = cb.sub(cb.s32(c.subnormalShiftBase), exponent);
  Value shift = arith::MinSIOp::create(
      cb.b, arith::MaxSIOp::create(cb.b, shiftSigned, cb.u32(1)), cb.u32(31));
  Value shiftMask = cb.sub(cb.shl(cb.u32(1), shift), cb.u32(1));
  Value subnormalIncrement = cb.u32(0);
  if (c.rounding == lowbit::Rounding::NearestEven)
    subnormalIncrement =
        cb.add(cb.lshr(shiftMask, cb.u32(1)),
               cb.band(cb.lshr(significand, shift), cb.u32(1)));
  else if (c.rounding == lowbit::Rounding::TowardPosInf)
    subnormalIncrement = cb.band(shiftMask, cb.sub(cb.u32(0), roundUp));
  Value subnormalCode =
      cb.band(cb.lshr(cb.add(significand, subnormalIncrement), shift),
              cb.u32(c.subnormalMask));

  Value magnitude = cb.select(cb.cmp(P::sge, t, cb.s32(c.minNormalT)),
                              normalCode, subnormalCode);
  magnitude =
      cb.select(cb.cmp(P::eq, magnitudeBits, cb.u32(0)), cb.u32(0), magnitude);
  magnitude = cb.select(cb.cmp(P::ugt, magnitude, cb.u32(c.maxMagnitude)),
                        cb.u32(c.overflowMagnitude), magnitude);
  Value code = cb.bor(magnitude, cb.shl(sign, cb.u32(c.signShift)));
  return cb.select(cb.cmp(P::ugt, magnitudeBits, cb.u32(0x7f800000u)),
                   cb.u32(c.nanCode), code);
}

/// Whether encodeFloatRnSaturating gives encodeFloat's bits: round to
/// nearest even, saturating, a format with subnormals and mantissa bits
/// (e2m1, e2m3, e3m2, e4m3, e5m2, ue4m3 and most parametric formats), and
/// a magic constant 2^subnormalShiftBase that is a normal f32.
bool hasRnSaturatingEncoder(const lowbit::Format &format,
                            const lowbit::EncodeOptions &options,
                            const lowbit::FloatEncodeConstants &c) {
  return format.isFloat() && format.hasSubnormals() &&
         format.floatParams().manBits > 0 && options.saturate &&
         c.rounding == lowbit::Rounding::NearestEven &&
         c.subnormalShiftBase >= -126 && c.subnormalShiftBase <= 127;
}

/// The same bits as encodeFloat for hasRnSaturatingEncoder's formats, in
/// about a third of the ops. Below the smallest normal, adding the magic
/// constant 2^subnormalShiftBase (whose f32 ulp is the format's subnormal
/// spacing) rounds |x| onto the subnormal grid with the FPU's own
/// round-to-nearest-even, as encodeFloat's shift-and-round does (f32
/// subnormal inputs included: the add keeps them, no flush to zero).
/// Above it, t is rounded at droppedBits as in encodeFloat; inf and every
/// overflow exceed maxMagnitude and clamp to it (saturating); NaN gives
/// nanCode.
Value encodeFloatRnSaturating(CodecBuilder &cb,
                              const lowbit::FloatEncodeConstants &c,
                              Value input) {
  using P = arith::CmpIPredicate;
  Value bits = cb.toBits(input);
  Value magnitudeBits = cb.band(bits, cb.u32(0x7fffffffu));
  Value dropped = cb.u32(c.droppedBits);
  uint32_t droppedMask = (uint32_t(1) << c.droppedBits) - 1;
  Value t = cb.sub(magnitudeBits, cb.s32(c.rebias));
  Value parity = cb.band(cb.lshr(t, dropped), cb.u32(1));
  Value normalCode =
      cb.lshr(cb.add(t, cb.add(parity, cb.u32(droppedMask >> 1))), dropped);
  Value magic = cb.f32Const(std::ldexp(1.0f, c.subnormalShiftBase));
  Value subnormalCode = cb.sub(
      cb.toBits(arith::AddFOp::create(cb.b, cb.toFloat(magnitudeBits), magic)),
      cb.toBits(magic));
  uint32_t minNormalBits = uint32_t(c.rebias + c.minNormalT);
  Value magnitude =
      cb.select(cb.cmp(P::ult, magnitudeBits, cb.u32(minNormalBits)),
                subnormalCode, normalCode);
  magnitude = arith::MinUIOp::create(cb.b, magnitude, cb.u32(c.maxMagnitude));
  Value code = magnitude;
  if (c.signKeep)
    code = cb.bor(code, cb.shl(cb.lshr(bits, cb.u32(31)), cb.u32(c.signShift)));
  return cb.select(cb.cmp(P::ugt, magnitudeBits, cb.u32(0x7f800000u)),
                   cb.u32(c.nanCode), code);
}

/// Codec.cpp's encodeIntValue: round (rn/rz/rp), clamp, NaN gives 0.
/// Clamping first and rounding second gives the same result because the
/// bounds are integers, and keeps the conversion in range.
Value encodeInt(CodecBuilder &cb, const lowbit::Format &format,
                lowbit::Rounding rounding, Value input) {
  using F = arith::CmpFPredicate;
  using P = arith::CmpIPredicate;
  Value lowest = cb.f32Const(float(format.intMin()));
  Value highest = cb.f32Const(float(format.intMax()));
  Value isNan = cb.cmpf(F::UNO, input, input);
  Value clamped = cb.select(isNan, cb.f32Const(0.0f), input);
  clamped = cb.select(cb.cmpf(F::OLT, clamped, lowest), lowest, clamped);
  clamped = cb.select(cb.cmpf(F::OGT, clamped, highest), highest, clamped);
  Value rounded;
  if (rounding == lowbit::Rounding::NearestEven &&
      std::max(-format.intMin(), format.intMax()) <= (int64_t(1) << 22)) {
    // For |x| <= 2^22, x + 1.5 * 2^23 lies in [2^23, 2^24), where the f32
    // ulp is 1: the add rounds x to an integer with the FPU's ties-to-even,
    // and the sum's bits are 0x4b400000 + that integer (two's complement
    // below zero). Two ops instead of a truncation, a fraction and four
    // comparisons; on NVPTX, add.f32 and sub.s32.
    constexpr uint32_t kMagicBits = 0x4b400000u; // 1.5 * 2^23
    Value sum =
        arith::AddFOp::create(cb.b, clamped, cb.toFloat(cb.u32(kMagicBits)));
    rounded = cb.sub(cb.toBits(sum), cb.u32(kMagicBits));
  } else {
    // fptosi truncates toward zero; the fraction it drops is exact in f32.
    Value truncated = arith::FPToSIOp::create(cb.b, cb.i32(), clamped);
    Value fraction = arith::SubFOp::create(
        cb.b, clamped, arith::SIToFPOp::create(cb.b, cb.f32(), truncated));
    rounded = truncated;
    if (rounding == lowbit::Rounding::NearestEven) {
      Value odd = cb.cmp(P::ne, cb.band(truncated, cb.u32(1)), cb.u32(0));
      Value half = cb.f32Const(0.5f), minusHalf = cb.f32Const(-0.5f);
      Value up = arith::OrIOp::create(
          cb.b, cb.cmpf(F::OGT, fraction, half),
          arith::AndIOp::create(cb.b, cb.cmpf(F::OEQ, fraction, half), odd));
      Value down = arith::OrIOp::create(
          cb.b, cb.cmpf(F::OLT, fraction, minusHalf),
          arith::AndIOp::create(cb.b, cb.cmpf(F::OEQ, fraction, minusHalf),
                                odd));
      rounded = cb.sub(cb.add(truncated, cb.zext(up)), cb.zext(down));
    } else if (rounding == lowbit::Rounding::TowardPosInf) {
      rounded = cb.add(truncated,
                       cb.zext(cb.cmpf(F::OGT, fraction, cb.f32Const(0.0f))));
    }
  }
  return cb.band(rounded, cb.u32(format.codeMask()));
}

/// value = s * 2^k for an integer significand s < 2^24, built from the bits
/// of uitofp(s) (exact) with k added to the exponent field. When the result
/// is an f32 subnormal (e8m0's 2^-127, wide-exponent formats), k + 64 is
/// added instead and the float is scaled by 2^-64, exactly.
Value scaleSignificand(CodecBuilder &cb, Value significand, Value exponentK) {
  using P = arith::CmpIPredicate;
  Value asFloat =
      cb.toBits(arith::UIToFPOp::create(cb.b, cb.f32(), significand));
  Value fieldAfter = cb.add(cb.lshr(asFloat, cb.u32(23)), exponentK);
  Value normal = cb.add(asFloat, cb.shl(exponentK, cb.u32(23)));
  Value lifted =
      cb.add(asFloat, cb.shl(cb.add(exponentK, cb.u32(64)), cb.u32(23)));
  Value subnormal = cb.toBits(
      arith::MulFOp::create(cb.b, cb.toFloat(lifted), cb.f32Const(0x1p-64f)));
  Value bits =
      cb.select(cb.cmp(P::sge, fieldAfter, cb.u32(1)), normal, subnormal);
  return cb.select(cb.cmp(P::eq, significand, cb.u32(0)), cb.u32(0), bits);
}

/// Whether every finite value of `format` and 2^(1 - bias) are f32 normals
/// reached by rebiasing the exponent field: the low-bit formats (e2m1,
/// e4m3, e5m2, ue4m3, ...), not e8m0 (2^-127) or f16 (its subnormals).
bool decodesToF32Normals(const lowbit::Format &format) {
  const lowbit::FloatParams &params = format.floatParams();
  // Without subnormals, exponent field 0 is a normal binade (e8m0's 2^-127).
  int lowestExponent = (format.hasSubnormals() ? 1 : 0) - params.bias;
  int highestExponent = int((uint32_t(1) << params.expBits) - 1) - params.bias;
  return lowestExponent >= -126 && highestExponent <= 127 &&
         params.manBits <= 23 &&
         (!format.hasSubnormals() || lowestExponent - params.manBits >= -126);
}

Value decodeFloat(CodecBuilder &cb, const lowbit::Format &format, Value code) {
  using P = arith::CmpIPredicate;
  const lowbit::FloatParams &params = format.floatParams();
  uint32_t magnitudeBits = uint32_t(params.expBits + params.manBits);
  uint32_t magnitudeMask = (uint32_t(1) << magnitudeBits) - 1;
  uint32_t manMask = (uint32_t(1) << params.manBits) - 1;
  uint32_t expAllOnes = (uint32_t(1) << params.expBits) - 1;

  Value magnitude = cb.band(code, cb.u32(magnitudeMask));
  Value exponentField = cb.lshr(magnitude, cb.u32(params.manBits));
  Value mantissa = cb.band(magnitude, cb.u32(manMask));
  Value bits;
  if (decodesToF32Normals(format)) {
    // The format's exponent field and mantissa, moved into an f32's and
    // rebiased, are the value's bits (one multiply-add); a subnormal code
    // is that with exponent field 1, minus 2^(1 - bias), exactly.
    Value normal = cb.add(cb.shl(magnitude, cb.u32(23 - params.manBits)),
                          cb.u32(uint32_t(127 - params.bias) << 23));
    bits = normal;
    if (format.hasSubnormals()) {
      Value lifted = arith::SubFOp::create(
          cb.b, cb.toFloat(cb.add(normal, cb.u32(1u << 23))),
          cb.f32Const(std::ldexp(1.0f, 1 - params.bias)));
      bits = cb.select(cb.cmp(P::eq, exponentField, cb.u32(0)),
                       cb.toBits(lifted), normal);
    }
  } else {
    // Normal: (2^M + m) * 2^(e - bias - M). Subnormal (e == 0 in a format
    // with subnormals): m * 2^(1 - bias - M).
    Value isSubnormal = format.hasSubnormals()
                            ? cb.cmp(P::eq, exponentField, cb.u32(0))
                            : cb.cmp(P::ne, cb.u32(0), cb.u32(0));
    Value significand =
        cb.select(isSubnormal, mantissa,
                  cb.bor(mantissa, cb.u32(uint32_t(1) << params.manBits)));
    Value exponentK = cb.sub(cb.select(isSubnormal, cb.u32(1), exponentField),
                             cb.s32(params.bias + params.manBits));
    bits = scaleSignificand(cb, significand, exponentK);
  }

  if (params.specials == lowbit::SpecialCodes::Ieee) {
    Value expIsAllOnes = cb.cmp(P::eq, exponentField, cb.u32(expAllOnes));
    Value special = cb.select(cb.cmp(P::eq, mantissa, cb.u32(0)),
                              cb.u32(0x7f800000u), cb.u32(0x7fc00000u));
    bits = cb.select(expIsAllOnes, special, bits);
  } else if (params.specials == lowbit::SpecialCodes::AllOnesNan) {
    bits = cb.select(cb.cmp(P::eq, magnitude, cb.u32(magnitudeMask)),
                     cb.u32(0x7fc00000u), bits);
  }
  if (format.isSigned()) {
    Value sign = cb.band(cb.lshr(code, cb.u32(magnitudeBits)), cb.u32(1));
    bits = cb.bor(bits, cb.shl(sign, cb.u32(31)));
  }
  return cb.toFloat(bits);
}

Value decodeInt(CodecBuilder &cb, const lowbit::Format &format, Value code) {
  if (!format.isSigned())
    return arith::UIToFPOp::create(cb.b, cb.f32(),
                                   cb.band(code, cb.u32(format.codeMask())));
  // Sign-extend the format's bits from the top of the word.
  Value shift = cb.u32(32 - format.bits());
  return arith::SIToFPOp::create(cb.b, cb.f32(),
                                 cb.ashr(cb.shl(code, shift), shift));
}

void expandEncode(lowbit::dialect::EncodeOp op) {
  ImplicitLocOpBuilder builder(op.getLoc(), op);
  CodecBuilder cb(builder, op.getInput().getType());
  lowbit::Format format = op.getModelFormat();
  lowbit::EncodeOptions options = op.getEncodeOptions();
  lowbit::FloatEncodeConstants constants =
      lowbit::makeEncodeConstants(format, options);
  Value code;
  if (format.isInt())
    code = encodeInt(cb, format, options.rounding, op.getInput());
  else if (hasRnSaturatingEncoder(format, options, constants))
    code = encodeFloatRnSaturating(cb, constants, op.getInput());
  else
    code = encodeFloat(cb, constants, op.getInput());
  Value result = arith::TruncIOp::create(builder, op.getType(), code);
  op.replaceAllUsesWith(result);
  op.erase();
}

void expandDecode(lowbit::dialect::DecodeOp op) {
  ImplicitLocOpBuilder builder(op.getLoc(), op);
  CodecBuilder cb(builder, op.getType());
  lowbit::Format format = op.getModelFormat();
  Value code = arith::ExtUIOp::create(builder, cb.i32(), op.getInput());
  Value result = format.isInt() ? decodeInt(cb, format, code)
                                : decodeFloat(cb, format, code);
  op.replaceAllUsesWith(result);
  op.erase();
}

struct LowbitExpandCodecs
    : lowbit::impl::LowbitExpandCodecsBase<LowbitExpandCodecs> {
  void runOnOperation() override {
    SmallVector<Operation *> conversions;
    getOperation()->walk([&](Operation *op) {
      if (isa<lowbit::dialect::EncodeOp, lowbit::dialect::DecodeOp>(op))
        conversions.push_back(op);
    });
    for (Operation *op : conversions) {
      if (auto encode = dyn_cast<lowbit::dialect::EncodeOp>(op))
        expandEncode(encode);
      else
        expandDecode(cast<lowbit::dialect::DecodeOp>(op));
    }
  }
};

} // namespace
