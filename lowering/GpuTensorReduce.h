//===- GpuTensorReduce.h - Whole-tensor statistics on the GPU ---*- C++ -*-===//
//
// The tensor-wide reduction of the per-tensor dynamic schemes (fp8_e4m3,
// fp8_e5m2, int8, and nvfp4's computed global scale): one launch with a
// grid-stride, 16-byte amax, warp shuffles and a shared-memory block
// reduction, one relaxed device-scope atomic max per block into the
// runtime's workspace, and an atomic ticket whose last block computes and
// stores the scale and zeroes the workspace again (docs/gpu.md,
// docs/kernel-abi.md "Workspace").
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_GPUTENSORREDUCE_H
#define LOWBIT_LOWERING_GPUTENSORREDUCE_H

#include "format/Scheme.h"
#include "lowering/ScaleMath.h"
#include "target/WorkspaceRows.h"

// The launches fence with nvvm.memory.barrier: a pass that emits them
// lists the NVVM dialect among its dependent dialects.
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"

namespace lowbit::gpu_mapping {

/// The function argument attribute that marks the workspace parameter.
inline constexpr const char *kWorkspaceAttrName = workspace_abi::kArgumentAttr;

/// The workspace argument of `op`'s function, appended as its last argument
/// (memref<1 x words x i32>) when the function has none yet; an existing
/// one is reused (the launches run one after another and each reduction
/// leaves it zero). Null when an existing one has fewer than `words` words.
mlir::Value workspaceArgument(mlir::RewriterBase &rewriter, mlir::Operation *op,
                              int64_t words);

/// The workspace argument of `op`'s function for kernels that write X's
/// quantized rows into it (docs/kernel-abi.md, "Workspace"): memref<1 x ?
/// x i32>, `fixedWords` words first (the reductions' words, as
/// workspaceArgument gives them), then the region that grows with X
/// (`rows`; workspace_abi::wordsFor). Null when the function has a
/// workspace already.
mlir::Value rowWorkspaceArgument(mlir::RewriterBase &rewriter,
                                 mlir::Operation *op, int64_t fixedWords,
                                 workspace_abi::RowWords rows);

/// Launch 1 of a computed global scale (nvfp4 dynamic): the tensor amax of
/// `input` reduced through the workspace, and `computeGlobal(amax)` stored
/// into `global` ([1, 1] f32) by the last block. Emitted at the builder's
/// insertion point, before the launch that reads the global.
void emitTensorGlobalLaunch(mlir::RewriterBase &rewriter,
                            mlir::ImplicitLocOpBuilder &b, mlir::Operation *op,
                            const Scheme &scheme, mlir::Value input,
                            mlir::Value global, int64_t threadsPerBlock);

/// Launch 1 of a computed global scale that no buffer holds (the FP4
/// matmul's X, GpuMatmulFp4.h): as emitTensorGlobalLaunch, but the last
/// block stores the global's bits into word `word` of the workspace, which
/// it returns (with at least `word` + 1 words). The launch that reads the
/// word is the one that must zero it again.
mlir::Value emitTensorGlobalIntoWorkspace(mlir::RewriterBase &rewriter,
                                          mlir::ImplicitLocOpBuilder &b,
                                          mlir::Operation *op,
                                          const Scheme &scheme,
                                          mlir::Value input, int64_t word,
                                          int64_t threadsPerBlock);

/// Launch 1 of a per-tensor scale that no buffer holds (the W8A8 matmul's
/// per-tensor X, GpuMatmulQuantized.h): as emitTensorGlobalIntoWorkspace,
/// but the last block stores the tensor's amax (its f32 bits) into word
/// `word`; the reader picks the scale from it with ScaleMath.
mlir::Value emitTensorAmaxIntoWorkspace(mlir::RewriterBase &rewriter,
                                        mlir::ImplicitLocOpBuilder &b,
                                        mlir::Operation *op,
                                        const Scheme &scheme, mlir::Value input,
                                        int64_t word, int64_t threadsPerBlock);

/// The launch after the one that reads word `word` of `workspace`: one
/// thread stores 0 there, so the sequence leaves the workspace all zero as
/// it found it (docs/kernel-abi.md, "Workspace").
void emitWorkspaceWordReset(mlir::ImplicitLocOpBuilder &b,
                            mlir::Value workspace, int64_t word);

/// The end of a statistics launch emitted elsewhere (the fused kernels of
/// GpuFusedRows.cpp): each thread's statistics `acc` (amax, or amax, min,
/// max) are combined over its warp and block through the launch's first
/// workgroup attribution (warps x statistics f32) and folded into
/// `workspace` as launch 1 above does; the last block calls `storeResults`
/// with the tensor's statistics. Every thread of the block must reach it.
void emitStatsIntoWorkspace(
    mlir::ImplicitLocOpBuilder &b, const Scheme &scheme,
    int64_t threadsPerBlock, mlir::gpu::LaunchOp launch,
    llvm::SmallVector<mlir::Value> acc, mlir::Value workspace, bool withMinMax,
    llvm::function_ref<void(const Stats &)> storeResults);

} // namespace lowbit::gpu_mapping

#endif // LOWBIT_LOWERING_GPUTENSORREDUCE_H
