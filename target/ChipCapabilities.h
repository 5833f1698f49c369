//===- ChipCapabilities.h - What each chip has ------------------*- C++ -*-===//
//
// Per chip of target/Target.h's table: which tensor-core instructions it
// has (mma.sync shapes, wgmma, tcgen05, the block-scaled mma), at which
// PTX version, and its per-SM and per-block limits (a view of
// target/ChipTable.h's row, where each limit's source is). The cvt
// instructions are target/NativeConversionTable.h's rows, with the same
// requirement type. Plain C++, no MLIR: the lowering asks before it emits
// an instruction.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TARGET_CHIPCAPABILITIES_H
#define LOWBIT_TARGET_CHIPCAPABILITIES_H

#include "target/Target.h"

#include <optional>
#include <string_view>
#include <vector>

namespace lowbit {

/// Which chips have an instruction, at which PTX version.
struct ChipRequirement {
  unsigned minSmVersion = 0;
  /// Only the arch- or family-specific feature sets (sm_100a, sm_100f).
  bool needsAcceleratedFeatures = false;
  unsigned minPtxVersion = 0;
  /// When set, only this chip (the sm version and feature set alone do not
  /// decide: sm_101a is arch-specific Blackwell and lacks the FP4 cvt).
  std::string_view chip = {};
  /// When set, the newest PTX version that has it on the chip (LLVM 22
  /// gives sm_101a no tcgen05 at PTX 9.0, where the chip became sm_110a).
  unsigned maxPtxVersion = 0;
};

/// Whether `target` (an NVIDIA chip and PTX version) meets one of
/// `anyOf`; false for the CPU and unknown chips.
bool targetMeetsAny(const Target &target,
                    const std::vector<ChipRequirement> &anyOf);

/// The tensor-core instruction families the lowering may emit.
enum class TensorInstruction {
  MmaSyncF16,        ///< mma.sync m16n8k16 f16/bf16 x f16/bf16 -> f32
  MmaSyncS8,         ///< mma.sync m16n8k32 s8 x s8 -> s32
  MmaSyncF8,         ///< mma.sync m16n8k32 e4m3/e5m2 -> f32
  MmaSyncBlockScale, ///< mma.sync kind::mxf8f6f4 (and mxf4, mxf4nvf4)
                     ///< .block_scale
  Wgmma,             ///< wgmma.mma_async (warpgroup)
  Tcgen05,           ///< tcgen05.mma (tensor memory), .block_scale kinds
};

struct TensorInstructionInfo {
  TensorInstruction instruction;
  std::string_view ptxMnemonic; ///< for docs, the CLI and tests
  std::vector<ChipRequirement> anyOf;
};

/// Every tensor-core instruction family, with its requirements.
const std::vector<TensorInstructionInfo> &tensorInstructionTable();

/// Whether `target` has `instruction`.
bool targetHas(const Target &target, TensorInstruction instruction);

/// Per-SM and per-block limits of one chip (ChipTable.h's row, without the
/// sources).
struct ChipResources {
  int registersPerSm = 0;         ///< 32-bit registers
  int registerAllocationUnit = 0; ///< registers, allocated per warp
  int maxRegistersPerThread = 0;
  int maxThreadsPerSm = 0;
  int maxThreadsPerBlock = 0;
  int maxBlocksPerSm = 0;
  int sharedBytesPerSm = 0;
  int maxSharedBytesPerBlock = 0; ///< dynamic, after the opt-in
  int staticSharedBytesPerBlock = 0;
};

/// The limits of `chip`'s compute capability; nullopt for a chip whose
/// limits lowbit does not record (sm_87, sm_101a, sm_121a).
std::optional<ChipResources> chipResources(const ChipInfo &chip);

} // namespace lowbit

#endif // LOWBIT_TARGET_CHIPCAPABILITIES_H
