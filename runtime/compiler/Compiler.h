//===- Compiler.h - Kernel spec -> MLIR -> loops -> host code -----*- C++
//-*-===//
//
// The compile entry point. A KernelSpec becomes an MLIR module with one
// kernel function in the lowbit dialect (the form of kernels_spec/), is
// lowered to loops (lowbit-to-loops), and then goes to a target tail: the
// CPU tail here (lowering/CpuTail.h), or the GPU tail (lowering/GpuTail.h).
// The kernel ABI is in docs/kernel-abi.md.
//
// Errors are values: a scheme or shape the verifier refuses comes back as
// an llvm::Error carrying the verifier's message. Nothing here aborts.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_COMPILER_COMPILER_H
#define LOWBIT_RUNTIME_COMPILER_COMPILER_H

#include "lowering/GpuTail.h"
#include "runtime/compiler/GpuCompile.h"
#include "runtime/spec/KernelAbi.h"
#include "runtime/spec/KernelSpec.h"
#include "target/KernelAbi.h"
#include "target/Target.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mlir {
class MLIRContext;
class DialectRegistry;
} // namespace mlir

namespace lowbit::compiler {

/// The kernel function's name in every module the compiler builds.
inline constexpr const char *kKernelName = abi::kKernelFunction;

/// Registers what the compiler's modules use (lowbit, func, arith, math,
/// memref, scf, bufferization, cf, llvm and their LLVM translations).
void registerCompilerDialects(mlir::DialectRegistry &registry);
/// A new context with those dialects registered (loaded when first used).
std::unique_ptr<mlir::MLIRContext> makeContext();

/// A context borrowed from the compiler's process-wide pool: the compile
/// functions below (and lowbit::Jit's GPU build) reuse long-lived contexts
/// instead of creating and loading one per kernel. Each lease is one
/// thread's alone until it is returned (on destruction); concurrent
/// compiles get different contexts. A context is retired after
/// kContextUses leases, because what a compile interns in it (types,
/// attributes) is never freed while it lives. docs/pipeline.md.
class ContextLease {
public:
  static constexpr unsigned kContextUses = 64;
  ContextLease(ContextLease &&other) noexcept;
  ContextLease &operator=(ContextLease &&) = delete;
  ~ContextLease();
  mlir::MLIRContext &operator*() const { return *context; }
  mlir::MLIRContext *operator->() const { return context.get(); }
  mlir::MLIRContext *get() const { return context.get(); }
  /// How many leases this context has served, this one included.
  unsigned useCount() const { return uses; }

private:
  friend ContextLease borrowContext();
  ContextLease(std::unique_ptr<mlir::MLIRContext> context, unsigned uses)
      : context(std::move(context)), uses(uses) {}
  std::unique_ptr<mlir::MLIRContext> context;
  unsigned uses;
};
ContextLease borrowContext();

/// One kernel parameter of the ABI, in order.
struct KernelParam {
  /// Workspace is never listed by kernelParams (see GpuCompilation::
  /// workspaceWords).
  using Role = KernelParamRole;
  Role role;
  bool isResult;           ///< written by the kernel
  std::string elementType; ///< "f32", "f16", "bf16", "i8"
  /// A prologue's side tensor (docs/fusion.md): "weight", "residual",
  /// "smooth" (Input role) or "residual" (Output role, the updated
  /// residual). Empty for every other parameter.
  std::string side;
};
/// The parameter list of a spec's kernel (docs/kernel-abi.md):
/// runtime/spec/KernelAbi.h with MLIR's type names.
std::vector<KernelParam> kernelParams(const KernelSpec &spec);

/// The module with one kernel function, verified.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
buildKernelModule(mlir::MLIRContext &context, const KernelSpec &spec);

/// Runs lowbit-to-loops on `module`; on failure the diagnostics are the
/// error's message.
llvm::Error lowerToLoops(mlir::ModuleOp module);

/// The GPU targets' lowerToLoops: lowbit-to-gpu maps the ops it covers to
/// bandwidth-shaped gpu.launch bodies, lowbit-to-loops lowers the rest to
/// loops for the GPU tail's generic mapping (docs/gpu.md). lowerToPtx takes
/// the result.
llvm::Error lowerForGpu(mlir::ModuleOp module);

enum class Stage { Mlir, Loops, Llvm };
std::optional<Stage> parseStage(std::string_view name);

/// The text of `spec`'s kernel at `stage` for the CPU target: the lowbit
/// dialect (mlir), scf loops (loops), or LLVM IR (llvm).
llvm::Expected<std::string> emit(const KernelSpec &spec, Stage stage);

/// `spec`'s kernel compiled for an NVIDIA `target` (PTX, launch plan,
/// workspace words): buildKernelModule, then compileModuleForGpu with
/// lowerForGpu (runtime/compiler/GpuCompile.h). The GPU tail validates the
/// target first and refuses loop nests it cannot map yet.
llvm::Expected<GpuCompilation> compileToPtx(const KernelSpec &spec,
                                            const Target &target,
                                            const PtxOptions &options = {});

/// A 2-D row-major host buffer: `data` points at rows x cols elements of
/// the parameter's element type (the global scale is 1 x 1).
struct HostBuffer {
  void *data = nullptr;
  int64_t rows = 0, cols = 0;
};

/// A kernel JIT-compiled for the host CPU. run() takes one buffer per
/// kernelParams() entry, in order.
class CpuKernel {
public:
  virtual ~CpuKernel();
  virtual llvm::Error run(const std::vector<HostBuffer> &buffers) = 0;
  const KernelSpec &spec() const { return kernelSpec; }

protected:
  explicit CpuKernel(KernelSpec spec) : kernelSpec(std::move(spec)) {}
  KernelSpec kernelSpec;
};

llvm::Expected<std::unique_ptr<CpuKernel>>
compileForCpu(const KernelSpec &spec);

/// The host buffers' shapes a spec's kernel needs for a [rows, cols] tensor
/// (codesShape, scaleShape, [1, 1] for the global scale), in ABI order.
std::vector<Shape2D> bufferShapes(const KernelSpec &spec, int64_t rows,
                                  int64_t cols);

} // namespace lowbit::compiler

#endif // LOWBIT_RUNTIME_COMPILER_COMPILER_H
