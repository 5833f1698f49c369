//===- ScaleMath.h - The reference quantizer's arithmetic as IR -*- C++ -*-===//
//
// The scalar f32 arithmetic of format/Quantize.cpp (docs/quantization.md),
// emitted op by op in the reference's order: statistics, scale picking,
// global scales, zero points, and one element's encode/decode. Shared by
// the passes that map lowbit.quantize/dequantize to loops (lowbit-to-loops)
// and to GPU threads (lowbit-to-gpu), so the bit-exact arithmetic exists
// once; each pass only decides which thread or loop runs it.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_SCALEMATH_H
#define LOWBIT_LOWERING_SCALEMATH_H

#include "dialect/LowbitOps.h"
#include "format/Quantize.h"
#include "format/Scheme.h"
#include "lowering/kit/KernelEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace lowbit {

/// The element type a scale of `type` is stored as: f32, f16, bf16, or the
/// i8 code of an e8m0/ue4m3 scale.
mlir::Type storedScaleTypeOf(mlir::Builder &b, ScaleType type);

/// Per-group statistics. As in the reference, NaN is skipped and every
/// statistic starts at 0.
struct Stats {
  mlir::Value absMax, min, max;
};

/// A divisor shared by many quotients, prepared once: the IR form of
/// format/SharedDivisor.h's SharedDivisor (null values: none).
struct PreparedDivisor {
  mlir::Value scale, divisor, reciprocal;
  explicit operator bool() const { return bool(reciprocal); }
};

/// What converting one element needs from its group.
struct GroupParams {
  mlir::Value scale;  ///< the stored scale, decoded to f32
  mlir::Value zero;   ///< i32 zero point (asymmetric only)
  mlir::Value global; ///< f32 global scale (two-level schemes only)
  /// 1 / scale where multiplying by it gives the division's bits (e8m0
  /// scales, withExactReciprocal); null: divide.
  mlir::Value reciprocal;
  /// The divisor of every element's quotient, prepared for
  /// sharedQuotient (withExactReciprocal); unset: divide.
  PreparedDivisor divisor;
};

/// Emits the reference's arithmetic at the builder's insertion point.
class ScaleMath : public kit::KernelEmitter {
public:
  ScaleMath(mlir::ImplicitLocOpBuilder &builder, const Scheme &scheme);

  ScaleKind scaleKind() const { return kind; }
  bool hasGlobal() const {
    return kind == ScaleKind::GlobalDecode || kind == ScaleKind::GlobalEncode;
  }
  bool usesMinMax() const { return scheme.scale.rule == ScaleRule::MinMax; }

  // Float helpers that mirror the reference's std:: calls exactly (the
  // constants and select are kit::KernelEmitter's).
  mlir::Value cmpf(mlir::arith::CmpFPredicate predicate, mlir::Value lhs,
                   mlir::Value rhs);
  /// std::max(a, b): b if a < b, else a.
  mlir::Value stdMax(mlir::Value lhs, mlir::Value rhs);
  /// std::min(a, b): b if b < a, else a.
  mlir::Value stdMin(mlir::Value lhs, mlir::Value rhs);
  /// std::clamp(v, lo, hi): lo if v < lo, hi if hi < v, else v.
  mlir::Value stdClamp(mlir::Value value, mlir::Value low, mlir::Value high);
  mlir::Value isNan(mlir::Value value);
  mlir::Value isInf(mlir::Value value);
  mlir::Value divf(mlir::Value lhs, mlir::Value rhs);
  mlir::Value mulf(mlir::Value lhs, mlir::Value rhs);

  // Statistics (reference: gatherStats).
  /// Folds one element into the statistics (amax; min and max too when
  /// withMinMax).
  mlir::SmallVector<mlir::Value> accumulate(mlir::ValueRange acc,
                                            mlir::Value value, bool withMinMax);
  Stats toStats(mlir::ValueRange values, bool withMinMax);
  /// Statistics of a whole [rows, cols] tensor: an scf.parallel over rows,
  /// each row reduced by an scf.for, rows combined by scf.reduce. max and
  /// min are exact and order-independent, so the result equals the
  /// reference's sequential scan.
  Stats emitTensorStats(
      mlir::Value rows, mlir::Value cols, bool withMinMax,
      mlir::function_ref<mlir::Value(mlir::Value row, mlir::Value col)>
          loadElement);

