//===- GpuReductionBuilder.h - Shared reduction kernel pieces -*- C++ -*-===//
//
// What the per-tensor (GpuTensorReduce.cpp) and per-row (GpuRowReduce.cpp)
// quantize kernels share: the buffers a dynamic quantize writes (the
// row-group kernels of LowbitToGpu.cpp find theirs the same way), and the
// warp's xor-shuffle combine of statistics.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_GPUREDUCTIONBUILDER_H
#define LOWBIT_LOWERING_GPUREDUCTIONBUILDER_H

#include "lowering/GpuKernelBuilder.h"

#include "dialect/LowbitOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

namespace lowbit::gpu_mapping {

/// Lanes sharing one group of a row-group scheme when each lane takes 16
/// bytes of `inputType` (a power of two up to 32); 0 when the scheme has
/// no groups along its rows or a group does not split that way.
inline int64_t lanesPerGroup(const lowbit::Scheme &scheme, Type inputType) {
  const lowbit::ScaleSpec &scale = scheme.scale;
  if (scale.granularity != lowbit::Granularity::Group || scale.axis != 1 ||
      scale.layout != lowbit::ScaleLayout::RowMajor)
    return 0;
  int64_t width = kVectorBytes / bytesOf(inputType);
  if (scale.groupSize % width != 0)
    return 0;
  int64_t lanes = scale.groupSize / width;
  if (lanes > kWarpSize || (lanes & (lanes - 1)) != 0)
    return 0;
  return lanes;
}

/// The materialize ops that write a dynamic quantize's codes, scales and
/// (asymmetric schemes) zero points into the kernel's parameters.
struct QuantizeDestinations {
  bufferization::MaterializeInDestinationOp codes, scales, zeros;

  /// Null when a result is not materialized into a parameter.
  static FailureOr<QuantizeDestinations> find(dialect::QuantizeOp op) {
    QuantizeDestinations found;
    found.codes = resultDestination(op.getCodes(), op);
    found.scales = resultDestination(op.getScales(), op);
    if (op.getZeros())
      found.zeros = resultDestination(op.getZeros(), op);
    if (!found.codes || !found.scales || (op.getZeros() && !found.zeros))
      return failure();
    return found;
  }
  Value zerosBuffer() { return zeros ? zeros.getDest() : Value(); }
  /// Erases the materialize ops and `op`, once the kernels write them.
  void eraseWith(RewriterBase &rewriter, Operation *op) {
    rewriter.eraseOp(codes);
    rewriter.eraseOp(scales);
    if (zeros)
      rewriter.eraseOp(zeros);
    rewriter.eraseOp(op);
  }
};

class GpuReductionBuilder : public GpuKernelBuilder {
public:
  using GpuKernelBuilder::GpuKernelBuilder;

protected:
  /// Combines the statistics (amax, or amax, min, max) of aligned runs of
  /// `lanes` lanes with xor shuffles; every lane of the warp takes part.
  /// max/min of NaN-free values are exact and order-independent.
  SmallVector<Value> reduceWarp(SmallVector<Value> acc, int64_t lanes,
                                bool withMinMax) {
    return butterfly(std::move(acc), lanes,
                     [&](size_t position, Value own, Value other) {
                       return withMinMax && position == 1 ? stdMin(own, other)
                                                          : stdMax(own, other);
                     });
  }

public:
  /// Stores the per-tensor scale `stats` give (and, with `zeros`, the zero
  /// point) at `at` of the [1, 1] buffers.
  void storeTensorScale(const lowbit::Stats &stats, Value scales, Value zeros,
                        ValueRange at) {
    Value stored = pickScale(stats, Value());
    memref::StoreOp::create(b, stored, scales, at);
    if (zeros)
      memref::StoreOp::create(b, pickZero(stats.min, decodeScale(stored)),
                              zeros, at);
  }

protected:
  /// One group's scale from its lanes' statistics `acc` (this lane's
  /// elements accumulated): combined over aligned runs of `lanes` lanes,
  /// picked by every lane, stored (with the zero point) at (row,
  /// groupCol) by the group's lane 0 (`groupLane`) where `valid` holds. max/min
  /// of NaN-free values are exact and order-independent, so this equals the
  /// reference's sequential scan.
  lowbit::GroupParams pickLaneGroupScale(SmallVector<Value> acc, int64_t lanes,
                                         Value global,
                                         const lowbit::PreparedDivisor &divisor,
                                         Value valid, Value groupLane,
                                         Value scales, Value zeros, Value row,
                                         Value groupCol) {
    bool withMinMax = usesMinMax();
    acc = reduceWarp(std::move(acc), lanes, withMinMax);
    lowbit::Stats stats = toStats(acc, withMinMax);
    Value stored = pickScale(stats, global, divisor);
    lowbit::GroupParams params;
    params.global = global;
    params.scale = decodeScale(stored);
    Value zero;
    if (scaleKind() == lowbit::ScaleKind::Asymmetric) {
      zero = pickZero(stats.min, params.scale);
      params.zero = arith::ExtUIOp::create(b, b.getI32Type(), zero);
    }
    params = withExactReciprocal(params);
    Value storing =
        andAll({valid, arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                             groupLane, idx(0))
                           .getResult()});
    auto storeScale = scf::IfOp::create(b, storing, false);
    OpBuilder::InsertionGuard thenGuard(b);
    b.setInsertionPoint(storeScale.thenBlock()->getTerminator());
    memref::StoreOp::create(b, stored, scales, ValueRange{row, groupCol});
    if (zero)
      memref::StoreOp::create(b, zero, zeros, ValueRange{row, groupCol});
    return params;
  }

