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
    for (int64_t offset = lanes / 2; offset >= 1; offset /= 2)
      for (size_t position = 0; position < acc.size(); ++position) {
        Value other =
            gpu::ShuffleOp::create(b, acc[position], int32_t(offset),
                                   int32_t(kWarpSize), gpu::ShuffleMode::XOR)
                .getShuffleResult();
        acc[position] = withMinMax && position == 1
                            ? stdMin(acc[position], other)
                            : stdMax(acc[position], other);
      }
    return acc;
  }
};

} // namespace lowbit::gpu_mapping

#endif // LOWBIT_LOWERING_GPUREDUCTIONBUILDER_H
