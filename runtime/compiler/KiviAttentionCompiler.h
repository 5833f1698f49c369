//===- KiviAttentionCompiler.h - KIVI decode attention -> CPU | PTX -*- C++
//-*-===//
//
// The compile entry of lowbit.kivi_decode_attention (docs/decode-attention
// .md, KIVI). A kv::KiviAttentionSpec becomes a module with one function
// @kernel holding the op over memrefs; lowbit-kivi-to-loops lowers it to
// two flat scf.parallel nests, which the CPU tail JIT-compiles or the GPU
// tail maps (one thread per unit) to PTX. Heads, head_dim, the code and
// parameter widths, the ring (R + G), the page sizes and q_heads / kv_heads
// are static; batch, tokens (or pages), parameter rows, splits and
// max_blocks are dynamic.
//
// Parameters, in order (the kernel ABI, kiviAttentionParams in
// KvKernelSignature.h; both sides' buffers as
// runtime/compiler/KiviCompiler.h's, keys per channel or per token, values
// per token):
//   query [B, Hq, D] (f32|f16|bf16),
//   key codes, key scales, key zeros, key residual [B, Hkv, R + G, D],
//   value codes, value scales, value zeros, value residual,
//   lengths [B] i32 (the tokens each sequence holds),
//   output [B, Hq, D] f32 (written),
//   partials [B, Hkv, S, Hq / Hkv, D + 2] f32 (written; S = ceil(max
//   tokens / split), max tokens the codes' dimension 2 or 16 x max_blocks),
//   then block_table [B, max_blocks] i32 (paged).
//
// Errors are values; nothing here aborts.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_COMPILER_KIVIATTENTIONCOMPILER_H
#define LOWBIT_RUNTIME_COMPILER_KIVIATTENTIONCOMPILER_H

#include "kv/KiviAttentionSpec.h"
#include "runtime/compiler/KvCompiler.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace lowbit::compiler {

/// The module with one kernel function @kernel, verified.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
buildKiviAttentionModule(mlir::MLIRContext &context,
                         const kv::KiviAttentionSpec &spec);

/// buildKiviAttentionModule, then lowerKiviToLoops: where both tails
/// start (the GPU tail through compileKvFamilyToPtx, KvFamilyCompile.h).
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
buildKiviAttentionLoops(mlir::MLIRContext &context,
                        const kv::KiviAttentionSpec &spec);

/// Checks `buffers` (ABI order) against the spec and each other before a
/// kernel reads them: ranks and static sizes, the batch, the cache's
/// tokens or pages and the splits agreeing between buffers, lengths in
/// [0, max tokens] and, paged, a page for every block of a quantized
/// prefix. The message names the buffer and both sizes.
llvm::Error checkKiviAttentionBuffers(const kv::KiviAttentionSpec &spec,
                                      const std::vector<KvBuffer> &buffers);

/// A KIVI decode-attention kernel JIT-compiled for the host CPU. run()
/// takes one buffer per parameter, in ABI order (checkKiviAttentionBuffers
/// first, then the static dimensions).
using KiviAttentionCpuKernel = HostKernel<kv::KiviAttentionSpec, KvBuffer>;
extern template class HostKernel<kv::KiviAttentionSpec, KvBuffer>;

llvm::Expected<std::unique_ptr<KiviAttentionCpuKernel>>
compileKiviAttentionForCpu(const kv::KiviAttentionSpec &spec);

} // namespace lowbit::compiler

#endif // LOWBIT_RUNTIME_COMPILER_KIVIATTENTIONCOMPILER_H
