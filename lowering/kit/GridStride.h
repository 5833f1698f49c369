//===- GridStride.h - Grid-stride loops of the kernel kit -------*- C++ -*-===//
//
// What the grid-stride kernels share beyond kit::KernelEmitter
// (docs/kernel-kit.md): the grid cap and the residency they ask for.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_KIT_GRIDSTRIDE_H
#define LOWBIT_LOWERING_KIT_GRIDSTRIDE_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include <cstdint>

namespace lowbit::kit {

/// The grid cap of the grid-stride kernels: about four waves of 256-thread
/// blocks on a 132-SM H200 (8 resident per SM) or a 148-SM B200, so each
/// thread's setup is paid for a few trips and the last wave is short.
inline constexpr int64_t kGridStrideBlocks = 4096;

/// Blocks of 256 threads a grid-stride kernel asks to keep resident per SM.
/// nvJitLink compiles PTX as relocatable code, where ptxas spends up to 158
/// registers on a dequantize that needs 68 whole-program: one block per SM,
/// too few loads in flight for HBM. Three blocks cap it at 80 registers
/// (65536 / 768, in steps of 8); four spill in the nibble dequantize
/// kernels (docs/kernel-kit.md, "Residency").
inline constexpr int64_t kGridStrideBlocksPerSm = 3;

/// The discardable attribute on a gpu.launch that carries its residency
/// until lowbit-gpu-outline-kernels makes it the kernel's nvvm.minctasm.
inline constexpr llvm::StringLiteral kBlocksPerSmAttrName =
    "lowbit.min_blocks_per_sm";

/// Asks ptxas to fit `blocks` of `launch`'s blocks on one SM (PTX
/// `.minnctapersm`, with the `.maxntid` of the launch's block size).
inline void requireBlocksPerSm(mlir::gpu::LaunchOp launch, int64_t blocks) {
  mlir::Builder builder(launch.getContext());
  launch->setAttr(kBlocksPerSmAttrName,
                  builder.getI32IntegerAttr(static_cast<int32_t>(blocks)));
}

} // namespace lowbit::kit

#endif // LOWBIT_LOWERING_KIT_GRIDSTRIDE_H
