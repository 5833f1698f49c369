//===- GpuMma.h - Build nvvm.mma.sync with f32 accumulators -----*- C++ -*-===//
//
// The builders of the tensor-core ops the GPU kernels use, D = A x B + C
// for one warp: mma.sync.aligned.m16n8k{16,8}.row.col.f32.{f16,bf16}.
// {f16,bf16}.f32, and the block-scaled FP4 m16n8k64 of sm_120a. Which lane
// holds which element of A, B, C and D is in lowering/GpuMmaLayout.h (the PTX
// ISA's fragment layouts); the GPU emulator executes the op (docs/emulator.md,
// "Tensor cores").
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_GPUMMA_H
#define LOWBIT_LOWERING_GPUMMA_H

#include "mlir/IR/Builders.h"
#include "mlir/Support/LLVM.h"

namespace lowbit {

/// Emits one nvvm.mma.sync and returns D's four f32 (this lane's d0..d3).
/// `a` holds 4 registers (m16n8k16) or 2 (m16n8k8), `b` half as many, each
/// a vector<2xT> (T = `elementType`, f16 or bf16; element 0 is the low
/// half) or its bits as an i32; `c` holds four f32. Other operand counts
/// or types are an error at `loc`, and nothing is emitted.
mlir::FailureOr<llvm::SmallVector<mlir::Value, 4>>
buildMmaSyncF32(mlir::OpBuilder &builder, mlir::Location loc,
                llvm::ArrayRef<mlir::Value> a, llvm::ArrayRef<mlir::Value> b,
                llvm::ArrayRef<mlir::Value> c, mlir::Type elementType);

/// Emits one block-scaled FP4 mma (nvvm.mma.block_scale, m16n8k64 row.col
/// e2m1 x e2m1 -> f32) and returns D's four f32. `blockK` is the scale
/// block: 16 gives .kind::mxf4nvf4 .scale_vec::4X with ue4m3 scales
/// (NVFP4), 32 .kind::mxf4 .scale_vec::2X with ue8m0 scales (MXFP4). `a`
/// holds 4 i32 (8 packed e2m1 codes each, element 0 in the low nibble), `b`
/// 2, `c` four f32; `scaleA` / `scaleB` the lane's scale-a-data and
/// scale-b-data (byte j: block j), read with byte-id 0 and thread-id 0
/// (GpuMmaLayout.h, scaleAElementLane / scaleBElementLane).
mlir::FailureOr<llvm::SmallVector<mlir::Value, 4>> buildMmaBlockScaleF32(
    mlir::OpBuilder &builder, mlir::Location loc, llvm::ArrayRef<mlir::Value> a,
    llvm::ArrayRef<mlir::Value> b, llvm::ArrayRef<mlir::Value> c,
    mlir::Value scaleA, mlir::Value scaleB, int64_t blockK);

} // namespace lowbit

#endif // LOWBIT_LOWERING_GPUMMA_H
