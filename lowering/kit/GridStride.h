//===- GridStride.h - Grid-stride loops of the kernel kit -------*- C++ -*-===//
//
// What the grid-stride kernels share beyond kit::KernelEmitter
// (docs/kernel-kit.md): the grid cap, and the walk that keeps x / d and
// x % d of an index the loop advances by a fixed step as loop-carried
// values instead of dividing by a run-time d on every trip.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_KIT_GRIDSTRIDE_H
#define LOWBIT_LOWERING_KIT_GRIDSTRIDE_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace lowbit::kit {

/// The grid cap of the grid-stride kernels: about four waves of 256-thread
/// blocks on a 132-SM H200 (8 resident per SM) or a 148-SM B200, so each
/// thread's setup is paid for a few trips and the last wave is short.
inline constexpr int64_t kGridStrideBlocks = 4096;

/// x / divisor and x % divisor of an index x that a loop advances by a
/// loop-invariant step each trip. On an `index` a division by a run-time
/// divisor is a `div.u64` (tens of SASS instructions, a subroutine where
/// the operands pass 32 bits); the walk divides twice before the loop and
/// per trip adds, compares and selects. Exact for every index:
/// remainder + step % divisor < 2 divisor, so one carry corrects it.
struct DivModWalk {
  mlir::Value stepQuotient, stepRemainder, divisor;

  /// The walk of x from `start` by `step`, and x = start's {quotient,
  /// remainder} (the loop's iter_args inits), emitted at the builder.
  static std::pair<DivModWalk, llvm::SmallVector<mlir::Value, 2>>
  start(mlir::ImplicitLocOpBuilder &b, mlir::Value start, mlir::Value step,
        mlir::Value divisor) {
    using namespace mlir::arith;
    DivModWalk walk{DivUIOp::create(b, step, divisor),
                    RemUIOp::create(b, step, divisor), divisor};
    return {walk,
            {DivUIOp::create(b, start, divisor),
             RemUIOp::create(b, start, divisor)}};
  }

  /// The next trip's {quotient, remainder}.
  llvm::SmallVector<mlir::Value, 2> advance(mlir::ImplicitLocOpBuilder &b,
                                            mlir::Value quotient,
                                            mlir::Value remainder) const {
    using namespace mlir::arith;
    mlir::Value sum = AddIOp::create(b, remainder, stepRemainder);
    mlir::Value carry = CmpIOp::create(b, CmpIPredicate::uge, sum, divisor);
    mlir::Value one = ConstantIndexOp::create(b, 1);
    mlir::Value zero = ConstantIndexOp::create(b, 0);
    return {AddIOp::create(b, AddIOp::create(b, quotient, stepQuotient),
                           SelectOp::create(b, carry, one, zero)),
            SubIOp::create(b, sum, SelectOp::create(b, carry, divisor, zero))};
  }
};

/// An scf.for from `lower` to `upper` by `step` whose first two iter_args
/// are x / divisor and x % divisor, x starting at `walkStart` and
/// advancing by `walkStep` a trip. The builder is left in the body, before
/// its yield (which already carries the next trip's pair).
inline mlir::scf::ForOp divModLoop(mlir::ImplicitLocOpBuilder &b,
                                   mlir::Value lower, mlir::Value upper,
                                   mlir::Value step, mlir::Value walkStart,
                                   mlir::Value walkStep, mlir::Value divisor) {
  auto [walk, inits] = DivModWalk::start(b, walkStart, walkStep, divisor);
  auto loop = mlir::scf::ForOp::create(b, lower, upper, step, inits);
  b.setInsertionPointToStart(loop.getBody());
  auto yield =
      mlir::scf::YieldOp::create(b, walk.advance(b, loop.getRegionIterArgs()[0],
                                                 loop.getRegionIterArgs()[1]));
  b.setInsertionPoint(yield);
  return loop;
}

} // namespace lowbit::kit

#endif // LOWBIT_LOWERING_KIT_GRIDSTRIDE_H
