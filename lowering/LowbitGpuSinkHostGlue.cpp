//===- LowbitGpuSinkHostGlue.cpp - host glue -> into the launches ---------===//
//
// After convert-parallel-loops-to-gpu, values the kernels use may still be
// computed on the host from device buffers; they move into the launches.
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

#define DEBUG_TYPE "lowbit-gpu-sink-host-glue"

namespace lowbit {
#define GEN_PASS_DEF_LOWBITGPUSINKHOSTGLUE
#include "lowering/Passes.h.inc"
} // namespace lowbit

using namespace mlir;

namespace {

/// Host glue that reads a buffer (e.g. NVFP4's global scale, loaded once
/// and used by every element) must run on the device: clone such loads,
/// and the pure arithmetic between them and the kernel, into each
/// gpu.launch that uses them. Kernels on one stream run in order, so a load
/// at kernel start sees what earlier kernels wrote.
void sinkHostGlueIntoLaunches(ModuleOp module) {
  auto isSinkable = [](Operation *op) {
    if (op->getNumRegions() != 0 || op->getNumResults() == 0)
      return false;
    return isa<memref::LoadOp, memref::DimOp, memref::GetGlobalOp>(op) ||
           isPure(op);
  };
  // gpu-kernel-outlining's sinkOperationsIntoLaunchOp only sinks ops whose
  // operands the kernel already uses, which leaves a load of an otherwise
  // unused buffer on the host; so sink here, operands after their users
  // (each clone goes to the top of the body, above the clones that use it).
  module.walk([&](gpu::LaunchOp launch) {
    Region &body = launch.getBody();
    bool changed = true;
    while (changed) {
      changed = false;
      SetVector<Value> outsideValues;
      getUsedValuesDefinedAbove(body, outsideValues);
      for (Value value : outsideValues) {
        Operation *definition = value.getDefiningOp();
        if (!definition || !isSinkable(definition))
          continue;
        OpBuilder builder(&body.front(), body.front().begin());
        Operation *clone = builder.clone(*definition);
        for (auto [original, cloned] :
             llvm::zip(definition->getResults(), clone->getResults()))
          replaceAllUsesInRegionWith(original, cloned, body);
        changed = true;
      }
    }
  });
  // The originals are dead now; erase them, users first.
  SmallVector<Operation *> hostOps;
  module.walk([&](Operation *op) {
    if (!op->getParentOfType<gpu::LaunchOp>() && isSinkable(op))
      hostOps.push_back(op);
  });
  for (Operation *op : llvm::reverse(hostOps))
    if (op->use_empty())
      op->erase();
}

struct LowbitGpuSinkHostGlue
    : lowbit::impl::LowbitGpuSinkHostGlueBase<LowbitGpuSinkHostGlue> {
  using LowbitGpuSinkHostGlueBase::LowbitGpuSinkHostGlueBase;
  void runOnOperation() override { sinkHostGlueIntoLaunches(getOperation()); }
};

} // namespace
