//===- KvArithmetic.h - The KV kernels' arithmetic as IR -------*- C++ -*-===//
//
// What lowbit.kv_append / kv_dequantize compute per row and per element,
// op for op as kv/KvQuantize.cpp does (docs/kv-kernels.md): the cache slot
// of a token (contiguous, or through the block table), the int8 group
// scale, the element codes and their decode. Shared by the loop lowering
// (LowbitKvToLoops.cpp) and the bandwidth-shaped GPU mapping
// (GpuKvAppend.cpp), which only decide which loop or lane runs it.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_KVARITHMETIC_H
#define LOWBIT_LOWERING_KVARITHMETIC_H

#include "lowering/ScaleMath.h"

#include "dialect/LowbitOps.h"
#include "format/SharedDivisor.h"
#include "kv/KvKernelSpec.h"
#include "kv/KvPaged.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace lowbit {

/// The format model's scheme whose element ScaleMath encodes: int8 (only
/// its helpers are used) or the kv_fp8 scheme's format.
inline Scheme kvElementScheme(const kv::KvSchemeParams &params) {
  Format element = params.isInt8() ? *lookupFormat("int8") : params.fp8Format();
  return Scheme{"", element, ScaleSpec{}, Packing::Byte};
}

/// Where a token's codes and scales live, and whether they exist.
struct KvCacheSlot {
  mlir::Value inside; ///< i1: the position is inside the cache
  /// [b, h, position] (contiguous) or [page, h, slot] (paged); only
  /// meaningful where `inside` holds.
  llvm::SmallVector<mlir::Value, 3> indices;
};

