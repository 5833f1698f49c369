//===- LowbitMatmulToLoops.cpp - lowbit.matmul to the order's loops -------===//
//
// Rewrites lowbit.matmul into loops that run, operation for operation, the
// one order of docs/matmul.md (matmul::orderedAccumulate is the same in
// plain C++):
//
//   the weights: a lowbit.dequantize of the op's own buffers into an [N, K]
//     scratch of X's dtype (lowbit-to-loops lowers it next): the reference
//     dequantize, rounded to f16/bf16 for such an X as the order says;
//   one scf.parallel unit per (m, n): for each of the 32 slices in order,
//     p = +0 then p = fma(x, w, p) over the slice's chunks (32 wide, every
//     32nd chunk) and each chunk's k ascending; acc = +0 + p[0] + ... +
//     p[31]; + bias[n]; rounded to Y's dtype, a NaN the canonical NaN.
//
// A matmul with an act_scheme (quantized activations) takes the other
// order, written by lowerQuantizedMatmul (QuantizedMatmulLoops.cpp).
//
//===----------------------------------------------------------------------===//

#include "dialect/LowbitMatmulOps.h"
#include "lowering/DecodeAttentionEmitter.h"
#include "lowering/GpuKernelBuilder.h"
#include "lowering/MatmulLoops.h"
#include "lowering/Passes.h"
#include "lowering/kit/KernelEmitter.h"
#include "matmul/MatmulOrder.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace lowbit {
#define GEN_PASS_DEF_LOWBITMATMULTOLOOPS
#include "lowering/Passes.h.inc"
} // namespace lowbit

using namespace mlir;
namespace ld = lowbit::dialect;

namespace {

class MatmulLoopEmitter : public lowbit::kit::KernelEmitter {
public:
  using KernelEmitter::KernelEmitter;

  /// An element of X or W as an f32 (exact).
  Value widen(Value value) {
    if (value.getType().isF32())
      return value;
    return arith::ExtFOp::create(b, b.getF32Type(), value);
  }

  /// p after the fma chain of one slice over x[row, :] and w[col, :].
  Value emitSlice(Value slice, Value x, Value w, Value row, Value col,
                  Value k) {
    using lowbit::matmul::kChunk;
    using lowbit::matmul::kSlices;
    Value first = mul(slice, idx(kChunk));
    auto chunks = scf::ForOp::create(b, first, k, idx(kChunk * kSlices),
                                     ValueRange{f32(0.0f)});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(chunks.getBody());
    Value begin = chunks.getInductionVar();
    Value end = arith::MinUIOp::create(b, add(begin, idx(kChunk)), k);
    auto elements = scf::ForOp::create(b, begin, end, idx(1),
                                       ValueRange{chunks.getRegionIterArg(0)});
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(elements.getBody());
      Value index = elements.getInductionVar();
      Value xValue =
          widen(memref::LoadOp::create(b, x, ValueRange{row, index}));
      Value wValue =
          widen(memref::LoadOp::create(b, w, ValueRange{col, index}));
      Value sum = math::FmaOp::create(b, xValue, wValue,
                                      elements.getRegionIterArg(0));
      scf::YieldOp::create(b, sum);
    }
    scf::YieldOp::create(b, elements.getResult(0));
    return chunks.getResult(0);
  }
};

