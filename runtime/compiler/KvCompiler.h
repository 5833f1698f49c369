//===- KvCompiler.h - KV kernel spec -> MLIR -> loops -> CPU | PTX -*- C++
//-*-===//
//
// The compile entry of the KV-cache kernels (docs/kv-kernels.md). A
// kv::KvKernelSpec becomes a module with one function @kernel holding one
// lowbit.kv_append or lowbit.kv_dequantize over memrefs; lowbit-kv-to-loops
// lowers it to loops, and the CPU tail JIT-compiles it or the GPU tail
// makes PTX. heads and head_dim are static; batch, tokens, the cache's
// token capacity (or page count) and max_blocks are dynamic, so one kernel
// serves every cache of a spec.
//
// Parameters, in order (the kernel ABI, kvKernelParams in KvKernelSignature.h):
//   kv_append:     input [B, H, N, D] (f16|bf16), codes, scales,
//                  positions [B] i32, then block_table [B, MB] i32 (paged)
//   kv_dequantize: codes, scales, positions [B] i32, output [B, H, N, D]
//                  (f16|bf16|f32), then block_table (paged)
// codes: i8 [B, H, T, D] (contiguous) or [P, H, 16, D] (paged); scales:
// f32 with the codes' layout and width ceil(D / G) (kv_int8), or [1] /
// [H] static scales (kv_fp8).
//
// Errors are values; nothing here aborts.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_COMPILER_KVCOMPILER_H
#define LOWBIT_RUNTIME_COMPILER_KVCOMPILER_H

#include "kv/KvKernelSpec.h"
#include "lowering/GpuTail.h"
#include "runtime/compiler/GpuCompile.h"
#include "runtime/compiler/HostKernel.h"
#include "runtime/compiler/KvKernelSignature.h"
#include "target/Target.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mlir {
class MLIRContext;
} // namespace mlir

namespace lowbit::compiler {

/// The module with one kernel function @kernel, verified.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
buildKvModule(mlir::MLIRContext &context, const kv::KvKernelSpec &spec);

/// Runs lowbit-kv-to-loops on `module` (the CPU tail starts from its
/// result).
llvm::Error lowerKvToLoops(mlir::ModuleOp module);

/// The GPU tail's input: lowbit-to-gpu maps the ops it covers one warp per
/// row (lowering/GpuKvAppend.h), then lowbit-kv-to-loops takes the rest.
/// buildKvModule then this is where compileKvFamilyToPtx
/// (KvFamilyCompile.h) hands the module to the GPU tail.
llvm::Error lowerKvForGpu(mlir::ModuleOp module);

/// The kernel's text at `stage` for the CPU target: "mlir" (the dialect),
/// "loops" or "llvm" (LLVM IR).
llvm::Expected<std::string> emitKv(const kv::KvKernelSpec &spec,
                                   std::string_view stage);

/// One kernel parameter's host buffer: C-order `shape`, element type as
/// the ABI above says.
struct KvBuffer {
  void *data = nullptr;
  std::vector<int64_t> shape;
};

/// Checks `buffers` against `params`: one per parameter, each of its rank,
/// static dimensions equal, the call's >= 1.
llvm::Error checkBufferShapes(const std::vector<KvKernelParam> &params,
                              const std::vector<KvBuffer> &buffers);

/// A KV kernel JIT-compiled for the host CPU. run() takes one buffer per
/// parameter, in ABI order, and checks them with checkBufferShapes.
using KvCpuKernel = HostKernel<kv::KvKernelSpec, KvBuffer>;
extern template class HostKernel<kv::KvKernelSpec, KvBuffer>;

llvm::Expected<std::unique_ptr<KvCpuKernel>>
compileKvForCpu(const kv::KvKernelSpec &spec);

} // namespace lowbit::compiler

#endif // LOWBIT_RUNTIME_COMPILER_KVCOMPILER_H