/// The KV arithmetic on top of a ScaleMath-derived emitter `Base`.
template <typename Base> class KvArithmetic : public Base {
public:
  using Base::Base;

protected:
  using Base::b;
  using Base::cmpf;
  using Base::f32;
  using Base::idx;
  using Base::select;

  /// The cache slot of token `token` of sequence `seq`, head `head`: cache
  /// position positions[seq] + token, outside when negative, past a
  /// contiguous cache, in a block past the table or whose page is outside
  /// [0, pages). The table entry is read only when the block is in the
  /// table.
  KvCacheSlot findCacheSlot(mlir::Value codes, mlir::Value positions,
                            mlir::Value blockTable, mlir::Value seq,
                            mlir::Value head, mlir::Value token) {
    using namespace mlir;
    Value start = arith::IndexCastOp::create(
        b, b.getIndexType(), memref::LoadOp::create(b, positions, seq));
    Value position = arith::AddIOp::create(b, start, token);
    Value nonNegative =
        arith::CmpIOp::create(b, arith::CmpIPredicate::sge, position, idx(0));
    if (!blockTable)
      return {arith::AndIOp::create(
                  b, nonNegative,
                  arith::CmpIOp::create(b, arith::CmpIPredicate::slt, position,
                                        kit::dimOf(b, codes, 2))),
              {seq, head, position}};
    Value block = arith::DivSIOp::create(b, position, idx(kPage));
    Value blockInTable = arith::AndIOp::create(
        b, nonNegative,
        arith::CmpIOp::create(b, arith::CmpIPredicate::slt, block,
                              kit::dimOf(b, blockTable, 1)));
    auto pageIf = scf::IfOp::create(b, b.getIndexType(), blockInTable,
                                    /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(pageIf.thenBlock());
      Value entry =
          memref::LoadOp::create(b, blockTable, ValueRange{seq, block});
      scf::YieldOp::create(b, ValueRange{arith::IndexCastOp::create(
                                  b, b.getIndexType(), entry)});
      b.setInsertionPointToStart(pageIf.elseBlock());
      scf::YieldOp::create(b, ValueRange{idx(-1)});
    }
    Value page = pageIf.getResult(0);
    Value slot = arith::RemSIOp::create(b, position, idx(kPage));
    return {
        arith::AndIOp::create(
            b,
            arith::CmpIOp::create(b, arith::CmpIPredicate::sge, page, idx(0)),
            arith::CmpIOp::create(b, arith::CmpIPredicate::slt, page,
                                  kit::dimOf(b, codes, 0))),
        {page, head, slot}};
  }

  /// std::fmax(running, |x|) of groupAbsMax as a compare and select
  /// (maxnumf would become libdevice's __nv_fmaxf on the GPU): running is
  /// never NaN and both are >= +0, so a NaN |x| never wins and equal
  /// values have equal bits; the same holds when lanes combine partial
  /// maxima.
  mlir::Value absMaxStep(mlir::Value running, mlir::Value value) {
    mlir::Value magnitude = mlir::math::AbsFOp::create(b, value);
    return select(cmpf(mlir::arith::CmpFPredicate::OGT, magnitude, running),
                  magnitude, running);
  }

  /// The stored int8 group scale: g = std::max(amax, eps), then 127 / g
  /// (multiplier) or g / 127 (divisor).
  mlir::Value int8GroupScale(mlir::Value absMax,
                             const kv::Int8GroupOptions &options) {
    mlir::Value guarded = this->stdMax(absMax, f32(options.epsilon));
    return multiplier(options) ? this->divf(f32(127.0f), guarded)
                               : this->divf(guarded, f32(127.0f));
  }

  /// roundToInt8 of kv/KvQuantize.cpp applied to x * s (multiplier) or
  /// x / s (divisor): NaN -> 0, clamp(rint(v), +-127).
  mlir::Value quantizeInt8(mlir::Value value, mlir::Value scale,
                           const kv::Int8GroupOptions &options) {
    mlir::Value scaled = multiplier(options) ? this->mulf(value, scale)
                                             : this->divf(value, scale);
    mlir::Value rounded = mlir::math::RoundEvenOp::create(b, scaled);
    rounded = select(this->isNan(rounded), f32(0.0f), rounded);
    rounded = this->stdClamp(rounded, f32(-127.0f), f32(127.0f));
    return mlir::arith::FPToSIOp::create(b, b.getI8Type(), rounded);
  }

  /// An int8 code back: q / s (multiplier) or q * s (divisor).
  mlir::Value dequantizeInt8(mlir::Value code, mlir::Value scale,
                             const kv::Int8GroupOptions &options) {
    mlir::Value value = mlir::arith::SIToFPOp::create(b, b.getF32Type(), code);
    return multiplier(options) ? this->divf(value, scale)
                               : this->mulf(value, scale);
  }

  /// kv_fp8 codes of x / scale for `values` (f32), saturating, through
  /// vector<2xf32> encodes so that a native x2 cvt converts two at once
  /// (an odd count ends with a scalar encode).
  /// With `divisor` (fp8Divisor of `scale`), the quotients are the shared
  /// divisor's, which encode to the same codes.
  llvm::SmallVector<mlir::Value>
  encodeFp8(mlir::ValueRange values, mlir::Value scale,
            const PreparedDivisor &divisor = PreparedDivisor()) {
    using namespace mlir;
    auto quotient = [&](Value value) {
      return divisor ? this->divideShared(value, divisor)
                     : this->divf(value, scale);
    };
    SmallVector<Value> codes;
    size_t position = 0;
    for (; position + 2 <= values.size(); position += 2) {
      Value pair = vector::FromElementsOp::create(
          b, VectorType::get({2}, b.getF32Type()),
          ValueRange{quotient(values[position]),
                     quotient(values[position + 1])});
      Value encoded =
          dialect::EncodeOp::create(b, VectorType::get({2}, b.getI8Type()),
                                    pair, this->elementFormatAttr);
      codes.push_back(vector::ExtractOp::create(b, encoded, 0));
      codes.push_back(vector::ExtractOp::create(b, encoded, 1));
    }
    if (position < values.size())
      codes.push_back(this->encodeElement(quotient(values[position])));
    return codes;
  }
  /// `scale` prepared for encodeFp8 once per row, where the kv_fp8 format
  /// passes sharedQuotientEncodesExactly (docs/numerics.md, "Shared
  /// divisors"); unset otherwise.
  PreparedDivisor fp8Divisor(mlir::Value scale) {
    if (!sharedQuotientEncodesExactly(this->scheme.element))
      return {};
    return this->prepareDivisor(scale);
  }

  /// The f32 values of kv_fp8 `codes` times `scale`, decoded in pairs
  /// (an odd count ends with a scalar decode).
  llvm::SmallVector<mlir::Value> decodeFp8(mlir::ValueRange codes,
                                           mlir::Value scale) {
    using namespace mlir;
    SmallVector<Value> values;
    size_t position = 0;
    for (; position + 2 <= codes.size(); position += 2) {
      Value pair = vector::FromElementsOp::create(
          b, VectorType::get({2}, b.getI8Type()),
          ValueRange{codes[position], codes[position + 1]});
      Value decoded =
          dialect::DecodeOp::create(b, VectorType::get({2}, b.getF32Type()),
                                    pair, this->elementFormatAttr);
      for (int64_t lane : {0, 1})
        values.push_back(
            this->mulf(vector::ExtractOp::create(b, decoded, lane), scale));
    }
    if (position < codes.size())
      values.push_back(this->mulf(
          dialect::DecodeOp::create(b, b.getF32Type(), codes[position],
                                    this->elementFormatAttr),
          scale));
    return values;
  }

private:
  static constexpr int64_t kPage = kv::kPageTokens;
  static bool multiplier(const kv::Int8GroupOptions &options) {
    return options.convention == kv::ScaleConvention::Multiplier;
  }
};

} // namespace lowbit

#endif // LOWBIT_LOWERING_KVARITHMETIC_H
