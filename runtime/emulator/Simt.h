//===- Simt.h - Run GPU kernels on the CPU with CUDA's semantics -*- C++
//-*-===//
//
// The MLIR-free half of the GPU emulator (docs/emulator.md). The MLIR half
// (lowering/GpuEmulator.h) turns the kernels as they leave the GPU tail into
// host code whose NVVM ops are calls to the functions runtimeSymbols()
// lists (their codes: lowering/GpuEmulatorAbi.h); this file runs them:
//
//   - every block of the grid, one after another, in a fixed shuffled order;
//   - every thread of a block as a fiber (its own stack); a barrier or a
//     warp-synchronous op (shfl/vote/redux/bar.warp.sync/mma.sync/ldmatrix)
//     switches fibers;
//   - cp.async copies land at the issuing thread's cp.async.wait_group that
//     completes them; an access to their destination before is an error;
//   - a barrier that not every thread of the block reaches, a warp op whose
//     member mask names an exited, missing or disagreeing lane, an access
//     outside the launch's buffers, shared memory, module globals and the
//     thread's stack, a misaligned access, or a store to an input buffer
//     stops the launch with an error naming the thread and the op;
//   - optionally, two threads touching the same shared-memory byte between
//     two barriers, one of them writing, is reported as a race.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_EMULATOR_SIMT_H
#define LOWBIT_RUNTIME_EMULATOR_SIMT_H

#include "lowbit/Expected.h"
#include "lowering/GpuEmulatorAbi.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lowbit::emulator {

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  uint64_t count() const { return uint64_t(x) * y * z; }
};

struct KernelLaunch {
  std::string name;
  KernelEntry entry = nullptr;
  Dim3 grid, block;
  /// Static shared memory (the kernel's addrspace(3) globals) and the
  /// offset where dynamic shared memory starts.
  size_t staticSharedBytes = 0;
  size_t dynamicSharedOffset = 0;
  size_t dynamicSharedBytes = 0;
  void **parameters = nullptr;
};

struct EmulatorOptions {
  /// Report two threads' conflicting shared-memory accesses between two
  /// barriers.
  bool detectSharedRaces = true;
};

struct EmulatorStats {
  uint64_t launches = 0, blocks = 0, threads = 0, fiberSwitches = 0;
  uint64_t barriers = 0, warpOps = 0, checkedAccesses = 0;
};

/// Runs launches one at a time. Not thread-safe: use one per OS thread.
class Device {
public:
  explicit Device(EmulatorOptions options = {});
  ~Device();
  Device(const Device &) = delete;
  Device &operator=(const Device &) = delete;

  /// Memory every launch may use (module globals); kept until cleared.
  void setModuleMemory(std::vector<MemoryRange> ranges);
  /// Runs one launch over `buffers` (the launch's global memory). Errors:
  /// InvalidArgument for a bad configuration, Unsupported for a violation
  /// of CUDA's rules or the kernel ABI (the message names thread and op).
  Status launch(const KernelLaunch &launch,
                std::span<const MemoryRange> buffers);

  const EmulatorStats &stats() const;

  struct Impl;

private:
  std::unique_ptr<Impl> impl;
};

/// The runtime functions the rewritten kernels call, by symbol name (for
/// lowbit::compileForEmulator).
std::span<const RuntimeSymbol> runtimeSymbols();

} // namespace lowbit::emulator

#endif // LOWBIT_RUNTIME_EMULATOR_SIMT_H
