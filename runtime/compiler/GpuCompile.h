//===- GpuCompile.h - One GPU compile: PTX, plan, workspace -----*- C++ -*-===//
//
// The one function every GPU consumer compiles through: compiler::
// compileToPtx, the JIT's build (runtime/jit/GpuBuild.cpp), `lowbit
// compile`'s stage dumps, the GPU emulator, and the KV, KIVI and
// decode-attention compilers. It runs the kernel family's lowering to the
// loops level, the GPU tail (lowering/GpuTail.h) to NVVM, NVPTX codegen,
// and reads off the lowered module everything a consumer needs, once: the
// launch plan and the workspace size (docs/pipeline.md, "One compile").
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_COMPILER_GPUCOMPILE_H
#define LOWBIT_RUNTIME_COMPILER_GPUCOMPILE_H

#include "lowering/GpuTail.h"
#include "runtime/aot/LaunchProgram.h"
#include "target/Target.h"
#include "target/WorkspaceRows.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace lowbit::compiler {

/// What one GPU compile gives.
struct GpuCompilation {
  /// The PTX of every kernel (empty when the compile stopped before it).
  std::string ptx;
  /// The kernels in `ptx`, in launch order.
  std::vector<std::string> kernelNames;
  /// The LLVM level whose PTX `ptx` is (kPtxOptLevel for lowbit's list).
  int optLevel = kPtxOptLevel;
  /// How to launch them: the host function's gpu.launch_func ops, sizes
  /// as expressions of the parameters' sizes (runtime/aot/LaunchProgram.h).
  launch::LaunchPlan plan;
  /// 32-bit words of the workspace the kernels take after the ABI's
  /// parameters (docs/kernel-abi.md, "Workspace"); 0: none.
  int64_t workspaceWords = 0;
  /// The part of it that grows with X (parameter 0) at each call; none for
  /// a fixed size (workspace_abi::wordsFor gives a call's words).
  workspace_abi::RowWords workspaceRows = {};
};

/// The stages of a GPU compile, in order.
enum class GpuStage {
  Loops, ///< the family's lowering: gpu.launch and scf loops
  Nvvm,  ///< the GPU tail: kernels in NVVM, launches in the host function
  Ptx,   ///< NVPTX codegen
  Plan,  ///< the launch plan read off the host function
};

struct GpuCompileOptions {
  PtxOptions ptx;
  /// The last stage to run. Nvvm: the module the GPU emulator executes
  /// (the plan is still read); Loops: the GPU tail's input.
  GpuStage last = GpuStage::Plan;
  /// Sees the module after each stage that ran; an error it returns ends
  /// the compile with that error. (Stage dumps, the emulator's module
  /// edits and load, phase timing.)
  std::function<llvm::Error(GpuStage, mlir::ModuleOp)> observe;
};

/// A kernel family's lowering from the lowbit dialect to the GPU tail's
/// input (compiler::lowerForGpu for quantize and dequantize).
using GpuLoopsLowering = llvm::Error (*)(mlir::ModuleOp);

/// Compiles `module` (modified in place) for the NVIDIA `target`:
/// `lowerToLoops` (none: the module is at the loops level already), the
/// GPU tail, PTX, the plan, up to `options.last`. Errors carry the failing
/// step's message (the context's diagnostics where it gave none).
llvm::Expected<GpuCompilation>
compileModuleForGpu(mlir::ModuleOp module, GpuLoopsLowering lowerToLoops,
                    const Target &target,
                    const GpuCompileOptions &options = {});

/// The launch plan of a module after the GPU tail: lower-affine on its
/// host function @kernel, then its gpu.launch_func ops. A host function
/// it cannot describe gives a plan whose `unsupported` says why.
launch::LaunchPlan describeGpuLaunches(mlir::ModuleOp module);

/// The workspace words of a module after lowerForGpu (or the GPU tail).
int64_t workspaceWordsOf(mlir::ModuleOp module);

} // namespace lowbit::compiler

#endif // LOWBIT_RUNTIME_COMPILER_GPUCOMPILE_H
