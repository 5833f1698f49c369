//===- ChipTable.cpp - One row of limits and rates per chip --------------===//
//
// Sources, as found (docs/gpu-report.md has the same table for readers):
//   - per-SM and per-block limits: NVIDIA CCCL's architecture traits
//     (libcudacxx/include/cuda/__device/arch_traits.h, one specialization
//     per compute capability, the CUDA C++ Programming Guide's "Technical
//     Specifications per Compute Capability" as code);
//   - devices: NVIDIA's datasheets, as quoted by the page named;
//   - ASSUMED: no document or measurement at hand; the reason is given.
// No GPU has run lowbit's kernels yet, so none of these is a measurement.
//
//===----------------------------------------------------------------------===//

#include "target/ChipTable.h"

#include <algorithm>

namespace lowbit {

namespace {

constexpr std::string_view kCccl =
    "NVIDIA CCCL, libcudacxx cuda/__device/arch_traits.h (the CUDA C++ "
    "Programming Guide's Technical Specifications per Compute Capability)";
constexpr std::string_view kCcclCommon =
    "NVIDIA CCCL, libcudacxx cuda/__device/arch_traits.h, common traits of "
    "every architecture";
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
constexpr std::string_view kConversion =
    "CUDA C++ Programming Guide, Arithmetic Instructions, throughput of "
    "native arithmetic instructions: 'all other type conversions' 16 "
    "results per clock per SM for compute capabilities 8.0 to 9.0 (as "
    "quoted by third-party notes; the guide's text was not at hand)";
constexpr std::string_view kConversionAssumed =
    "ASSUMED: 16 conversions per clock per SM, the programming guide's "
    "figure for 8.0 to 9.0 (none found for this compute capability)";
constexpr std::string_view kMmaHalf =
    "ASSUMED: mma.sync reaches half of the dense tensor peak (wgmma reaches "
    "it; Luo et al., arXiv 2501.12084, benchmark both on H800; public "
    "mma.sync kernels report about half); no H100 was at hand to measure "
    "it";
constexpr std::string_view kMmaOnly =
    "PTX ISA: wgmma is sm_90a's and tcgen05.mma sm_100a's, so on this chip "
    "mma.sync is the tensor cores' only instruction and the datasheet's "
    "dense peak is its";
constexpr std::string_view kNoMmaRate =
    "not recorded: no part of this compute capability is modelled";
constexpr std::string_view kNoFp8Mma =
    "PTX ISA: mma.sync with e4m3/e5m2 operands needs sm_89";
constexpr std::string_view kNoFp4Mma =
    "PTX ISA: the block-scaled mma.sync (kind::mxf4nvf4, kind::mxf4) is "
    "sm_120a's (sm_100a's block-scaled products are tcgen05.mma's)";
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

/// A row with its compute capability's limits (CCCL's arch traits: SM
/// shared memory, resident blocks and threads; the driver reserves 1 KB of
/// shared memory per block) and the model's rates and assumptions that no
/// document gives per chip. The device's numbers are the caller's.
ChipConstants row(std::string_view chip, unsigned smVersion,
                  std::string_view device, int threadsPerSm, int blocksPerSm,
                  int sharedKbPerSm) {
  ChipConstants row;
  row.chip = chip;
  row.smVersion = smVersion;
  row.device = device;
  row.registersPerSm = of(65536, kCcclCommon);
  row.registerAllocationUnit = of(256, kAllocation);
  row.maxRegistersPerThread = of(255, kCcclCommon);
  row.maxThreadsPerBlock = of(double(kMaxThreadsPerBlock), kCcclCommon);
  row.staticSharedBytesPerBlock =
      of(double(kStaticSharedBytesPerBlock), kCcclCommon);
  row.maxThreadsPerSm = of(threadsPerSm, kCccl);
  row.maxBlocksPerSm = of(blocksPerSm, kCccl);
  row.sharedBytesPerSm = of(sharedKbPerSm * 1024, kCccl);
  row.maxSharedBytesPerBlock = of((sharedKbPerSm - 1) * 1024, kCccl);
  row.issuePerSmPerClock = of(4, kSchedulers);
  row.mufuLanesPerClock = of(16, kMufu);
  row.int32LanesPerClock = of(64, kInt32);
  row.conversionLanesPerClock =
      of(16, smVersion <= 90 ? kConversion : kConversionAssumed);
  for (Sourced *rate : {&row.tensorF16MacsPerClock, &row.tensorFp8MacsPerClock,
                        &row.tensorS8MacsPerClock, &row.tensorFp4MacsPerClock})
    *rate = of(0, kNoMmaRate);
  row.mmaSyncShareOfPeak = of(1, kNoMmaRate);
  row.l1WavefrontsPerClock = of(1, kL1Other);
  row.launchOverheadSeconds = of(1.5e-6, kLaunch);
  row.contendedAtomicSeconds = of(0.5e-9, kAtomic);
  return row;
}

std::vector<ChipConstants> makeTable() {
  std::vector<ChipConstants> table;

  ChipConstants a100 = row("sm_80", 80, "A100 80GB SXM", 2048, 32, 164);
  a100.smCount = of(108, "NVIDIA Ampere whitepaper and A100 datasheet, as "
                         "quoted by glennklockwood.com: 108 SMs");
  a100.hbmBytesPerSecond =
      of(2.039e12, "NVIDIA A100 80GB datasheet, as quoted by "
                   "glennklockwood.com: 2,039 GB/s HBM2e");
  a100.clockHz = of(1.41e9, "A100 deviceQuery (GPU Max Clock rate 1410 MHz), "
                            "upb-pc2 wiki");
  a100.memoryLatencySeconds = of(700e-9, kLatency);
  a100.fp32LanesPerClock =
      of(64, "glennklockwood.com, from NVIDIA's A100 documents: 6,912 FP32 "
             "cores, 64 per SM");
  // Dense tensor peaks over SMs x clock x 2 (a multiply-add is 2 ops).
  a100.tensorF16MacsPerClock =
      of(1024, "NVIDIA A100 whitepaper and datasheet: 312 TFLOPS dense FP16 "
               "tensor = 1024 multiply-adds per clock per SM at 108 SMs x "
               "1.41 GHz");
  a100.tensorS8MacsPerClock =
      of(2048, "NVIDIA A100 whitepaper and datasheet: 624 TOPS dense INT8 "
               "tensor = 2048 per clock per SM");
  a100.tensorFp8MacsPerClock = of(0, kNoFp8Mma);
  a100.tensorFp4MacsPerClock = of(0, kNoFp4Mma);
  a100.mmaSyncShareOfPeak = of(1, kMmaOnly);
  table.push_back(a100);

  // Limits only: lowbit models no sm_86 part.
  table.push_back(row("sm_86", 86, "", 1536, 16, 100));

  ChipConstants l40s = row("sm_89", 89, "L40S", 1536, 24, 100);
  l40s.smCount = of(142, "L40S specifications (AD102, SM count 142), as "
                         "listed by reseller pages of NVIDIA's datasheet");
  l40s.hbmBytesPerSecond =
      of(864e9, "NVIDIA L40S datasheet, as quoted by itcreations.com: 864 GB/s "
                "GDDR6 (not HBM)");
  l40s.clockHz = of(2.52e9, "L40S specifications, as quoted by "
                            "itcreations.com: 2520 MHz boost clock");
  l40s.memoryLatencySeconds = of(700e-9, kLatency);
  l40s.fp32LanesPerClock =
      of(128, "NVIDIA L40S datasheet, as quoted by itcreations.com: 18,176 "
              "CUDA cores / 142 SMs");
  l40s.tensorF16MacsPerClock =
      of(512, "NVIDIA L40S datasheet, as quoted by mullet.se: 362.05 TFLOPS "
              "dense FP16 tensor = 506 multiply-adds per clock per SM at 142 "
              "SMs x 2.52 GHz, 512 at the datasheet's clock");
  l40s.tensorFp8MacsPerClock =
      of(1024, "same datasheet: 733 TFLOPS dense FP8 tensor, twice FP16");
  l40s.tensorS8MacsPerClock =
      of(1024, "hmc-tech.com's L40S page: 732.86 TOPS dense INT8 tensor, as "
               "FP8");
  l40s.tensorFp4MacsPerClock = of(0, kNoFp4Mma);
  l40s.mmaSyncShareOfPeak = of(1, kMmaOnly);
  table.push_back(l40s);

  ChipConstants h200 = row("sm_90a", 90, "H200 SXM", 2048, 32, 228);
  h200.smCount = of(132, "NVIDIA H200 datasheet (GH100, 132 SMs)");
  h200.hbmBytesPerSecond = of(4.8e12, "NVIDIA H200 datasheet: 4.8 TB/s HBM3e");
  h200.clockHz = of(1.98e9, "NVIDIA H100/H200 SXM: 1.98 GHz boost clock");
  h200.memoryLatencySeconds = of(700e-9, kLatency);
  h200.fp32LanesPerClock =
      of(128, "H100 whitepaper, as quoted by notes.haroldbenoit.com: 128 "
              "FP32 CUDA cores per SM");
  h200.l1WavefrontsPerClock = of(1, kL1Hopper);
  h200.tensorF16MacsPerClock =
      of(2048, "H100 whitepaper, Table 3: 989 TFLOPS dense FP16 tensor "
               "(FP32 accumulate) = 2048 multiply-adds per clock per SM at "
               "132 SMs x 1.83 GHz");
  h200.tensorFp8MacsPerClock =
      of(4096, "H100 whitepaper, Table 3: 1979 TFLOPS dense FP8 tensor, "
               "twice FP16");
  h200.tensorS8MacsPerClock =
      of(4096, "H100 whitepaper, Table 3: 1979 TOPS dense INT8 tensor");
  h200.tensorFp4MacsPerClock = of(0, kNoFp4Mma);
  h200.mmaSyncShareOfPeak = of(0.5, kMmaHalf);
  table.push_back(h200);

  ChipConstants b200 = row("sm_100a", 100, "B200", 2048, 32, 228);
  b200.smCount = of(148, "NVIDIA HGX B200 datasheet: 148 SMs");
  b200.hbmBytesPerSecond =
      of(8.0e12, "NVIDIA HGX B200 datasheet: 8 TB/s HBM3e per GPU");
  b200.clockHz = of(1.9e9, "ASSUMED: ~1.9 GHz (no published boost clock "
                           "found)");
  b200.memoryLatencySeconds =
      of(800e-9, "ASSUMED: 800 ns (no microbenchmark of B200 at hand; "
                 "HBM3e under load)");
  b200.fp32LanesPerClock =
      of(128, "ASSUMED: 128 FP32 lanes per SM, as Hopper's");
  // B200's dense peaks are tcgen05.mma's; its mma.sync is not assumed
  // faster per SM and clock than H100's.
  constexpr std::string_view kB200Mma =
      "ASSUMED: H100's per SM and clock (B200's datasheet peaks are "
      "tcgen05.mma's; no figure for its mma.sync)";
  b200.tensorF16MacsPerClock = of(2048, kB200Mma);
  b200.tensorFp8MacsPerClock = of(4096, kB200Mma);
  b200.tensorS8MacsPerClock = of(4096, kB200Mma);
  b200.tensorFp4MacsPerClock = of(0, kNoFp4Mma);
  b200.mmaSyncShareOfPeak = of(0.5, kMmaHalf);
  table.push_back(b200);

  // Limits only (CCCL gives 10.3 the traits of 10.0): no part modelled.
  table.push_back(row("sm_103a", 103, "", 2048, 32, 228));

  ChipConstants rtx5090 =
      row("sm_120a", 120, "GeForce RTX 5090", 1536, 24, 100);
  rtx5090.smCount = of(170, "Linux Format review of the RTX 5090 (May "
                            "2025), specifications: 170 SMs");
  rtx5090.hbmBytesPerSecond =
      of(1.792e12, "same review: 1,792 GB/s GDDR7 (not HBM)");
  rtx5090.clockHz = of(2.407e9, "same review: 2,407 MHz boost clock");
  rtx5090.memoryLatencySeconds = of(700e-9, kLatency);
  rtx5090.fp32LanesPerClock = of(128, "same review: 21,760 shaders / 170 SMs");
  // spheron.network's RTX 5090 spec list gives the peaks with sparsity;
  // dense is half. It does not name the accumulator: GeForce parts before
  // halved FP32 accumulation (RTX 4090: FP16 165.2 TFLOPS with FP32, 330.3
  // with FP16, hmc-tech.com), so FP16 and FP8 are taken as stated.
  rtx5090.tensorF16MacsPerClock =
      of(512, "ASSUMED: spheron.network's RTX 5090 list, 838.4 TFLOPS FP16 "
              "tensor with sparsity = 512 dense multiply-adds per clock per "
              "SM at 170 SMs x 2.407 GHz; with FP32 accumulation it may be "
              "half, as on the RTX 4090");
  rtx5090.tensorFp8MacsPerClock =
      of(1024, "ASSUMED: same list, 1676.8 TFLOPS FP8 with sparsity = 1024 "
               "dense; with FP32 accumulation it may be half");
  rtx5090.tensorS8MacsPerClock =
      of(1024, "ASSUMED: as FP8 (Ada's INT8 rate is its FP8 rate; no INT8 "
               "figure found for this part)");
  rtx5090.tensorFp4MacsPerClock =
      of(2048, "spheron.network's RTX 5090 list: 3352 TFLOPS FP4 tensor "
               "with sparsity (NVIDIA's 'AI TOPS') = 2048 dense multiply-"
               "adds per clock per SM; FP4 accumulates in FP32 only");
  rtx5090.mmaSyncShareOfPeak = of(1, kMmaOnly);
  table.push_back(rtx5090);
  return table;
}

/// Parts whose compute capability's row is another part's: the per-SM
/// limits and rates are the row's, the device's numbers its own.
std::vector<ChipConstants> makeOtherParts() {
  std::vector<ChipConstants> parts;
  ChipConstants h100 = *chipConstants("sm_90a");
  h100.device = "H100 SXM";
  h100.hbmBytesPerSecond =
      of(3.35e12, "NVIDIA H100 SXM5 datasheet, as quoted by 3eyedtech.com's "
                  "GPGPU page: 3.35 TB/s HBM3, 132 SMs");
  parts.push_back(h100);
  return parts;
}

} // namespace

std::string_view mmaKindName(MmaKind kind) {
  switch (kind) {
  case MmaKind::F16:
    return "f16/bf16";
  case MmaKind::Fp8:
    return "e4m3/e5m2";
  case MmaKind::S8:
    return "s8";
  case MmaKind::Fp4BlockScaled:
    return "block-scaled e2m1";
  }
  return "";
}

const Sourced &tensorMacsPerClock(const ChipConstants &row, MmaKind kind) {
  switch (kind) {
  case MmaKind::F16:
    return row.tensorF16MacsPerClock;
  case MmaKind::Fp8:
    return row.tensorFp8MacsPerClock;
  case MmaKind::S8:
    return row.tensorS8MacsPerClock;
  case MmaKind::Fp4BlockScaled:
    return row.tensorFp4MacsPerClock;
  }
  return row.tensorF16MacsPerClock;
}

double mmaSyncMacsPerClock(const ChipConstants &row, MmaKind kind) {
  return tensorMacsPerClock(row, kind).value * row.mmaSyncShareOfPeak.value;
}

const std::vector<ChipConstants> &chipTable() {
  static const std::vector<ChipConstants> table = makeTable();
  return table;
}

const ChipConstants *chipConstants(const ChipInfo &chip) {
  for (const ChipConstants &constants : chipTable())
    if (constants.smVersion == chip.smVersion)
      return &constants;
  return nullptr;
}

const ChipConstants *chipConstants(std::string_view chip) {
  const ChipInfo *info = lookupChip(chip);
  return info ? chipConstants(*info) : nullptr;
}

const ChipConstants *partConstants(std::string_view device) {
  static const std::vector<ChipConstants> others = makeOtherParts();
  for (const std::vector<ChipConstants> *rows : {&chipTable(), &others})
    for (const ChipConstants &constants : *rows)
      if (constants.hasDevice() && constants.device == device)
        return &constants;
  return nullptr;
}

int64_t largestSharedBytesPerBlock() {
  double largest = 0;
  for (const ChipConstants &constants : chipTable())
    largest = std::max(largest, constants.maxSharedBytesPerBlock.value);
  return int64_t(largest);
}

} // namespace lowbit
