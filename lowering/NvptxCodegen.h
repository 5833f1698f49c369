//===- NvptxCodegen.h - LLVM IR -> PTX: pooled machines, lowbit's passes -===//
//
// The GPU tail's LLVM half (lowering/GpuTail.cpp's serializer uses it):
//
//  - NVPTX TargetMachines are lent from a process-wide pool, one kind per
//    (chip, features), instead of being created for every compile;
//  - LLVM's middle end runs lowbit's own pass list (kPtxPassList), the
//    passes of O3's pipeline that change the PTX of lowbit's kernels,
//    instead of O3's whole pipeline. tests/gpu/OptLevelTest.cpp checks
//    that every named kernel and the KV/attention kernels get O3's PTX
//    byte for byte; docs/pipeline.md says how the list was found.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_NVPTXCODEGEN_H
#define LOWBIT_LOWERING_NVPTXCODEGEN_H

#include "llvm/ADT/StringRef.h"

#include <memory>
#include <optional>
#include <string>

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace lowbit {

/// The codegen level of lowbit's TargetMachines: O2's, where
/// gpu-module-to-binary's O=3 sets O3's. O3 adds GVN to codegen's IR passes
/// (EarlyCSE at O2): 9% of a W4A16 matmul's compile, for the same registers
/// and no more SASS instructions in the kernels whose PTX it changes
/// (docs/pipeline.md).
constexpr int kPtxCodegenLevel = 2;

/// An NVPTX TargetMachine for one (chip, features), at kPtxCodegenLevel,
/// lent from a process-wide pool
/// and given back when the lease dies. A lease is one thread's alone;
/// concurrent compiles get different machines (a new one when none is
/// idle). Reusing a machine gives the same PTX as a new one (the pool is
/// checked against new machines by tests/gpu/OptLevelTest.cpp).
class NvptxMachineLease {
public:
  NvptxMachineLease(std::string key,
                    std::unique_ptr<llvm::TargetMachine> machine);
  NvptxMachineLease(NvptxMachineLease &&) noexcept;
  NvptxMachineLease &operator=(NvptxMachineLease &&) = delete;
  ~NvptxMachineLease();

  llvm::TargetMachine &operator*() const { return *machine; }
  llvm::TargetMachine *operator->() const { return machine.get(); }

private:
  std::string key;
  std::unique_ptr<llvm::TargetMachine> machine;
};

/// Borrows a machine for `chip` and `features` (e.g. "+ptx81"); nullopt
/// with a message when LLVM has no NVPTX target. The NVPTX target must be
/// initialized (NVVM::SerializeGPUModuleBase::init()), and the chip and
/// features validated (LLVM aborts on some bad pairs: lowering/Target.h).
std::optional<NvptxMachineLease> borrowNvptxMachine(llvm::StringRef chip,
                                                    llvm::StringRef features,
                                                    std::string &error);

/// The machines idle in the pool now (for tests).
size_t idleNvptxMachines();

/// lowbit's LLVM pass list, in LLVM's pass pipeline syntax: the passes of
/// LLVM 22's O3 module pipeline whose removal changes the PTX of some
/// lowbit kernel, in O3's order, with O3's options.
extern const char *const kPtxPassList;

/// Runs kPtxPassList on `module` with `machine`'s target analyses.
/// False with a message if LLVM rejects the list.
bool optimizeForPtx(llvm::Module &module, llvm::TargetMachine &machine,
                    std::string &error);

} // namespace lowbit

#endif // LOWBIT_LOWERING_NVPTXCODEGEN_H
