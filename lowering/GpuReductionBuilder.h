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
