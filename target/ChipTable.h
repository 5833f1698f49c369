//===- ChipTable.h - One row of limits and rates per chip -------*- C++ -*-===//
//
// The one table of what each NVIDIA chip lowbit compiles for can hold and
// how fast it runs: per-block and per-SM limits (registers, threads,
// blocks, shared memory), the device's SMs, DRAM bandwidth and clock, and
// the issue rates and costs the static report's model uses. Each value
// carries its source: an NVIDIA document or source file, a published
// microbenchmark, a third-party page that quotes one, or ASSUMED with the
// reason. The lowering and the emulator read the limits, the report reads
// every value and prints the assumed ones its estimate rests on
// (docs/gpu-report.md, "Chip constants and their sources"). Plain C++.
//
// Which instructions a chip has (cvt, mma, wgmma, tcgen05) is a different
// question, answered per PTX version: ChipCapabilities.h.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TARGET_CHIPTABLE_H
#define LOWBIT_TARGET_CHIPTABLE_H

#include "target/Target.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace lowbit {

/// One constant and where it comes from.
struct Sourced {
  double value = 0;
  std::string_view source;
  /// No document or measurement gives it: the model's own assumption.
  bool assumed = false;
};

/// The per-block limits every chip shares (NVIDIA CCCL's
/// arch_common_traits): what a kernel may use without knowing its chip.
inline constexpr int64_t kMaxThreadsPerBlock = 1024;
/// Static shared memory of one block; more needs the dynamic opt-in.
inline constexpr int64_t kStaticSharedBytesPerBlock = 48 * 1024;

/// One chip's row. A row whose `device` is empty records the compute
/// capability's limits only: no part's SM count, bandwidth or clock.
struct ChipConstants {
  std::string_view chip;   ///< "sm_90a": the name docs and the report use
  unsigned smVersion = 0;  ///< 90: the chips of Target.h that read this row
  std::string_view device; ///< the part the per-device numbers are of
  // The device.
  Sourced smCount, hbmBytesPerSecond, clockHz;
  /// DRAM latency under load (Little's law: bytes in flight / latency).
  Sourced memoryLatencySeconds;
  // Per SM (compute capability).
  Sourced registersPerSm, maxThreadsPerSm, maxBlocksPerSm, sharedBytesPerSm;
  /// Registers are allocated per warp in units of this many.
  Sourced registerAllocationUnit;
  // Per block and thread (compute capability).
  Sourced maxRegistersPerThread, maxThreadsPerBlock;
  /// Static shared memory, and all of it after the dynamic opt-in (the SM's
  /// less the 1 KB the driver reserves per block).
  Sourced staticSharedBytesPerBlock, maxSharedBytesPerBlock;
  /// Warp instructions one SM dispatches per clock (one per scheduler).
  Sourced issuePerSmPerClock;
  /// Lanes per SM per clock of each pipe (a warp instruction of a pipe
  /// with L lanes takes 32 / L clocks of it).
  Sourced fp32LanesPerClock, mufuLanesPerClock, int32LanesPerClock;
  /// The dense tensor peak per operand kind of mma.sync (MmaKind; f32
  /// accumulators, s32 for s8), in multiply-adds per clock per SM; 0 where
  /// the chip has no mma.sync of the kind.
  Sourced tensorF16MacsPerClock, tensorFp8MacsPerClock, tensorS8MacsPerClock,
      tensorFp4MacsPerClock;
  /// The share of that peak mma.sync reaches: 1 where it is the chip's only
  /// tensor-core instruction.
  Sourced mmaSyncShareOfPeak;
  /// 128-byte L1 wavefronts one SM serves per clock.
  Sourced l1WavefrontsPerClock;
  /// Cost of one launch in a stream beyond its own work.
  Sourced launchOverheadSeconds;
  /// One atomic on a single contended word, serialized in L2.
  Sourced contendedAtomicSeconds;
  /// Results per SM per clock of the conversion pipe (F2F, F2I, I2F, I2I:
  /// the programming guide's "all other type conversions").
  Sourced conversionLanesPerClock;

  bool hasDevice() const { return !device.empty(); }
};

/// The operand kinds of mma.sync the table gives a rate for.
enum class MmaKind {
  F16,            ///< f16 or bf16 operands
  Fp8,            ///< e4m3 or e5m2
  S8,             ///< s8 or u8
  Fp4BlockScaled, ///< e2m1 with ue4m3 / ue8m0 block scales (sm_120a)
};

/// "f16/bf16", "e4m3/e5m2", "s8", "block-scaled e2m1".
std::string_view mmaKindName(MmaKind kind);
/// The row's dense tensor peak of `kind` (ChipConstants::tensor*MacsPerClock).
const Sourced &tensorMacsPerClock(const ChipConstants &row, MmaKind kind);
/// Multiply-adds per clock per SM mma.sync of `kind` completes: the peak
/// times mmaSyncShareOfPeak (0 where the chip has none of the kind).
double mmaSyncMacsPerClock(const ChipConstants &row, MmaKind kind);

/// Every row, in ascending sm version: sm_80 (A100), sm_86, sm_89 (L40S),
/// sm_90a (H200), sm_100a (B200), sm_103a, sm_120a (RTX 5090).
const std::vector<ChipConstants> &chipTable();

/// The row of `chip`'s compute capability (Target.h's sm version: sm_90,
/// sm_90a share a row, so do sm_100, sm_100a and sm_100f); nullptr for a
/// chip lowbit records nothing of (sm_87, sm_101a, sm_121a).
const ChipConstants *chipConstants(const ChipInfo &chip);
/// The same by name; nullptr for an unknown name too.
const ChipConstants *chipConstants(std::string_view chip);

/// The row of a part by its device name ("H200 SXM", "H100 SXM"): the
/// rows above, and parts of a compute capability whose row names another
/// part (H100 SXM shares sm_90a with the H200 row). The report's default
/// chips stay the rows above; the calibration on published kernels
/// (docs/gpu-report.md, "Calibration") names the part it was measured on.
/// nullptr for a part the table does not hold.
const ChipConstants *partConstants(std::string_view device);

/// The most shared memory one block of any recorded chip may take (after
/// the opt-in): what a launch that names no chip may ask for at most.
int64_t largestSharedBytesPerBlock();

} // namespace lowbit

#endif // LOWBIT_TARGET_CHIPTABLE_H
