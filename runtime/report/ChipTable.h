//===- ChipTable.h - Every constant of the report's chip model --*- C++ -*-===//
//
// One table, one row per NVIDIA target lowbit compiles for, each constant
// with its source: an NVIDIA document, a published microbenchmark, a
// third-party page that quotes one, or ASSUMED with the reason. The report
// prints the assumed constants its estimate rests on (docs/gpu-report.md,
// "Chip constants and their sources"). MLIR-free.
//
// It belongs with the per-chip capabilities of the MLIR-free target/
// directory once that exists; until then it lives beside its only user.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_REPORT_CHIPTABLE_H
#define LOWBIT_RUNTIME_REPORT_CHIPTABLE_H

#include <string>
#include <string_view>
#include <vector>

namespace lowbit::report {

/// One constant and where it comes from.
struct Sourced {
  double value = 0;
  std::string_view source;
  /// No document or measurement gives it: the model's own assumption.
  bool assumed = false;
};

struct ChipConstants {
  std::string_view chip;   ///< "sm_90a"
  std::string_view device; ///< the part the per-device numbers are of
  // The device.
  Sourced smCount, hbmBytesPerSecond, clockHz;
  /// DRAM latency under load (Little's law: bytes in flight / latency).
  Sourced memoryLatencySeconds;
  // Per SM (compute capability).
  Sourced registersPerSm, maxThreadsPerSm, maxBlocksPerSm, sharedBytesPerSm;
  /// Registers are allocated per warp in units of this many.
  Sourced registerAllocationUnit;
  /// Warp instructions one SM dispatches per clock (one per scheduler).
  Sourced issuePerSmPerClock;
  /// Lanes per SM per clock of each pipe (a warp instruction of a pipe
  /// with L lanes takes 32 / L clocks of it).
  Sourced fp32LanesPerClock, mufuLanesPerClock, int32LanesPerClock;
  /// Issue slots of a sub-partition one mma.sync m16n8k16 f16 -> f32 takes.
  Sourced mmaSyncIssueSlots;
  /// 128-byte L1 wavefronts one SM serves per clock.
  Sourced l1WavefrontsPerClock;
  /// Cost of one launch in a stream beyond its own work.
  Sourced launchOverheadSeconds;
  /// One atomic on a single contended word, serialized in L2.
  Sourced contendedAtomicSeconds;
};

/// The five targets: sm_80, sm_89, sm_90a, sm_100a, sm_120a.
const std::vector<ChipConstants> &chipTable();

/// The row of `chip`; "sm_90" reads sm_90a's, "sm_100" sm_100a's, "sm_120"
/// sm_120a's. nullptr for any other chip.
const ChipConstants *chipConstants(std::string_view chip);

} // namespace lowbit::report

#endif // LOWBIT_RUNTIME_REPORT_CHIPTABLE_H
