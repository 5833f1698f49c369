//===- KiviCompiler.h - KIVI kernel spec -> MLIR -> loops -> CPU | PTX -*- C++
//-*-===//
//
// The compile entry of the KIVI cache kernels (docs/kv-kernels.md, KIVI).
// A kv::KiviKernelSpec becomes a module with one function @kernel holding
// one lowbit.kivi_append or lowbit.kivi_dequantize over memrefs;
// lowbit-kivi-to-loops lowers it, then the CPU tail JIT-compiles it or the
// GPU tail makes PTX. heads, head_dim, the code and parameter widths, the
// ring (R + G) and the page sizes are static; batch, tokens, capacity (or
// pages), parameter rows and max_blocks are dynamic.
//
// Parameters, in order (the kernel ABI, kiviKernelParams in
// KvKernelSignature.h; W = ceil(D / 2) for int4, D for
// int2; PW = D per channel, ceil(D / G) per token):
//   kivi_append:     input [B, H, N, D] (f16|bf16), codes, scales, zeros,
//                    residual [B, H, R + G, D] (the input's type),
//                    lengths [B] i32, then block_table [B, MB] i32 (paged)
//   kivi_dequantize: codes, scales, zeros, residual, positions [B] i32,
//                    lengths [B] i32, output [B, H, N, D] (f16|bf16|f32),
//                    then block_table (paged)
// codes i8 [B, H, T, W] or [P, H, 16, W]; scales f32 and zeros i8 (u8
// bits): per channel [B, H, groups, D] or [P, H, ceil(16 / G), D], per
// token the codes' layout with PW columns.
//
// Errors are values; nothing here aborts.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_COMPILER_KIVICOMPILER_H
#define LOWBIT_RUNTIME_COMPILER_KIVICOMPILER_H

#include "kv/KvKiviKernelSpec.h"
#include "runtime/compiler/KvCompiler.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace lowbit::compiler {

/// The module with one kernel function @kernel, verified.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
buildKiviModule(mlir::MLIRContext &context, const kv::KiviKernelSpec &spec);

/// Runs lowbit-kivi-to-loops on `module`.
llvm::Error lowerKiviToLoops(mlir::ModuleOp module);

/// buildKiviModule, then lowerKiviToLoops: where both tails start (the GPU
/// tail through compileKvFamilyToPtx, KvFamilyCompile.h).
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
buildKiviLoops(mlir::MLIRContext &context, const kv::KiviKernelSpec &spec);

/// A KIVI kernel JIT-compiled for the host CPU. run() takes one buffer per
/// parameter, in ABI order; ranks and static dimensions are checked.
using KiviCpuKernel = HostKernel<kv::KiviKernelSpec, KvBuffer>;
extern template class HostKernel<kv::KiviKernelSpec, KvBuffer>;

llvm::Expected<std::unique_ptr<KiviCpuKernel>>
compileKiviForCpu(const kv::KiviKernelSpec &spec);

} // namespace lowbit::compiler

#endif // LOWBIT_RUNTIME_COMPILER_KIVICOMPILER_H
