//===- LowbitGpuReductionsToAtomics.cpp - reductions -> atomics -----------===//
//
// The GPU mapping (convert-parallel-loops-to-gpu) takes scf.parallel without
// results only; a dynamic per-tensor statistic is a reduction. This pass
// turns it into kernels that fold into a device global atomically.
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

#define DEBUG_TYPE "lowbit-gpu-reductions-to-atomics"

namespace lowbit {
#define GEN_PASS_DEF_LOWBITGPUREDUCTIONSTOATOMICS
#include "lowering/Passes.h.inc"
} // namespace lowbit

using namespace mlir;

namespace {

/// Rewrites each scf.parallel with reductions (scf.reduce; lowbit-to-loops
/// emits them for a dynamic per-tensor amax/min/max) into three steps, all
/// of which become kernels:
///   1. a one-thread loop that stores the init value into a device global
///      (memref.global, one per reduced value);
///   2. the loop without results, where each iteration folds its value into
///      the global with memref.generic_atomic_rmw, whose body is the
///      scf.reduce region itself (a compare-and-swap loop on the GPU), so
///      any associative and commutative combiner works unchanged;
///   3. the results are replaced by loads of the globals, which
///      lowbit-gpu-sink-host-glue moves into the kernels that use them.
/// Kernels on one stream run in order, so each step sees the previous one.
/// lowbit's reductions are max/min of non-NaN values (NaN is skipped per
/// element), which are order-independent, so the result is bit-identical to
/// the sequential scan.
LogicalResult reduceThroughAtomics(ModuleOp module) {
  SmallVector<scf::ParallelOp> reductions;
  module.walk([&](scf::ParallelOp parallel) {
    if (!parallel.getInitVals().empty())
      reductions.push_back(parallel);
  });
  unsigned globalIndex = 0;
  for (scf::ParallelOp parallel : reductions) {
    if (parallel->getParentOfType<scf::ParallelOp>()) {
      return parallel.emitError("the GPU tail does not yet support a "
                                "reduction nested in another scf.parallel");
    }
    for (Type type : parallel.getResultTypes())
      if (!type.isIntOrFloat() || type.getIntOrFloatBitWidth() != 32) {
        return parallel.emitError("the GPU tail reduces only 32-bit scalars");
      }
    Location loc = parallel.getLoc();
    MLIRContext *context = module.getContext();
    OpBuilder builder(parallel);
    Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
    Value one = arith::ConstantIndexOp::create(builder, loc, 1);

    // Step 1: one device global per reduced value, initialized by a
    // one-thread loop.
    SmallVector<memref::GlobalOp> globals;
    for (auto [init, type] :
         llvm::zip(parallel.getInitVals(), parallel.getResultTypes())) {
      OpBuilder moduleBuilder = OpBuilder::atBlockBegin(module.getBody());
      // Held as i32 bits: LLVM's cmpxchg takes integers only.
      auto globalType = MemRefType::get({1}, builder.getI32Type());
      std::string name = "lowbit_reduction_" + std::to_string(globalIndex++);
      globals.push_back(memref::GlobalOp::create(
          moduleBuilder, loc, name, moduleBuilder.getStringAttr("private"),
          globalType, Attribute(), /*constant=*/false, IntegerAttr()));
      auto initLoop = scf::ParallelOp::create(builder, loc, ValueRange{zero},
                                              ValueRange{one}, ValueRange{one});
      OpBuilder initBuilder = OpBuilder::atBlockBegin(initLoop.getBody());
      Value buffer =
          memref::GetGlobalOp::create(initBuilder, loc, globalType, name);
      memref::StoreOp::create(initBuilder, loc,
                              arith::BitcastOp::create(
                                  initBuilder, loc, builder.getI32Type(), init),
                              buffer, ValueRange{zero});
    }

    // Step 2: the same loop, folding into the globals atomically.
    auto atomicLoop =
        scf::ParallelOp::create(builder, loc, parallel.getLowerBound(),
                                parallel.getUpperBound(), parallel.getStep());
    IRMapping mapping;
    mapping.map(parallel.getInductionVars(), atomicLoop.getInductionVars());
    OpBuilder bodyBuilder = OpBuilder::atBlockBegin(atomicLoop.getBody());
    for (Operation &op : parallel.getBody()->without_terminator())
      bodyBuilder.clone(op, mapping);
    auto reduce = cast<scf::ReduceOp>(parallel.getBody()->getTerminator());
    for (auto [index, operand] : llvm::enumerate(reduce.getOperands())) {
      memref::GlobalOp global = globals[index];
      Value buffer = memref::GetGlobalOp::create(
          bodyBuilder, loc, global.getType(), global.getSymName());
      auto atomic = memref::GenericAtomicRMWOp::create(bodyBuilder, loc, buffer,
                                                       ValueRange{zero});
      Region &combiner = reduce.getReductions()[index];
      Block &combinerBlock = combiner.front();
      OpBuilder atomicBuilder = OpBuilder::atBlockBegin(atomic.getBody());
      IRMapping combinerMapping;
      // scf.reduce's region combines (accumulated, new).
      Type valueType = combinerBlock.getArgument(0).getType();
      combinerMapping.map(combinerBlock.getArgument(0),
                          arith::BitcastOp::create(atomicBuilder, loc,
                                                   valueType,
                                                   atomic.getCurrentValue()));
      combinerMapping.map(combinerBlock.getArgument(1),
                          mapping.lookupOrDefault(operand));
      for (Operation &op : combinerBlock.without_terminator())
        atomicBuilder.clone(op, combinerMapping);
      auto combined = cast<scf::ReduceReturnOp>(combinerBlock.getTerminator());
      memref::AtomicYieldOp::create(
          atomicBuilder, loc,
          arith::BitcastOp::create(
              atomicBuilder, loc, builder.getI32Type(),
              combinerMapping.lookupOrDefault(combined.getResult())));
    }

    // Step 3: the results are the globals' values after the loop.
    for (auto [result, global] : llvm::zip(parallel.getResults(), globals)) {
      Value buffer = memref::GetGlobalOp::create(builder, loc, global.getType(),
                                                 global.getSymName());
      Value bits =
          memref::LoadOp::create(builder, loc, buffer, ValueRange{zero});
      result.replaceAllUsesWith(
          arith::BitcastOp::create(builder, loc, result.getType(), bits));
    }
    parallel.erase();
    (void)context;
  }
  return success();
}

struct LowbitGpuReductionsToAtomics
    : lowbit::impl::LowbitGpuReductionsToAtomicsBase<
          LowbitGpuReductionsToAtomics> {
  using LowbitGpuReductionsToAtomicsBase::LowbitGpuReductionsToAtomicsBase;
  void runOnOperation() override {
    if (failed(reduceThroughAtomics(getOperation())))
      signalPassFailure();
  }
};

} // namespace