  // Scales (reference: computeGlobal, pickScaleCode, pickZero).
  float quantMax() const;
  /// The stored second-level scale, always finite and positive.
  mlir::Value computeGlobal(mlir::Value tensorAbsMax);
  /// The element type of the stored scale tensor.
  mlir::Type storedScaleType() const;
  /// Rounds an f32 scale to the scale type, RNE and saturating (reference:
  /// encodeScale); returns the value as it is stored in the scale tensor.
  mlir::Value encodeScale(mlir::Value value, mlir::StringRef rounding = "rn");
  /// The f32 value of a stored scale (reference: decodeScale).
  mlir::Value decodeScale(mlir::Value stored);
  /// The stored form of 1.0 in the scale type (oneScaleCode).
  mlir::Value storedOne();
  /// A stored scale whose value is 0 (underflow, or an all-zero group)
  /// becomes 1, so every stored scale is finite and positive.
  mlir::Value replaceZeroScale(mlir::Value stored);
  /// OCP MX FLOOR: the stored e8m0 code of a group's amax.
  mlir::Value floorScaleCode(mlir::Value absMax);
  /// The stored scale of one group, from its statistics. `globalDivisor`
  /// (prepareGlobalDivisor) replaces the division by a decode-convention
  /// global.
  mlir::Value pickScale(const Stats &stats, mlir::Value global,
                        const PreparedDivisor &globalDivisor = {});
  /// zero = clamp(rne(-min(low, 0) / scale), 0, levels) (pickZero), as i8.
  mlir::Value pickZero(mlir::Value low, mlir::Value scale);

  // Elements.
  /// One element's code, in an i8 whose high bits are zero.
  mlir::Value quantizeValue(mlir::Value value, const GroupParams &params);
  /// Two elements' codes with one vector<2xf32> encode (so that a native
  /// x2 cvt converts both); the same arithmetic as quantizeValue per
  /// element. Returns the two i8 codes.
  std::pair<mlir::Value, mlir::Value> quantizePair(mlir::Value first,
                                                   mlir::Value second,
                                                   const GroupParams &params);
  mlir::Value encodeElement(mlir::Value value);
  /// reference dequantize(): the f32 value of one code.
  mlir::Value dequantizeValue(mlir::Value code, const GroupParams &params);
  /// Two codes through one vector<2xi8> decode; the same arithmetic as
  /// dequantizeValue per element. Returns the two f32 values.
  std::pair<mlir::Value, mlir::Value> dequantizePair(mlir::Value first,
                                                     mlir::Value second,
                                                     const GroupParams &params);
  /// Integer codes (an int element format's, and the asymmetric kinds'
  /// c - z) become f32 by the magic number instead of a conversion:
  /// bits(0x4b000000 | u) is the f32 2^23 + u for 0 <= u < 2^23, so an
  /// unsigned code u is that minus 2^23, a signed b-bit code c is u =
  /// c ^ 2^(b-1) minus 2^23 + 2^(b-1), and c - z is (2^23 + c) - (2^23 +
  /// z): one exact subtraction, the bits sitofp gives, in ALU ops instead
  /// of the conversion pipe's I2F (docs/matmul-gpu.md, "Dequantization in
  /// registers"). Off by default, so the dequantize kernels keep their
  /// PTX; the matmul's GEMV turns it on.
  void setMagicIntegerDecode(bool on) { magicIntegerDecode = on; }

  /// Sets params.reciprocal where x * (1 / s) has the bits of x / s: the
  /// power-of-two e8m0 scales of symmetric schemes; otherwise
  /// params.divisor where the shared-divisor quotient encodes to the
  /// division's codes (the element format passes
  /// sharedQuotientEncodesExactly; docs/numerics.md, "Shared divisors").
  GroupParams withExactReciprocal(GroupParams params);
  /// The decode-convention global scale prepared as pickScale's divisor,
  /// where the scale format passes sharedQuotientEncodesExactly; unset
  /// otherwise.
  PreparedDivisor prepareGlobalDivisor(mlir::Value global);

  // Division by a shared divisor (format/SharedDivisor.h), op for op.
  PreparedDivisor prepareDivisor(mlir::Value divisor);
  mlir::Value divideShared(mlir::Value value, const PreparedDivisor &divisor);

protected:
  Scheme scheme;
  ScaleKind kind;
  dialect::FormatAttrInterface elementFormatAttr, scaleFormatAttr;

private:
  /// The f32 2^23 + u of an i32 0 <= u < 2^23 (setMagicIntegerDecode).
  mlir::Value magicFloat(mlir::Value unsignedBits);
  /// An int element format's code as its exact f32 by the magic number.
  mlir::Value magicDecodeInt(mlir::Value code);

  bool magicIntegerDecode = false;
  /// The f32 value quantizeValue encodes, for the symmetric kinds.
  mlir::Value scaledForEncode(mlir::Value value, const GroupParams &params);
  /// A decoded element times its scale(s), in the reference's order.
  mlir::Value scaleDecoded(mlir::Value decoded, const GroupParams &params);
};

} // namespace lowbit

#endif // LOWBIT_LOWERING_SCALEMATH_H
