//===- LowbitGpuMergeModules.cpp - one gpu.module per compile -------------===//
//
// The runtime loads one PTX module per compiled spec (docs/gpu.md).
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringMap.h"

#define DEBUG_TYPE "lowbit-gpu-merge-modules"

namespace lowbit {
#define GEN_PASS_DEF_LOWBITGPUMERGEMODULES
#include "lowering/Passes.h.inc"
} // namespace lowbit

using namespace mlir;

namespace {

/// gpu-kernel-outlining makes one gpu.module per kernel. The runtime loads
/// one PTX module per compiled spec, so move every kernel into the first
/// gpu.module (outlined names are unique: <function>_kernel[_N]) and point
/// the launches at it.
void mergeGpuModules(ModuleOp module) {
  SmallVector<gpu::GPUModuleOp> gpuModules(module.getOps<gpu::GPUModuleOp>());
  if (gpuModules.size() < 2)
    return;
  // Kernels outlined from one function share a name in different modules
  // (only the modules are renamed unique); give each kernel its module's
  // unique name before they share one symbol table.
  llvm::StringMap<std::string> kernelRenames; // "module::kernel" -> name
  for (gpu::GPUModuleOp gpuModule : gpuModules) {
    for (auto kernel : gpuModule.getOps<gpu::GPUFuncOp>()) {
      std::string key = (gpuModule.getName() + "::" + kernel.getName()).str();
      kernelRenames[key] = gpuModule.getName().str();
      SymbolTable::setSymbolName(kernel, gpuModule.getNameAttr());
    }
  }
  gpu::GPUModuleOp target = gpuModules.front();
  for (gpu::GPUModuleOp source : ArrayRef(gpuModules).drop_front()) {
    for (Operation &op :
         llvm::make_early_inc_range(source.getBody()->getOperations())) {
      // Outlining copies each device global into every kernel's module;
      // keep one, shared by all kernels.
      if (auto global = dyn_cast<memref::GlobalOp>(op))
        if (SymbolTable::lookupSymbolIn(target, global.getSymName()))
          continue;
      op.moveBefore(target.getBody(), target.getBody()->end());
    }
    source.erase();
  }
  module.walk([&](gpu::LaunchFuncOp launch) {
    std::string key = (launch.getKernelModuleName().getValue() +
                       "::" + launch.getKernelName().getValue())
                          .str();
    auto renamed = kernelRenames.find(key);
    StringRef kernelName = renamed != kernelRenames.end()
                               ? StringRef(renamed->second)
                               : launch.getKernelName().getValue();
    launch.setKernelAttr(SymbolRefAttr::get(
        target.getNameAttr(),
        {FlatSymbolRefAttr::get(module.getContext(), kernelName)}));
  });
}

struct LowbitGpuMergeModules
    : lowbit::impl::LowbitGpuMergeModulesBase<LowbitGpuMergeModules> {
  using LowbitGpuMergeModulesBase::LowbitGpuMergeModulesBase;
  void runOnOperation() override { mergeGpuModules(getOperation()); }
};

} // namespace
