//===- LowbitGpuRelaxAtomics.cpp - relaxed device-scope atomics -----------===//
//
// Runs on the kernels after convert-gpu-to-nvvm, where the atomics are
// LLVM dialect ops.
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#define DEBUG_TYPE "lowbit-gpu-relax-atomics"

namespace lowbit {
#define GEN_PASS_DEF_LOWBITGPURELAXATOMICS
#include "lowering/Passes.h.inc"
} // namespace lowbit

using namespace mlir;

namespace {

/// The kernels' atomics only combine values within one launch (the next
/// kernel on the stream sees them through the launch boundary), so they
/// need neither ordering nor system scope: relaxed, device (.gpu) scope,
/// instead of LLVM's default acq_rel/seq_cst at system scope, which NVPTX
/// emits as atom.*.sys with a MEMBAR.SYS.
void relaxDeviceAtomics(ModuleOp module) {
  StringAttr device = StringAttr::get(module.getContext(), "device");
  module.walk([&](gpu::GPUModuleOp gpuModule) {
    gpuModule.walk([&](Operation *op) {
      if (auto rmw = dyn_cast<LLVM::AtomicRMWOp>(op)) {
        rmw.setSyncscopeAttr(device);
        rmw.setOrdering(LLVM::AtomicOrdering::monotonic);
      } else if (auto cmpxchg = dyn_cast<LLVM::AtomicCmpXchgOp>(op)) {
        cmpxchg.setSyncscopeAttr(device);
        cmpxchg.setSuccessOrdering(LLVM::AtomicOrdering::monotonic);
        cmpxchg.setFailureOrdering(LLVM::AtomicOrdering::monotonic);
      }
    });
  });
}

struct LowbitGpuRelaxAtomics
    : lowbit::impl::LowbitGpuRelaxAtomicsBase<LowbitGpuRelaxAtomics> {
  using LowbitGpuRelaxAtomicsBase::LowbitGpuRelaxAtomicsBase;
  void runOnOperation() override { relaxDeviceAtomics(getOperation()); }
};

} // namespace
