//===- LowbitGpuWrapHostStores.cpp - host stores -> one-thread loops ------===//
//
// Whatever stays outside scf.parallel and gpu.launch runs on the host; a
// store there would write a device buffer from the CPU.
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#define DEBUG_TYPE "lowbit-gpu-wrap-host-stores"

namespace lowbit {
#define GEN_PASS_DEF_LOWBITGPUWRAPHOSTSTORES
#include "lowering/Passes.h.inc"
} // namespace lowbit

using namespace mlir;

namespace {

/// A store left in the host glue (e.g. the per-tensor scale computed from
/// the amax) becomes a one-thread loop, so it runs on the device like the
/// rest; the values it needs are sunk into it with the other host glue.
void wrapHostStores(ModuleOp module) {
  SmallVector<memref::StoreOp> hostStores;
  module.walk([&](memref::StoreOp store) {
    // Stores in lowbit-to-gpu's launches are already on the device.
    if (!store->getParentOfType<scf::ParallelOp>() &&
        !store->getParentOfType<gpu::LaunchOp>())
      hostStores.push_back(store);
  });
  for (memref::StoreOp store : hostStores) {
    OpBuilder builder(store);
    Location loc = store.getLoc();
    Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
    Value one = arith::ConstantIndexOp::create(builder, loc, 1);
    auto loop = scf::ParallelOp::create(builder, loc, ValueRange{zero},
                                        ValueRange{one}, ValueRange{one});
    store->moveBefore(loop.getBody()->getTerminator());
  }
}

struct LowbitGpuWrapHostStores
    : lowbit::impl::LowbitGpuWrapHostStoresBase<LowbitGpuWrapHostStores> {
  using LowbitGpuWrapHostStoresBase::LowbitGpuWrapHostStoresBase;
  void runOnOperation() override { wrapHostStores(getOperation()); }
};

} // namespace
