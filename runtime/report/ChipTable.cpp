//===- ChipTable.cpp - Every constant of the report's chip model ----------===//
//
// Sources, as found (docs/gpu-report.md has the same table for readers):
//   - per-SM limits of 9.0 and 10.0: CUDA C++ Programming Guide, "Technical
//     Specifications per Compute Capability"; of 8.0, 8.9 and 12.0: a
//     third-party reading of it where one was found, else ASSUMED;
//   - devices: NVIDIA's datasheets, as quoted by the page named;
//   - ASSUMED: no document or measurement at hand; the reason is given.
// No GPU has run lowbit's kernels yet, so none of these is a measurement.
//
//===----------------------------------------------------------------------===//

#include "runtime/report/ChipTable.h"

namespace lowbit::report {

namespace {

constexpr std::string_view kGuide =
    "CUDA C++ Programming Guide, Technical Specifications per Compute "
    "Capability";
constexpr std::string_view kAllocation =
    "CUDA Occupancy Calculator (register allocation unit)";
constexpr std::string_view kSchedulers =
    "NVIDIA architecture whitepapers: 4 SM sub-partitions, one warp "
    "scheduler each";
constexpr std::string_view kLatency =
    "ASSUMED: microbenchmarks of H100 measure 480-560 ns unloaded; loaded "
    "queues add to it (none measured for this part)";
constexpr std::string_view kMufu =
    "ASSUMED: 16 special-function lanes per SM (4 per sub-partition), as in "
    "the CUDA guide's throughput table for earlier chips";
constexpr std::string_view kInt32 =
    "ASSUMED: 64 INT32 lanes per SM (the half of the FP32/INT32 datapath "
    "that takes integers since Ampere)";
constexpr std::string_view kMma =
    "ASSUMED: half of H100's dense FP16 tensor peak (989 TFLOPS, H100 "
    "whitepaper; wgmma reaches it, mma.sync does not), 8 clocks per "
    "m16n8k16; taken for every chip";
constexpr std::string_view kL1Hopper =
    "H100 whitepaper: 33 TB/s of L1/shared bandwidth over 132 SMs at "
    "1.98 GHz = 128 B per clock per SM";
constexpr std::string_view kL1Other =
    "ASSUMED: 128 B per clock per SM, as H100's (no figure for this part)";
constexpr std::string_view kLaunch =
    "ASSUMED: back-to-back launches in one stream (not measured here)";
constexpr std::string_view kAtomic =
    "ASSUMED: one same-address atomic per L2 clock (not measured here)";

Sourced of(double value, std::string_view source) {
  return {value, source, source.starts_with("ASSUMED")};
}

/// What every row shares: the model's rates and assumptions that no
/// document gives per chip.
ChipConstants common(std::string_view chip, std::string_view device) {
  ChipConstants row;
  row.chip = chip;
  row.device = device;
  row.registersPerSm = of(65536, kGuide);
  row.registerAllocationUnit = of(256, kAllocation);
  row.issuePerSmPerClock = of(4, kSchedulers);
  row.mufuLanesPerClock = of(16, kMufu);
  row.int32LanesPerClock = of(64, kInt32);
  row.mmaSyncIssueSlots = of(8, kMma);
  row.l1WavefrontsPerClock = of(1, kL1Other);
  row.launchOverheadSeconds = of(1.5e-6, kLaunch);
  row.contendedAtomicSeconds = of(0.5e-9, kAtomic);
  return row;
}

std::vector<ChipConstants> makeTable() {
  std::vector<ChipConstants> table;

  ChipConstants a100 = common("sm_80", "A100 80GB SXM");
  a100.smCount = of(108, "NVIDIA Ampere whitepaper and A100 datasheet, as "
                         "quoted by glennklockwood.com: 108 SMs");
  a100.hbmBytesPerSecond =
      of(2.039e12, "NVIDIA A100 80GB datasheet, as quoted by "
                   "glennklockwood.com: 2,039 GB/s HBM2e");
  a100.clockHz = of(1.41e9, "A100 deviceQuery (GPU Max Clock rate 1410 MHz), "
                            "upb-pc2 wiki");
  a100.memoryLatencySeconds = of(700e-9, kLatency);
  a100.maxThreadsPerSm = of(2048, "docs.rs oxicuda-launch (third-party "
                                  "reading of the guide): 64 warps on 8.0");
  a100.maxBlocksPerSm = of(32, "ASSUMED: 32 (compute capability 8.0; no "
                               "stored copy of the guide's row read)");
  a100.sharedBytesPerSm =
      of(164 * 1024, "ASSUMED: 164 KB (compute capability 8.0; docs.rs "
                     "oxicuda-driver lists 167936 B, third-party)");
  a100.fp32LanesPerClock =
      of(64, "glennklockwood.com, from NVIDIA's A100 documents: 6,912 FP32 "
             "cores, 64 per SM");
  table.push_back(a100);

  ChipConstants l40s = common("sm_89", "L40S");
  l40s.smCount = of(142, "L40S specifications (AD102, SM count 142), as "
                         "listed by reseller pages of NVIDIA's datasheet");
  l40s.hbmBytesPerSecond =
      of(864e9, "NVIDIA L40S datasheet, as quoted by itcreations.com: 864 GB/s "
                "GDDR6 (not HBM)");
  l40s.clockHz = of(2.52e9, "L40S specifications, as quoted by "
                            "itcreations.com: 2520 MHz boost clock");
  l40s.memoryLatencySeconds = of(700e-9, kLatency);
  l40s.maxThreadsPerSm = of(1536, "docs.rs oxicuda-launch (third-party "
                                  "reading of the guide): 48 warps on 8.9");
  l40s.maxBlocksPerSm =
      of(24, "ASSUMED: 24 resident blocks (compute capability 8.9; no "
             "stored copy of the guide's row read)");
  l40s.sharedBytesPerSm =
      of(100 * 1024, "ASSUMED: 100 KB (compute capability 8.9; no stored "
                     "copy of the guide's row read)");
  l40s.fp32LanesPerClock =
      of(128, "NVIDIA L40S datasheet, as quoted by itcreations.com: 18,176 "
              "CUDA cores / 142 SMs");
  table.push_back(l40s);

  ChipConstants h200 = common("sm_90a", "H200 SXM");
  h200.smCount = of(132, "NVIDIA H200 datasheet (GH100, 132 SMs)");
  h200.hbmBytesPerSecond = of(4.8e12, "NVIDIA H200 datasheet: 4.8 TB/s HBM3e");
  h200.clockHz = of(1.98e9, "NVIDIA H100/H200 SXM: 1.98 GHz boost clock");
  h200.memoryLatencySeconds = of(700e-9, kLatency);
  h200.maxThreadsPerSm = of(2048, kGuide);
  h200.maxBlocksPerSm = of(32, kGuide);
  h200.sharedBytesPerSm = of(228 * 1024, kGuide);
  h200.fp32LanesPerClock =
      of(128, "H100 whitepaper, as quoted by notes.haroldbenoit.com: 128 "
              "FP32 CUDA cores per SM");
  h200.l1WavefrontsPerClock = of(1, kL1Hopper);
  table.push_back(h200);

  ChipConstants b200 = common("sm_100a", "B200");
  b200.smCount = of(148, "NVIDIA HGX B200 datasheet: 148 SMs");
  b200.hbmBytesPerSecond =
      of(8.0e12, "NVIDIA HGX B200 datasheet: 8 TB/s HBM3e per GPU");
  b200.clockHz = of(1.9e9, "ASSUMED: ~1.9 GHz (no published boost clock "
                           "found)");
  b200.memoryLatencySeconds =
      of(800e-9, "ASSUMED: 800 ns (no microbenchmark of B200 at hand; "
                 "HBM3e under load)");
  b200.maxThreadsPerSm = of(2048, kGuide);
  b200.maxBlocksPerSm = of(32, kGuide);
  b200.sharedBytesPerSm = of(228 * 1024, kGuide);
  b200.fp32LanesPerClock =
      of(128, "ASSUMED: 128 FP32 lanes per SM, as Hopper's");
  table.push_back(b200);

  ChipConstants rtx5090 = common("sm_120a", "GeForce RTX 5090");
  rtx5090.smCount = of(170, "Linux Format review of the RTX 5090 (May "
                            "2025), specifications: 170 SMs");
  rtx5090.hbmBytesPerSecond =
      of(1.792e12, "same review: 1,792 GB/s GDDR7 (not HBM)");
  rtx5090.clockHz = of(2.407e9, "same review: 2,407 MHz boost clock");
  rtx5090.memoryLatencySeconds = of(700e-9, kLatency);
  rtx5090.maxThreadsPerSm =
      of(1536, "docs.rs oxicuda-launch (third-party reading of the guide): "
               "48 warps on 12.0");
  rtx5090.maxBlocksPerSm = of(24, "ASSUMED: 24 (as compute capability 8.9)");
  rtx5090.sharedBytesPerSm =
      of(100 * 1024, "ASSUMED: 100 KB (as compute capability 8.9)");
  rtx5090.fp32LanesPerClock = of(128, "same review: 21,760 shaders / 170 SMs");
  table.push_back(rtx5090);
  return table;
}

} // namespace

const std::vector<ChipConstants> &chipTable() {
  static const std::vector<ChipConstants> table = makeTable();
  return table;
}

const ChipConstants *chipConstants(std::string_view chip) {
  // The arch-specific and portable names of one chip share a row.
  std::string_view row = chip == "sm_90"    ? "sm_90a"
                         : chip == "sm_100" ? "sm_100a"
                         : chip == "sm_120" ? "sm_120a"
                                            : chip;
  for (const ChipConstants &constants : chipTable())
    if (constants.chip == row)
      return &constants;
  return nullptr;
}

} // namespace lowbit::report
