//===- RunningMax.h - The softmax max of the decode-attention loops -*- C++
//-*-===//
//
// The max every decode-attention emitter takes over logits and over
// splits' maxima (docs/decode-attention.md, step 2): one definition, so the
// FP8/int8 and the KIVI kernels cannot drift apart in how a NaN or the
// empty range is treated.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_RUNNINGMAX_H
#define LOWBIT_LOWERING_RUNNINGMAX_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <limits>

namespace lowbit {

/// x > m ? x : m: a NaN never wins, and no libdevice call (fmaxf) is left
/// for the GPU tail.
inline mlir::Value emitLarger(mlir::ImplicitLocOpBuilder &b, mlir::Value m,
                              mlir::Value x) {
  mlir::Value greater =
      mlir::arith::CmpFOp::create(b, mlir::arith::CmpFPredicate::OGT, x, m);
  return mlir::arith::SelectOp::create(b, greater, x, m);
}

/// The running emitLarger of value(i) for i in [begin, end), from -inf.
inline mlir::Value
emitMaxOver(mlir::ImplicitLocOpBuilder &b, mlir::Value begin, mlir::Value end,
            llvm::function_ref<mlir::Value(mlir::Value)> value) {
  auto loop = mlir::scf::ForOp::create(
      b, begin, end, mlir::arith::ConstantIndexOp::create(b, 1),
      mlir::ValueRange{mlir::arith::ConstantOp::create(
          b, b.getF32FloatAttr(-std::numeric_limits<float>::infinity()))});
  mlir::OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  mlir::Value m = loop.getRegionIterArg(0);
  mlir::Value x = value(loop.getInductionVar());
  mlir::scf::YieldOp::create(b, emitLarger(b, m, x));
  return loop.getResult(0);
}

} // namespace lowbit

#endif // LOWBIT_LOWERING_RUNNINGMAX_H
