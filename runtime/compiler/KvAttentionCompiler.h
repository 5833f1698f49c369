//===- KvAttentionCompiler.h - Decode attention: spec -> kernels -*- C++
//-*-===//
//
// The compile entry of lowbit.kv_decode_attention (docs/decode-attention.md):
// a kv::KvAttentionSpec becomes a module with one kernel function over 2-D
// memrefs (the kernel ABI below, the form the JIT's launch plans and the GPU
// emulator take), lowered by lowbit-attention-to-loops, then the CPU tail
// (ORC JIT) or the GPU tail (PTX; the emulator runs the same module).
//
// Kernel ABI (kvAttentionParams in KvKernelSignature.h), in order ([rows,
// cols], row-major; B batch, Hq/Hkv heads, D head_dim, G = Hq / Hkv, W = ceil(D
// / group), T tokens per sequence (contiguous), P pages, N max blocks, S =
// ceil(max_tokens / split)):
//   query          [B * Hq, D]          f32 | f16 | bf16
//   key_codes      [B * Hkv * T, D] or [P * Hkv * 16, D]        i8
//   key_scales     [rows of key_codes, W] (int8 groups), [1, 1] (per
//                  tensor) or [1, Hkv] (per head)               f32
//   value_codes, value_scales: as the keys'
//   seq_lens       [1, B]               i32
//   block_table    [B, N]               i32 (paged only)
//   output         [B * Hq, D]          f32 (written)
//   partials       [B * Hkv * S * G, D + 2] f32 (written; scratch)
//
// Errors are values; nothing aborts.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_COMPILER_KVATTENTIONCOMPILER_H
#define LOWBIT_RUNTIME_COMPILER_KVATTENTIONCOMPILER_H

#include "kv/KvAttentionSpec.h"
#include "lowering/GpuTail.h"
#include "runtime/compiler/Compiler.h"
#include "runtime/compiler/GpuCompile.h"
#include "runtime/compiler/HostKernel.h"
#include "runtime/compiler/KvKernelSignature.h"
#include "target/Target.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace lowbit::compiler {

/// The sizes a call fixes. Contiguous: maxTokens per sequence. Paged:
/// pages and maxBlocks (max tokens = 16 * maxBlocks).
struct KvAttentionSizes {
  int64_t batch = 1, maxTokens = 1, pages = 0, maxBlocks = 0;
};
/// Every parameter's [rows, cols] for `sizes`, in ABI order.
std::vector<std::array<int64_t, 2>>
kvAttentionShapes(const kv::KvAttentionSpec &spec,
                  const KvAttentionSizes &sizes);

/// The module with the kernel function, verified.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
buildKvAttentionModule(mlir::MLIRContext &context,
                       const kv::KvAttentionSpec &spec);
/// lowbit-attention-to-loops on it.
llvm::Error lowerKvAttentionToLoops(mlir::ModuleOp module);
/// The loops-level module as text (the CPU tail's input).
llvm::Expected<std::string>
kvAttentionLoopsText(const kv::KvAttentionSpec &spec);
/// The GPU form: stage 1 as the FlashDecoding kernel (lowbit-to-gpu's
/// gpu.launch), stage 2 as loops; an error names why a spec has no kernel
/// (docs/decode-attention.md, "The GPU kernel"). buildKvAttentionModule
/// then this is where compileKvFamilyToPtx (KvFamilyCompile.h) hands the
/// module to the GPU tail.
llvm::Error lowerKvAttentionForGpu(mlir::ModuleOp module);
/// The GPU form as text (what the GPU tail and the emulator take).
llvm::Expected<std::string> kvAttentionGpuText(const kv::KvAttentionSpec &spec);

/// The kernel JIT-compiled for the host; run() takes one HostBuffer per
/// kvAttentionParams entry and checks them (kvAttentionSizesOf).
using KvAttentionCpuKernel = HostKernel<kv::KvAttentionSpec, HostBuffer>;
extern template class HostKernel<kv::KvAttentionSpec, HostBuffer>;
llvm::Expected<std::unique_ptr<KvAttentionCpuKernel>>
compileKvAttentionForCpu(const kv::KvAttentionSpec &spec);

/// The sizes implied by `buffers` (ABI order), or an error naming the
/// buffer whose shape disagrees with the spec or with the others, a
/// sequence length outside [0, max tokens], or a block-table entry a
/// sequence reaches that names no page. Reads seq_lens and block_table.
llvm::Expected<KvAttentionSizes>
kvAttentionSizesOf(const kv::KvAttentionSpec &spec,
                   const std::vector<HostBuffer> &buffers);

} // namespace lowbit::compiler

#endif // LOWBIT_RUNTIME_COMPILER_KVATTENTIONCOMPILER_H
