//===- LowbitGpuExpandLibdeviceMath.cpp - absf/copysign/roundeven -> bits -===//
//
// lowbit's kernels must not call libdevice: it is not linked when no CUDA
// toolkit is found at run time (docs/gpu.md).
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/TypeUtilities.h"

#define DEBUG_TYPE "lowbit-gpu-expand-libdevice-math"

namespace lowbit {
#define GEN_PASS_DEF_LOWBITGPUEXPANDLIBDEVICEMATH
#include "lowering/Passes.h.inc"
} // namespace lowbit

using namespace mlir;

namespace {

/// convert-gpu-to-nvvm turns math.absf, math.copysign and math.roundeven
/// (and their LLVM intrinsics) into libdevice calls, which stay unresolved
/// externs when no CUDA toolkit is found at run time. All three are exact
/// in integer and f32 arithmetic, so they are expanded here:
///   absf:      clear the sign bit;
///   copysign:  magnitude of x, sign bit of y;
///   roundeven: (|x| + 2^23) - 2^23 rounds to an integer with ties to even
///              in the f32 adder for |x| < 2^23; larger values, inf and NaN
///              are integers (or NaN) already; the sign is put back so that
///              -0.3 gives -0.
void expandLibdeviceMathOps(ModuleOp module) {
  SmallVector<Operation *> mathOps;
  module.walk([&](Operation *op) {
    if (isa<math::AbsFOp, math::CopySignOp, math::RoundEvenOp>(op) &&
        getElementTypeOrSelf(op->getResult(0).getType()).isF32())
      mathOps.push_back(op);
  });
  for (Operation *op : mathOps) {
    ImplicitLocOpBuilder b(op->getLoc(), op);
    Type floatType = op->getResult(0).getType();
    Type bitsType = b.getI32Type();
    if (auto vectorType = dyn_cast<VectorType>(floatType))
      bitsType = VectorType::get(vectorType.getShape(), b.getI32Type());
    auto constant = [&](uint32_t value) -> Value {
      Attribute attr = b.getI32IntegerAttr(int32_t(value));
      if (auto vectorType = dyn_cast<VectorType>(bitsType))
        attr = DenseElementsAttr::get(vectorType, attr);
      return arith::ConstantOp::create(b, cast<TypedAttr>(attr));
    };
    auto toBits = [&](Value value) -> Value {
      return arith::BitcastOp::create(b, bitsType, value);
    };
    auto toFloat = [&](Value bits) -> Value {
      return arith::BitcastOp::create(b, floatType, bits);
    };
    Value bits = toBits(op->getOperand(0));
    Value magnitude = arith::AndIOp::create(b, bits, constant(0x7fffffffu));
    Value sign = arith::AndIOp::create(b, bits, constant(0x80000000u));
    Value result = magnitude;
    if (isa<math::CopySignOp>(op)) {
      result = arith::OrIOp::create(
          b, magnitude,
          arith::AndIOp::create(b, toBits(op->getOperand(1)),
                                constant(0x80000000u)));
    } else if (isa<math::RoundEvenOp>(op)) {
      Value twoTo23 = toFloat(constant(0x4b000000u));
      Value rounded = arith::SubFOp::create(
          b, arith::AddFOp::create(b, toFloat(magnitude), twoTo23), twoTo23);
      Value signedRounded = arith::OrIOp::create(b, toBits(rounded), sign);
      Value alreadyIntegral = arith::CmpIOp::create(
          b, arith::CmpIPredicate::uge, magnitude, constant(0x4b000000u));
      result = arith::SelectOp::create(b, alreadyIntegral, bits, signedRounded);
    }
    op->getResult(0).replaceAllUsesWith(toFloat(result));
    op->erase();
  }
}

struct LowbitGpuExpandLibdeviceMath
    : lowbit::impl::LowbitGpuExpandLibdeviceMathBase<
          LowbitGpuExpandLibdeviceMath> {
  using LowbitGpuExpandLibdeviceMathBase::LowbitGpuExpandLibdeviceMathBase;
  void runOnOperation() override { expandLibdeviceMathOps(getOperation()); }
};

} // namespace
