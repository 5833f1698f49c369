//===- LowbitGpuOutlineKernels.cpp - Outlining that keeps residency -------===//
//
// gpu-kernel-outlining drops the attributes of a gpu.launch; a launch's
// requested residency (kit::requireBlocksPerSm) must reach its kernel.
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"
#include "lowering/kit/GridStride.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"

#define DEBUG_TYPE "lowbit-gpu-outline-kernels"

namespace lowbit {
#define GEN_PASS_DEF_LOWBITGPUOUTLINEKERNELS
#include "lowering/Passes.h.inc"
} // namespace lowbit

using namespace mlir;

namespace {

struct LowbitGpuOutlineKernels
    : lowbit::impl::LowbitGpuOutlineKernelsBase<LowbitGpuOutlineKernels> {
  LowbitGpuOutlineKernels() : outlining(ModuleOp::getOperationName()) {
    outlining.addPass(createGpuKernelOutliningPass());
  }
  LowbitGpuOutlineKernels(const LowbitGpuOutlineKernels &other)
      : LowbitGpuOutlineKernelsBase(other),
        outlining(ModuleOp::getOperationName()) {
    outlining.addPass(createGpuKernelOutliningPass());
  }

  void getDependentDialects(DialectRegistry &registry) const override {
    outlining.getDependentDialects(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Launches outlined before this pass are not this run's to pair.
    llvm::DenseSet<Operation *> earlier;
    module.walk([&](gpu::LaunchFuncOp call) { earlier.insert(call); });
    SmallVector<IntegerAttr> residency;
    module.walk([&](gpu::LaunchOp launch) {
      residency.push_back(launch->getAttrOfType<IntegerAttr>(
          lowbit::kit::kBlocksPerSmAttrName));
    });
    if (failed(runPipeline(outlining, module)))
      return signalPassFailure();

    SymbolTableCollection symbols;
    StringRef minctasm = NVVM::NVVMDialect::getMinctasmAttrName();
    size_t index = 0;
    WalkResult walked = module.walk([&](gpu::LaunchFuncOp call) {
      if (earlier.contains(call))
        return WalkResult::advance();
      if (index == residency.size()) {
        call.emitError("more kernel launches after outlining than gpu.launch "
                       "ops before it");
        return WalkResult::interrupt();
      }
      IntegerAttr blocks = residency[index++];
      if (!blocks)
        return WalkResult::advance();
      auto kernel = symbols.lookupNearestSymbolFrom<gpu::GPUFuncOp>(
          call, call.getKernel());
      if (!kernel) {
        call.emitError("outlined kernel ") << call.getKernel() << " not found";
        return WalkResult::interrupt();
      }
      kernel->setAttr(minctasm, blocks);
      return WalkResult::advance();
    });
    if (walked.wasInterrupted() || index != residency.size()) {
      if (!walked.wasInterrupted())
        module.emitError("gpu.launch ops left after outlining");
      signalPassFailure();
    }
  }

private:
  OpPassManager outlining;
};

} // namespace
