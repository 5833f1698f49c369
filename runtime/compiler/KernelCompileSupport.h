//===- KernelCompileSupport.h - Shared steps of the kernel compilers -----===//
//
// The KV, KIVI and decode-attention compilers each build a module from their
// spec, run their own lowering passes, then finish through one of the two
// tails. The steps they share live here, so their error messages and their
// diagnostics handling are the same.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_COMPILER_KERNELCOMPILESUPPORT_H
#define LOWBIT_RUNTIME_COMPILER_KERNELCOMPILESUPPORT_H

#include "kv/KvKernelSpec.h"
#include "lowering/CpuTail.h"
#include "lowering/GpuTail.h"
#include "runtime/compiler/GpuCompile.h"
#include "runtime/compiler/KvKernelSignature.h"
#include "target/Target.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Pass/Pass.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace lowbit::compiler {

llvm::Error compileError(const std::string &message);

/// The context's diagnostics, joined by newlines, collected while alive.
class DiagnosticText {
public:
  explicit DiagnosticText(mlir::MLIRContext &context);
  DiagnosticText(const DiagnosticText &) = delete;
  DiagnosticText &operator=(const DiagnosticText &) = delete;
  const std::string &str() const { return text; }

private:
  std::string text;
  mlir::ScopedDiagnosticHandler handler;
};

using PassFactory = std::unique_ptr<mlir::Pass> (*)();

/// Runs `passes` in order (with the verifier as configureVerifier sets it);
/// on failure "WHAT failed: " and the diagnostics.
llvm::Error runLoweringPasses(mlir::ModuleOp module,
                              llvm::ArrayRef<PassFactory> passes,
                              const std::string &what);

/// `module` as MLIR text (the compilers' loops- and GPU-level dumps).
std::string moduleText(mlir::ModuleOp module);

/// A module already lowered to loops, through the CPU tail to a loaded
/// executable.
llvm::Expected<std::unique_ptr<HostExecutable>>
loopsModuleToHost(mlir::ModuleOp module);

/// The MLIR element type of a KV value type (f16, bf16, f32).
mlir::Type kvElementType(mlir::Builder &b, kv::KvValueType type);

/// The memref type of a signature parameter: its element type, its static
/// sizes, every CallDim dynamic.
mlir::MemRefType memrefTypeOf(mlir::Builder &b, const KvKernelParam &param);

/// A verified module holding one function @kernel (C interface) whose
/// parameters are `params`' memrefs; `body` writes its ops from the
/// arguments (the return is added). `what` names the kernel in the error.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
buildSignatureModule(mlir::MLIRContext &context,
                     const std::vector<KvKernelParam> &params,
                     llvm::function_ref<void(mlir::OpBuilder &, mlir::Location,
                                             mlir::ValueRange)>
                         body,
                     const std::string &what);

/// `module` after `lower` ran on it, or the first error.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
lowerModule(llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>> module,
            llvm::Error (*lower)(mlir::ModuleOp));

/// Makes a module at the loops stage in the context it is given.
using LoopsModuleBuilder =
    llvm::function_ref<llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>(
        mlir::MLIRContext &)>;

/// `build`'s module, in a borrowed context, through the CPU tail.
llvm::Expected<std::unique_ptr<HostExecutable>>
loopsToHost(LoopsModuleBuilder build);

/// `build`'s module, in a borrowed context, through the one GPU compile
/// (runtime/compiler/GpuCompile.h) for the NVIDIA `target`; `entry` names
/// the caller in the error.
llvm::Expected<GpuCompilation> loopsToGpu(LoopsModuleBuilder build,
                                          const Target &target,
                                          const PtxOptions &options,
                                          const std::string &entry);

} // namespace lowbit::compiler

#endif // LOWBIT_RUNTIME_COMPILER_KERNELCOMPILESUPPORT_H
