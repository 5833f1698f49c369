//===- KvEmulatorRun.h - KV kernels' GPU modules in the emulator -*- C++
//-*-===//
//
// Runs a KV kernel spec's GPU module (buildKvModule, lowerKvToLoops, the GPU
// tail's lowerToNvvm) in the GPU emulator (docs/emulator.md). The launch
// plan is the JIT's own (compiler::describeGpuLaunches), and each call
// resolves it as the JIT's KV kernels and the AOT runner do
// (aot::resolveLaunchFor, an aot::RankedLaunch: `dim:P:D` is size D of buffer
// P, a memref operand MLIR's expanded rank-N descriptor), so a wrong size or
// descriptor there fails these tests too.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TESTS_KVKERNELS_KVEMULATORRUN_H
#define LOWBIT_TESTS_KVKERNELS_KVEMULATORRUN_H

#include "KvKernelTestSupport.h"

#include "kv/KvKernelSpec.h"
#include "kv/KvKiviKernelSpec.h"
#include "runtime/aot/LaunchProgram.h"
#include "runtime/compiler/KvCompiler.h"
#include "runtime/emulator/Simt.h"
#include "runtime/jit/LaunchPlan.h"
#include "target/Target.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mlir {
class MLIRContext;
} // namespace mlir

namespace lowbit {
class EmulatedModule;
} // namespace lowbit

namespace lowbit::kvtest {

class KvEmulatedKernel {
public:
  ~KvEmulatedKernel();
  /// `spec`'s GPU module for the NVIDIA `target`; "" in `error` on success.
  static std::unique_ptr<KvEmulatedKernel> compile(const kv::KvKernelSpec &spec,
                                                   const Target &target,
                                                   std::string &error);
  /// The KIVI kernel `spec`'s GPU module (runtime/compiler/KiviCompiler.h),
  /// run as the KV kernels are.
  static std::unique_ptr<KvEmulatedKernel>
  compileKivi(const kv::KiviKernelSpec &spec, const Target &target,
              std::string &error);
  /// The kernel whose module `build` makes at the loops stage (in the
  /// kernel's own context), run as the KV kernels are; `params` holds each
  /// ABI parameter's element bytes and whether the kernel writes it.
  static std::unique_ptr<KvEmulatedKernel> compileLoops(
      const std::function<llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>(
          mlir::MLIRContext &)> &build,
      std::vector<std::pair<size_t, bool>> params, const Target &target,
      std::string &error);
  /// Runs every launch of the plan over `buffers` (the KV kernel ABI,
  /// docs/kv-kernels.md); "" or the error. Only the buffers the op writes
  /// (append: codes and int8 scales; dequantize: the output) are writable.
  std::string run(emulator::Device &device,
                  const std::vector<compiler::KvBuffer> &buffers) const;
  /// Step `step` of the plan resolved for `buffers` as the JIT's KV kernels
  /// and the AOT runner resolve it (aot::resolveLaunchFor: an
  /// aot::RankedLaunch, each memref its rank-N descriptor): the seven sizes
  /// and cuLaunchKernel's parameters in `out`; "" or the error.
  std::string resolve(size_t step,
                      const std::vector<compiler::KvBuffer> &buffers,
                      launch::ResolvedStep &out) const;
  const jit::LaunchPlan &plan() const { return launchPlan; }

private:
  KvEmulatedKernel();
  /// Lowers `module` (at the loops stage) to NVVM for `target`, compiles it
  /// for the emulator and takes its launch plan; null and `error` on
  /// failure.
  static std::unique_ptr<KvEmulatedKernel>
  finish(std::unique_ptr<KvEmulatedKernel> kernel, mlir::ModuleOp module,
         const Target &target, std::string &error);
  /// Per ABI parameter: element bytes and whether the op writes it, when
  /// the kernel is not a kv_append/kv_dequantize one (else they come from
  /// `spec`).
  std::vector<std::pair<size_t, bool>> kiviParams;
  kv::KvKernelSpec spec;
  std::unique_ptr<mlir::MLIRContext> context;
  std::unique_ptr<EmulatedModule> module;
  jit::LaunchPlan launchPlan;
};

/// `spec`'s kernel for the NVIDIA target `targetName`, compiled once per
/// process (destroyed after main returns, which the emulator's JIT allows:
/// docs/emulator.md); throws with the compiler's error.
const KvEmulatedKernel &emulatedKernelFor(const kv::KvKernelSpec &spec,
                                          const std::string &targetName);

/// The emulator on `targetName` as a KvRunner.
KvRunner emulatorOn(const std::string &targetName);

} // namespace lowbit::kvtest

#endif // LOWBIT_TESTS_KVKERNELS_KVEMULATORRUN_H
