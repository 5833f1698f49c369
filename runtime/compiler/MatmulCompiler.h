//===- MatmulCompiler.h - Quantized-weight matmul: spec -> kernels -*- C++
//-*-===//
//
// The compile entry of lowbit.matmul (docs/matmul.md): a matmul::MatmulSpec
// becomes a module with one kernel function over 2-D memrefs (the ABI of
// MatmulSignature.h), lowered by lowbit-matmul-to-loops and lowbit-to-loops
// then the CPU tail (ORC JIT), or by the GPU lowering then the one GPU
// compile (GpuCompile.h: PTX, launch plan; the emulator runs the same
// module).
//
// Errors are values; nothing aborts.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_COMPILER_MATMULCOMPILER_H
#define LOWBIT_RUNTIME_COMPILER_MATMULCOMPILER_H

#include "matmul/MatmulSpec.h"
#include "runtime/compiler/Compiler.h"
#include "runtime/compiler/GpuCompile.h"
#include "runtime/compiler/HostKernel.h"
#include "runtime/compiler/MatmulSignature.h"
#include "target/Target.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace lowbit::compiler {

/// The module with the kernel function (lowbit.matmul over the ABI's
/// memrefs), verified. A spec whose scheme is not a weight scheme, or does
/// not fit its static [n, k], is refused with the model's message.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
buildMatmulModule(mlir::MLIRContext &context, const matmul::MatmulSpec &spec);
/// lowbit-matmul-to-loops, then lowbit-to-loops (the weights' dequantize).
llvm::Error lowerMatmulToLoops(mlir::ModuleOp module);
/// The GPU lowering: lowbit-to-gpu, which maps lowbit.matmul to its
/// kernels; an error when it leaves one unmapped (no GPU kernel for it).
llvm::Error lowerMatmulForGpu(mlir::ModuleOp module);
/// The loops-level module as text (the CPU tail's input).
llvm::Expected<std::string> matmulLoopsText(const matmul::MatmulSpec &spec);
/// Refuses a spec with quantized activations that the W8A8 GPU kernel does
/// not run (lowering/GpuMatmulQuantized.h: FP4, other scale layouts),
/// naming why; success for the weight-only matmul and the W8A8 pairs.
llvm::Error refuseQuantizedActivationsOnGpu(const matmul::MatmulSpec &spec);
/// The GPU form as text (what the GPU tail and the emulator take), for
/// `target` when one is given: on a chip with the block-scaled mma.sync
/// (sm_120a) the FP4 GEMM takes its native path (GpuMatmulFp4.h), without
/// a target, or on other chips, the bf16 fallback.
llvm::Expected<std::string> matmulGpuText(const matmul::MatmulSpec &spec,
                                          const Target *target = nullptr);

/// Why `target` cannot run `spec`'s GPU kernels, or "" when it can: an
/// NVIDIA target, with mma.sync m16n8k16 for an f16/bf16 X (the GEMM), or
/// for quantized activations the m16n8k32 s8 (sm_80) or FP8 (sm_89) mma;
/// the FP8 one is compiled with PTX 8.4 when the target's is older.
std::string matmulTargetRefusal(const matmul::MatmulSpec &spec,
                                const Target &target);

/// The kernels for an NVIDIA `target` through the one GPU compile
/// (compileModuleForGpu with lowerMatmulForGpu); matmulTargetRefusal's
/// reason as the error for a target that cannot run them.
llvm::Expected<GpuCompilation>
compileMatmulToPtx(const matmul::MatmulSpec &spec, const Target &target,
                   const GpuCompileOptions &options = {});

/// The kernel JIT-compiled for the host; run() takes one HostBuffer per
/// matmulParams entry and checks them (matmulSizesOf).
using MatmulCpuKernel = HostKernel<matmul::MatmulSpec, HostBuffer>;
extern template class HostKernel<matmul::MatmulSpec, HostBuffer>;
llvm::Expected<std::unique_ptr<MatmulCpuKernel>>
compileMatmulForCpu(const matmul::MatmulSpec &spec);

} // namespace lowbit::compiler

#endif // LOWBIT_RUNTIME_COMPILER_MATMULCOMPILER_H
