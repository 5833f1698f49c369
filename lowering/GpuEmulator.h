//===- GpuEmulator.h - GPU kernels as host code ------------------*- C++
//-*-===//
//
// The MLIR half of the GPU emulator (docs/emulator.md). It takes a module as
// it leaves the GPU tail's lowerToNvvm (lowering/GpuTail.h), clones the
// kernels of its gpu.module into a host module and rewrites what only a GPU
// has into calls to the SIMT runtime (runtime/emulator/Simt.h; the calls'
// codes are lowering/GpuEmulatorAbi.h's, so this half never includes the
// runtime):
//
//   - special registers (thread/block ids and sizes, lane id) ->
//   lowbit_emu_sreg
//   - nvvm.barrier0 / nvvm.barrier -> lowbit_emu_barrier
//   - nvvm.shfl.sync, vote.sync, redux.sync, bar.warp.sync, elect.sync
//     -> lowbit_emu_warp_op (the fiber waits for the lanes of its mask);
//     nvvm.mma.sync, the 8-bit mma intrinsics and nvvm.mma.block_scale
//     (FP4) -> lowbit_emu_mma;
//     nvvm.ldmatrix -> lowbit_emu_ldmatrix
//   - nvvm.cp.async.shared.global, cp.async.commit.group, cp.async.wait.group
//     -> lowbit_emu_cp_async*
//   - addrspace(3) globals (static and dynamic shared memory) -> per-block
//     storage (lowbit_emu_shared); every other address space -> host pointers
//   - native cvt ops -> lowbit_emu_cvt_* (the format model)
//   - every load, store and atomic outside the thread's own allocas is
//     preceded by lowbit_emu_access (bounds, alignment, input buffers,
//     shared-memory races)
//   - fences are dropped (the fibers of a launch run on one OS thread)
//
// Anything else GPU-specific (another NVVM op, inline PTX, an NVVM
// intrinsic, a call to a function that is not defined) is refused with an
// error naming it, never executed approximately. The host module is
// JIT-compiled by the CPU tail's HostExecutable (lowering/CpuTail.h): ORC
// without a platform, so an EmulatedModule may be destroyed at any time,
// after main returns too.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_GPUEMULATOR_H
#define LOWBIT_LOWERING_GPUEMULATOR_H

#include "lowering/GpuEmulatorAbi.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace lowbit {

class HostExecutable;

/// What the launcher needs to know of one kernel.
struct EmulatedKernel {
  std::string name;
  emulator::KernelEntry entry = nullptr;
  size_t staticSharedBytes = 0;
  size_t dynamicSharedOffset = 0;
};

/// The host module's layout facts, gathered while building it.
struct EmulatorModuleInfo {
  std::vector<std::string> kernelNames;
  size_t staticSharedBytes = 0;
  size_t dynamicSharedOffset = 0;
  /// Module globals other than shared memory: name -> bytes, constant.
  struct Global {
    std::string name;
    size_t bytes = 0;
    bool constant = false;
  };
  std::vector<Global> globals;
};

/// Builds the host module (LLVM dialect, no NVVM) from `gpuModule`, which is
/// not modified. Each kernel K gets an entry `lowbit_emu_entry_K(void **)`
/// taking cuLaunchKernel's parameter array.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
buildEmulatorHostModule(mlir::ModuleOp gpuModule, EmulatorModuleInfo &info);

/// The JIT-compiled kernels of one module.
class EmulatedModule {
public:
  ~EmulatedModule();
  /// nullptr if the module has no kernel of that name.
  const EmulatedKernel *kernel(const std::string &name) const;
  /// The module globals' host memory (for emulator::Device::setModuleMemory).
  const std::vector<emulator::MemoryRange> &moduleMemory() const {
    return globals;
  }

private:
  friend llvm::Expected<std::unique_ptr<EmulatedModule>>
  compileForEmulator(mlir::ModuleOp gpuModule,
                     std::span<const emulator::RuntimeSymbol> runtime);
  EmulatedModule() = default;
  std::unique_ptr<HostExecutable> executable;
  std::map<std::string, EmulatedKernel> kernels;
  std::vector<emulator::MemoryRange> globals;
};

/// buildEmulatorHostModule, then JIT-compiles it for the host, resolving
/// the lowbit_emu_* calls to `runtime` (emulator::runtimeSymbols()).
llvm::Expected<std::unique_ptr<EmulatedModule>>
compileForEmulator(mlir::ModuleOp gpuModule,
                   std::span<const emulator::RuntimeSymbol> runtime);

} // namespace lowbit

#endif // LOWBIT_LOWERING_GPUEMULATOR_H
