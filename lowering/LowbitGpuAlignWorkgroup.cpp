//===- LowbitGpuAlignWorkgroup.cpp - 16-byte aligned shared memory --------===//
//
// Runs on the outlined kernels (gpu.func), before convert-gpu-to-nvvm turns
// each workgroup attribution into an addrspace(3) global.
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#define DEBUG_TYPE "lowbit-gpu-align-workgroup"

namespace lowbit {
#define GEN_PASS_DEF_LOWBITGPUALIGNWORKGROUP
#include "lowering/Passes.h.inc"
} // namespace lowbit

using namespace mlir;

namespace {

/// cp.async of 16 bytes, ldmatrix and the vector loads of shared tiles
/// need 16-byte aligned shared addresses. The kernels keep their offsets
/// aligned, but the lowering gives each buffer only its element type's
/// alignment (`.shared .align 1` for byte codes), so where ptxas places a
/// buffer after another one, its base need not be.
constexpr int64_t kSharedAlignment = 16;

void alignWorkgroupBuffers(ModuleOp module) {
  Builder builder(module.getContext());
  StringRef alignName = LLVM::LLVMDialect::getAlignAttrName();
  module.walk([&](gpu::GPUFuncOp kernel) {
    for (unsigned index = 0; index < kernel.getNumWorkgroupAttributions();
         ++index) {
      auto present = dyn_cast_or_null<IntegerAttr>(
          kernel.getWorkgroupAttributionAttr(index, alignName));
      if (present && present.getInt() >= kSharedAlignment)
        continue;
      kernel.setWorkgroupAttributionAttr(
          index, alignName, builder.getI64IntegerAttr(kSharedAlignment));
    }
  });
}

struct LowbitGpuAlignWorkgroup
    : lowbit::impl::LowbitGpuAlignWorkgroupBase<LowbitGpuAlignWorkgroup> {
  using LowbitGpuAlignWorkgroupBase::LowbitGpuAlignWorkgroupBase;
  void runOnOperation() override { alignWorkgroupBuffers(getOperation()); }
};

} // namespace
