//===- CpuTail.h - Loops -> LLVM dialect -> host JIT ------------*- C++ -*-===//
//
// The CPU target tail. It takes a module after lowbit-to-loops (memrefs,
// scf, arith, math, lowbit.encode/decode), expands the codecs, lowers to
// the LLVM dialect and JIT-compiles it with ORC (HostExecutable, which
// the GPU emulator's host code uses too). The heavy headers (ORC, LLVM
// dialect, conversion passes) stay in CpuTail.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_CPUTAIL_H
#define LOWBIT_LOWERING_CPUTAIL_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace mlir {
class DialectRegistry;
class OpPassManager;
} // namespace mlir
namespace llvm::orc {
class LLJIT;
} // namespace llvm::orc

namespace lowbit {

/// The dialects and LLVM IR translations the CPU tail needs.
void registerCpuTailDialects(mlir::DialectRegistry &registry);

/// The CPU tail's passes, in order (registered as lowbit-cpu-tail,
/// lowering/Pipelines.h): lowerLoopsToLlvm runs them, and
/// cpuTailPipelineText prints them for the kernel cache key.
void buildCpuTailPipeline(mlir::OpPassManager &pm);

/// Lowers a loops-level module to the LLVM dialect in place:
/// lowbit-expand-codecs, scf -> cf, bf16 arith expansion, then arith, math,
/// memref, func and cf to LLVM, and cast reconciliation.
llvm::Error lowerLoopsToLlvm(mlir::ModuleOp module);

/// The CPU tail's pass pipeline as text (what lowerLoopsToLlvm runs), for
/// the kernel cache key.
std::string cpuTailPipelineText();

/// LLVM IR text of an LLVM-dialect module.
llvm::Expected<std::string> translateToLlvmIr(mlir::ModuleOp module);

/// A function or variable the JIT'd code refers to that the process does
/// not export (the GPU emulator's SIMT runtime).
struct HostSymbol {
  std::string name;
  void *address = nullptr;
};

/// How makeHostExecutable compiles a module.
struct HostJitOptions {
  /// The LLVM IR optimization level: 3 for the CPU kernels; the GPU
  /// emulator's kernels, whose run time is its runtime calls, take 1 to
  /// compile faster.
  unsigned optLevel = 3;
  /// Defined before the process's own symbols are searched.
  std::vector<HostSymbol> symbols;
  /// The `_mlir_<name>` packed wrappers invoke() calls; a module only
  /// looked up by address (the emulator's) needs none.
  bool packedWrappers = true;
};

/// A JIT-compiled LLVM-dialect module. Its ORC LLJIT has no platform
/// (the module has no global constructors or destructors), so destroying
/// one compiles and runs nothing: safe at any time, after main returns
/// too, when LLVM's own statics are gone (docs/runtime.md, "Destroying a
/// Jit").
class HostExecutable {
public:
  ~HostExecutable();
  /// Calls the C interface wrapper `_mlir_ciface_<name>` of a function
  /// marked `llvm.emit_c_interface`; `args[i]` points at the i-th argument
  /// (for a memref: at a pointer to its descriptor).
  llvm::Error invoke(llvm::StringRef name, llvm::MutableArrayRef<void *> args);
  /// The address of the function or global `name` (the module is compiled
  /// by the first lookup).
  llvm::Expected<void *> address(llvm::StringRef name);

private:
  friend llvm::Expected<std::unique_ptr<HostExecutable>>
  makeHostExecutable(mlir::ModuleOp, const HostJitOptions &);
  HostExecutable() = default;
  std::unique_ptr<llvm::orc::LLJIT> jit;
};

/// JIT-compiles an LLVM-dialect module for the host (-O3 unless `options`
/// say otherwise). No perf jitdump and no gdb registration unless
/// LOWBIT_JIT_PERF=1 / LOWBIT_JIT_GDB=1. The one way lowbit JIT-compiles
/// host code: the CPU tail's kernels and the GPU emulator's.
llvm::Expected<std::unique_ptr<HostExecutable>>
makeHostExecutable(mlir::ModuleOp module, const HostJitOptions &options = {});

} // namespace lowbit

#endif // LOWBIT_LOWERING_CPUTAIL_H