LogicalResult lowerMatmul(ld::MatmulOp op) {
  auto materialize =
      lowbit::gpu_mapping::resultDestination(op.getResult(), op);
  if (!materialize)
    return op.emitOpError()
           << "lowers only with its result written by one "
              "bufferization.materialize_in_destination into a memref "
              "defined before it (the kernel function's parameter)";
  Value output = materialize.getDest();
  if (op.getActSchemeAttr()) {
    if (failed(lowbit::matmul_loops::lowerQuantizedMatmul(op, output)))
      return failure();
    materialize->erase();
    op->erase();
    return success();
  }
  ImplicitLocOpBuilder b(op.getLoc(), op);
  MatmulLoopEmitter emitter(b);
  Value x = lowbit::attention::operandMemref(b, op.getX());
  Value bias = lowbit::attention::operandMemref(b, op.getBias());
  Value m = lowbit::kit::dimOf(b, x, 0);
  Value k = lowbit::kit::dimOf(b, x, 1);
  Value n = lowbit::kit::dimOf(b, output, 1);

  // The weights in X's dtype, through the scheme's own dequantize; the
  // scratch's K comes from X, which settles a nibble-packed odd K.
  Type xElement = op.getX().getType().getElementType();
  int64_t staticN = op.getN(), staticK = op.getK();
  auto weightTensor = RankedTensorType::get({staticN, staticK}, xElement);
  SmallVector<Value, 2> dynamicSizes;
  if (ShapedType::isDynamic(staticN))
    dynamicSizes.push_back(n);
  if (ShapedType::isDynamic(staticK))
    dynamicSizes.push_back(k);
  Value weights = memref::AllocOp::create(
      b, MemRefType::get({staticN, staticK}, xElement), dynamicSizes);
  auto dequantize = ld::DequantizeOp::create(
      b, weightTensor, op.getCodes(), op.getScales(), op.getZeros(),
      op.getGlobal(), op.getScheme());
  bufferization::MaterializeInDestinationOp::create(
      b, /*result=*/Type(), dequantize.getResult(), weights,
      /*restrict=*/true, /*writable=*/true);

  Type outputType = cast<MemRefType>(output.getType()).getElementType();
  auto units = scf::ParallelOp::create(b, ValueRange{emitter.idx(0), emitter.idx(0)},
                                       ValueRange{m, n},
                                       ValueRange{emitter.idx(1), emitter.idx(1)});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(units.getBody()->getTerminator());
    Value row = units.getInductionVars()[0];
    Value col = units.getInductionVars()[1];
    auto slices = scf::ForOp::create(b, emitter.idx(0),
                                     emitter.idx(lowbit::matmul::kSlices),
                                     emitter.idx(1),
                                     ValueRange{emitter.f32(0.0f)});
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(slices.getBody());
      Value partial = emitter.emitSlice(slices.getInductionVar(), x, weights,
                                        row, col, k);
      scf::YieldOp::create(
          b, arith::AddFOp::create(b, slices.getRegionIterArg(0), partial)
                 .getResult());
    }
    Value acc = slices.getResult(0);
    if (bias)
      acc = arith::AddFOp::create(b, acc,
                                  lowbit::matmul_loops::loadBias(b, bias, col));
    memref::StoreOp::create(
        b, lowbit::matmul_loops::roundOutput(b, acc, outputType), output,
        ValueRange{row, col});
  }
  memref::DeallocOp::create(b, weights);
  materialize->erase();
  op->erase();
  return success();
}

struct LowbitMatmulToLoopsPass
    : public lowbit::impl::LowbitMatmulToLoopsBase<LowbitMatmulToLoopsPass> {
  void runOnOperation() override {
    SmallVector<ld::MatmulOp> targets;
    getOperation().walk([&](ld::MatmulOp op) { targets.push_back(op); });
    bool failedAny = false;
    for (ld::MatmulOp op : targets)
      failedAny |= failed(lowerMatmul(op));
    if (failedAny)
      return signalPassFailure();
    // Operands read through their buffers leave dead to_tensor ops, and
    // the bias's reshaped view a dead collapse_shape, behind.
    for (bool erased = true; erased;) {
      SmallVector<Operation *> dead;
      getOperation().walk([&](Operation *op) {
        if (isa<bufferization::ToTensorOp, memref::CollapseShapeOp>(op) &&
            op->use_empty())
          dead.push_back(op);
      });
      for (Operation *op : dead)
        op->erase();
      erased = !dead.empty();
    }
  }
};

} // namespace