  /// The code bytes of an even number of consecutive `elements`: pairs
  /// through one vector<2xf32> encode (one x2 cvt where the chip has it),
  /// then two codes per byte when `nibble`.
  SmallVector<Value> codeBytes(ArrayRef<Value> elements,
                               const lowbit::GroupParams &params, bool nibble) {
    SmallVector<Value> codeValues;
    for (size_t i = 0; i + 1 < elements.size(); i += 2) {
      auto [first, second] = quantizePair(elements[i], elements[i + 1], params);
      codeValues.push_back(first);
      codeValues.push_back(second);
    }
    if (!nibble)
      return codeValues;
    SmallVector<Value> bytes;
    for (size_t i = 0; i + 1 < codeValues.size(); i += 2)
      bytes.push_back(packNibbles(codeValues[i], codeValues[i + 1]));
    return bytes;
  }

  /// The codes of `elements`, columns col0 .. col0 + width - 1 of `row`
  /// (codeBytes); one vector store where `fast`
  /// (the caller checked the codes' alignment and that the chunk is
  /// whole), else a store per byte whose first column is in the row.
  void storeChunkCodes(ArrayRef<Value> elements,
                       const lowbit::GroupParams &params, Value codes,
                       Value row, Value col0, Value cols, Value valid,
                       Value fast, bool nibble) {
    SmallVector<Value> bytes = codeBytes(elements, params, nibble);
    int64_t byteCount = bytes.size();
    Value byteCol0 =
        nibble ? arith::DivUIOp::create(b, col0, idx(2)).getResult() : col0;
    auto storeIf = scf::IfOp::create(b, fast, true);
    OpBuilder::InsertionGuard thenGuard(b);
    b.setInsertionPoint(storeIf.thenBlock()->getTerminator());
    Value packed = vector::FromElementsOp::create(
        b, VectorType::get({byteCount}, b.getI8Type()), bytes);
    storeVector(packed, codes, ValueRange{row, byteCol0});
    b.setInsertionPoint(storeIf.elseBlock()->getTerminator());
    for (int64_t j = 0; j < byteCount; ++j) {
      // A byte exists when its first element does; in nibble packing a
      // missing second element leaves the high nibble zero.
      Value firstCol = arith::AddIOp::create(b, col0, idx(nibble ? 2 * j : j));
      auto byteIf =
          scf::IfOp::create(b, inBounds(valid, firstCol, cols), false);
      OpBuilder::InsertionGuard byteGuard(b);
      b.setInsertionPoint(byteIf.thenBlock()->getTerminator());
      Value byte = bytes[j];
      if (nibble) {
        Value secondCol = arith::AddIOp::create(b, firstCol, idx(1));
        Value hasSecond = arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                                secondCol, cols);
        byte = select(hasSecond, byte, arith::AndIOp::create(b, byte, i8(0xF)));
      }
      memref::StoreOp::create(
          b, byte, codes,
          ValueRange{row, arith::AddIOp::create(b, byteCol0, idx(j))});
    }
  }

  /// Codes of columns [start, end) of `row` in pairs, every `step` columns
  /// (a missing second element reads 0; its code or nibble is not stored).
  /// `element` gives a column's value as f32.
  void emitPairs(Value row, Value start, Value end, Value step,
                 function_ref<Value(Value)> element,
                 const lowbit::GroupParams &params, Value codes, bool nibble) {
    scf::ForOp::create(
        b, start, end, step, ValueRange{},
        [&](OpBuilder &, Location, Value col, ValueRange) {
          Value next = arith::AddIOp::create(b, col, idx(1));
          Value hasNext =
              arith::CmpIOp::create(b, arith::CmpIPredicate::ult, next, end);
          Value first = element(col);
          auto secondIf = scf::IfOp::create(b, b.getF32Type(), hasNext, true);
          {
            OpBuilder::InsertionGuard thenGuard(b);
            b.setInsertionPointToStart(secondIf.thenBlock());
            scf::YieldOp::create(b, element(next));
            b.setInsertionPointToStart(secondIf.elseBlock());
            scf::YieldOp::create(b, f32(0.0f));
          }
          auto [low, high] = quantizePair(first, secondIf.getResult(0), params);
          if (nibble) {
            Value byte = select(hasNext, packNibbles(low, high),
                                arith::AndIOp::create(b, low, i8(0xF)));
            memref::StoreOp::create(
                b, byte, codes,
                ValueRange{row, arith::DivUIOp::create(b, col, idx(2))});
          } else {
            memref::StoreOp::create(b, low, codes, ValueRange{row, col});
            auto highIf = scf::IfOp::create(b, hasNext, false);
            OpBuilder::InsertionGuard thenGuard(b);
            b.setInsertionPoint(highIf.thenBlock()->getTerminator());
            memref::StoreOp::create(b, high, codes, ValueRange{row, next});
          }
          scf::YieldOp::create(b);
        });
  }
};

} // namespace lowbit::gpu_mapping

#endif // LOWBIT_LOWERING_GPUREDUCTIONBUILDER_H
