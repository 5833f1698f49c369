//===- LowbitGpuCheckNoHostMemory.cpp - refuse host memory accesses -------===//
//
// The last check before outlining: IR the tail cannot map is refused with
// a message instead of producing a kernel that reads device memory on the
// host.
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#define DEBUG_TYPE "lowbit-gpu-check-no-host-memory"

namespace lowbit {
#define GEN_PASS_DEF_LOWBITGPUCHECKNOHOSTMEMORY
#include "lowering/Passes.h.inc"
} // namespace lowbit

using namespace mlir;

namespace {

/// Whatever still touches memory on the host would run against device
/// buffers: refuse it.
LogicalResult checkNoHostMemoryAccess(ModuleOp module) {
  WalkResult result = module.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (isa<gpu::LaunchOp, gpu::GPUModuleOp>(op))
      return WalkResult::skip();
    if (!isa<memref::LoadOp, memref::StoreOp>(op))
      return WalkResult::advance();
    op->emitError() << "the GPU tail does not yet support memory accesses "
                       "outside scf.parallel that cannot move into a kernel "
                       "(they would run on the host): "
                    << op->getName();
    return WalkResult::interrupt();
  });
  return failure(result.wasInterrupted());
}

struct LowbitGpuCheckNoHostMemory
    : lowbit::impl::LowbitGpuCheckNoHostMemoryBase<LowbitGpuCheckNoHostMemory> {
  using LowbitGpuCheckNoHostMemoryBase::LowbitGpuCheckNoHostMemoryBase;
  void runOnOperation() override {
    if (failed(checkNoHostMemoryAccess(getOperation())))
      signalPassFailure();
  }
};

} // namespace
