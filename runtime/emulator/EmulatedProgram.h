//===- EmulatedProgram.h - A spec's GPU launches, run on the CPU -*- C++
//-*-===//
//
// The launcher of the GPU emulator (docs/emulator.md). It compiles a spec
// the way the GPU JIT does (build, lowbit-to-loops, the GPU tail's
// lowerToNvvm), derives the launch plan with the JIT's own code
// (compiler::describeGpuLaunches) and evaluates it per call with the JIT's own
// packing (jit::resolveLaunch), so a wrong plan fails here as it would on
// the GPU. The kernels run on an emulator::Device.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_EMULATOR_EMULATEDPROGRAM_H
#define LOWBIT_RUNTIME_EMULATOR_EMULATEDPROGRAM_H

#include "lowbit/Expected.h"
#include "runtime/emulator/Simt.h"
#include "runtime/jit/LaunchPlan.h"
#include "runtime/spec/KernelSpec.h"
#include "target/Target.h"

#include "llvm/Support/Error.h"

#include <array>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mlir {
class ModuleOp;
} // namespace mlir

namespace lowbit {
class EmulatedModule;
namespace compiler {
struct GpuCompilation;
} // namespace compiler
} // namespace lowbit

namespace lowbit::emulator {

/// One kernel parameter's host buffer: rows x cols elements, row-major.
struct EmulatorBuffer {
  void *data = nullptr;
  int64_t rows = 0, cols = 0;
  size_t elementBytes = 1;
  /// False for the kernel's inputs: a store to one is an error.
  bool writable = true;
  std::string name;
};

/// Edits the module after lowerToNvvm (the broken-kernel tests).
using ModuleMutation = std::function<void(mlir::ModuleOp)>;

/// The one GPU compile (compiler::compileModuleForGpu) of `module` up to
/// NVVM: `lowerToLoops` first (none: the module is at the loops level),
/// then the kernels edited by `mutate` and compiled for the emulator into
/// `loaded`. The result carries the launch plan and the workspace words.
/// EmulatedProgram's entries and the KV tests' emulated kernels use it.
llvm::Expected<compiler::GpuCompilation> compileForEmulation(
    mlir::ModuleOp module, llvm::Error (*lowerToLoops)(mlir::ModuleOp),
    const Target &target, std::unique_ptr<EmulatedModule> &loaded,
    const ModuleMutation &mutate = {});

/// A host buffer and its [rows, cols] shape.
struct ShapedBuffer {
  void *data = nullptr;
  int64_t rows = 0, cols = 0;
};

/// Runs one resolved launch of `module`'s kernel `kernelName`: grid x y z,
/// block x y z and dynamic shared bytes in `sizes` (each must fit
/// cuLaunchKernel's unsigned int), `values` the parameters as
/// cuLaunchKernel reads them (one 64-bit slot each), over `buffers`.
Status launchKernel(Device &device, const EmulatedModule &module,
                    const std::string &kernelName,
                    const std::array<int64_t, 7> &sizes,
                    std::vector<uint64_t> &values,
                    std::span<const MemoryRange> buffers);

class EmulatedProgram {
public:
  ~EmulatedProgram();

  /// `spec`'s kernels for the NVIDIA `target`.
  static Expected<std::unique_ptr<EmulatedProgram>>
  compile(const KernelSpec &spec, const Target &target,
          const ModuleMutation &mutate = {});
  /// A module in MLIR text holding a host function @kernel that launches
  /// kernels of a gpu.module (gpu dialect), lowered by the same lowerToNvvm:
  /// hand-written kernels for tests.
  static Expected<std::unique_ptr<EmulatedProgram>>
  compileText(std::string_view text, const Target &target,
              const ModuleMutation &mutate = {});

  /// Runs every launch of the plan, in order, over `buffers` (ABI order).
  Status run(Device &device, std::span<const EmulatorBuffer> buffers) const;
  /// For a spec: one buffer per kernel parameter (docs/kernel-abi.md
  /// order) with its shape; element sizes and which buffers are inputs come
  /// from the spec. When the kernels take a workspace, runSpec passes a
  /// zeroed one after them, sized for the call (workspaceWordsFor), and
  /// fails the run if any of its fixed words is not zero again after the
  /// last launch.
  Status runSpec(Device &device, std::span<const ShapedBuffer> buffers) const;

  const jit::LaunchPlan &plan() const { return launchPlan; }
  /// The workspace words the compile gave (docs/kernel-abi.md); 0: none.
  /// For a workspace that grows with X, its fixed words.
  int64_t workspaceWords() const;
  /// The workspace words a call whose parameter 0 (X) is [rows, cols]
  /// takes (workspace_abi::wordsFor); -1 past the ABI's limit.
  int64_t workspaceWordsFor(int64_t rows, int64_t cols) const;
  /// The leading workspace words that are zero before the first launch and
  /// after the last (workspace_abi::zeroedWords).
  int64_t workspaceZeroedWords() const;

  struct State;

private:
  EmulatedProgram();
  std::unique_ptr<State> state;
  jit::LaunchPlan launchPlan;
};

} // namespace lowbit::emulator

#endif // LOWBIT_RUNTIME_EMULATOR_EMULATEDPROGRAM_H
