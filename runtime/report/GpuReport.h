//===- GpuReport.h - Static performance report of GPU kernels ---*- C++ -*-===//
//
// Reads what a GPU kernel is made of without running it: the PTX text, how
// it is launched, ptxas's resource report, and the bytes its buffers hold
// (from the format model). From those it derives load/store widths,
// instructions per element, occupancy, and a bandwidth estimate that names
// its limiting factor. The model and its limits are in docs/gpu-report.md.
//
// MLIR-free: the caller turns its launch description (lowbit's LaunchPlan,
// or the NVRTC reference kernels' fixed ABI) into KernelLaunch records.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_REPORT_GPUREPORT_H
#define LOWBIT_RUNTIME_REPORT_GPUREPORT_H

#include "format/Scheme.h"
#include "lowbit/Expected.h"
#include "runtime/driver/NvJitLink.h"
#include "runtime/report/CodeLoops.h"
#include "runtime/report/IssuePipes.h"
#include "runtime/report/PtxGuards.h"
#include "runtime/report/SassAnalysis.h"
#include "runtime/spec/KernelSpec.h"
#include "target/ChipTable.h"

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace lowbit::report {

// --- the chip ---------------------------------------------------------------

/// Per-SM limits and the memory system of one chip, read off its row of
/// the chip table (ChipTable.h: each value's source).
struct ChipModel {
  std::string chip;   ///< "sm_90a"
  std::string device; ///< "H200 SXM"
  /// The row the values come from, with their sources; never null in a
  /// model chipModel made.
  const ChipConstants *constants = nullptr;
  int smCount = 0;
  int registersPerSm = 0;
  int maxThreadsPerSm = 0;
  int maxBlocksPerSm = 0;
  int sharedBytesPerSm = 0;
  /// Registers are allocated per warp in units of this many.
  int registerAllocationUnit = 0;
  double hbmBytesPerSecond = 0;
  double memoryLatencySeconds = 0;
  double clockHz = 0;
  /// Warp instructions one SM issues per clock (one per scheduler).
  int issuePerSmPerClock = 0;
  /// Issue slots of a sub-partition one mma.sync m16n8k16 (f16 x f16 ->
  /// f32) occupies (mmaIssueSlots of it): its tensor core's time, counted
  /// in the issue term; an mma of another kind or shape takes its own.
  int mmaSyncIssueSlots = 0;
  /// 128-byte L1 wavefronts one SM serves per clock.
  int l1WavefrontsPerSmPerClock = 0;
  /// Cost of one kernel launch in a stream beyond its own work.
  double launchOverheadSeconds = 0;
  /// One atomic on a single contended address, serialized in L2.
  double contendedAtomicSeconds = 0;
};

/// One mma.sync: its operand kind and shape.
struct MmaShape {
  MmaKind kind = MmaKind::F16;
  int m = 0, n = 0, k = 0;
  bool operator==(const MmaShape &other) const = default;
};

/// The kind and shape of a PTX mma.sync opcode
/// ("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32"); nullopt for a
/// kind the chip table gives no rate for (tf32, f64, b1, s4, e2m3, ...).
std::optional<MmaShape> mmaShapeOf(std::string_view opcode);
/// "e4m3/e5m2 m16n8k32".
std::string mmaShapeText(const MmaShape &mma);
/// Issue slots of a sub-partition one `mma` holds on `chip`: its m n k
/// multiply-adds over one sub-partition's share of the kind's mma.sync
/// rate (ChipTable.h's peak times mmaSyncShareOfPeak, over
/// issuePerSmPerClock); 8 for f16 m16n8k16 on sm_90a. 0 where the chip has
/// no mma.sync of the kind.
double mmaIssueSlots(const ChipModel &chip, const MmaShape &mma);

/// The chips of the chip table (sm_80, sm_89, sm_90a, sm_100a, sm_120a, and
/// their portable names); nullopt for any other chip.
std::optional<ChipModel> chipModel(std::string_view chip);
/// The model of a part by its device name (ChipTable.h's partConstants:
/// "H100 SXM" is sm_90a's limits with its own bandwidth); nullopt for a
/// part the table does not hold.
std::optional<ChipModel> partModel(std::string_view device);
/// The chips chipModel knows, for messages.
std::string knownReportChips();

// --- the PTX ----------------------------------------------------------------

/// A loop: a backward branch in the kernel body (CodeLoops.h).
using PtxLoop = CodeLoop;

struct PtxKernel {
  std::string name;
  int instructions = 0;
  /// Global (and generic) loads and stores: bits per access -> static count.
  std::map<int, int> loadWidths, storeWidths;
  /// Loads/stores through generic addresses (no .global): counted above too.
  int genericAccesses = 0;
  int globalLoadBytes = 0, globalStoreBytes = 0;
  std::vector<PtxLoop> loops;
  /// Per loop, the trips per entry its bound states (PtxTrips.h: a
  /// counter stepped by a constant against a known bound), 0 where the
  /// PTX does not state them.
  std::vector<double> loopStatedTrips;
  /// Per loop, the statement of the `setp` its stated trips come from; -1
  /// where none.
  std::vector<int> loopTests;
  /// Per statement, whether a lane of warp 0 reaches it (PtxTrips.h's
  /// lanesReaching): code a guard the launch decides skips is not run.
  std::vector<bool> reached;
  /// Every global/generic access, in order.
  struct Access {
    int instruction = 0, bits = 0;
    bool load = false;
    /// The .param slots the address is computed from (address dataflow:
    /// through arithmetic, not through loaded values).
    std::vector<int> addressParameters;
    /// 128-byte lines one warp-wide access touches, from the lanes'
    /// addresses where the PTX shows them as the thread index times a
    /// known stride (lanes 0..31 of a block whose x size is a multiple of
    /// 32); 0 where it does not (a lane-uniform or unknown address).
    int warpLines = 0;
    /// Adjacent lanes take adjacent elements (PtxAddresses.h).
    bool lanesContiguous = false;
    /// The statement of the global load the address is computed from (a
    /// page number from a block table), -1 where none (PtxAddresses.h).
    int feedingLoad = -1;
    bool operator==(const Access &other) const = default;
  };
  std::vector<Access> accesses;
  /// Indices of the .param slots the body reads.
  std::vector<int> parametersRead;
  int atomics = 0, casAtomics = 0, sysScopeOps = 0;
  /// Per atomic (atom/red, in order), the x indices of a block's threads
  /// that execute it (PtxGuards.h): one bit under `if (tid.x == 0)`.
  std::vector<ThreadSet> atomicThreads;
  int shuffles = 0, barriers = 0, divisions = 0;
  /// Indices of the mma.sync instructions (tensor-core matrix multiplies),
  /// and each one's opcode.
  std::vector<int> mmaInstructions;
  std::vector<std::string> mmaOpcodes;
};

/// Every .entry of `ptx`. A PTX without entries is an error.
Expected<std::vector<PtxKernel>> analyzePtx(std::string_view ptx);
/// The same with scalar arguments bound per kernel (.param slot -> value;
/// PtxAddresses.h): the lanes' addresses through them are known; and the
/// launch's block size per kernel (%ntid is then a constant), and the
/// slots that hold buffer addresses (256-byte aligned: PtxAddresses.h).
Expected<std::vector<PtxKernel>>
analyzePtx(std::string_view ptx,
           const std::map<std::string, std::map<int, int64_t>> &bound,
           const std::map<std::string, std::array<int64_t, 3>> &blocks = {},
           const std::map<std::string, std::set<int>> &bufferSlots = {});

// --- one spec's kernels -----------------------------------------------------

struct Buffer {
  std::string role; ///< input, codes, scales, zeros, global, output, scratch
  int64_t bytes = 0;
  bool written = false;
};

/// What one launch is, at the report's reference size.
struct KernelLaunch {
  std::string kernel;
  /// Human-readable policy, e.g. "grid (rows, ceil(cols/128)) x block 128".
  std::string policy;
  std::array<int64_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  int64_t dynamicSharedBytes = 0;
  /// The grid does not grow with the tensor: threads stride over it.
  bool gridStride = false;
  /// PTX .param slot -> index into the spec's buffers (-1: not a buffer
  /// address). A buffer counts as moved by the launch when its slot is read.
  std::vector<int> bufferOfParameter;
  /// Scalar arguments the launch passes, where known (.param slot ->
  /// value): the address analysis uses them (analyzePtx's `bound`).
  std::map<int, int64_t> parameterValues;
};

struct SpecInput {
  std::string title; ///< "quantize mxfp4 f32", "nvrtc quantize mxfp4 f32"
  KernelOp op = KernelOp::Quantize;
  ChipModel chip;
  std::string ptx;
  std::vector<KernelLaunch> launches;
  std::vector<runtime::KernelResources> resources; ///< from nvJitLink
  /// nvdisasm's text of the cubin nvJitLink built (addSass); empty when
  /// there is none, and then sassUnavailable says why.
  std::string sass, sassUnavailable;
  std::vector<Buffer> buffers;
  int64_t elements = 0;
  /// Bytes of one value of the streamed side (input of quantize, output of
  /// dequantize): the loop trip count is derived from it.
  int valueBytes = 4;
  double minimumBytes = 0;
  /// A fused spec (prologue | quantize, docs/fusion.md): the bytes the
  /// unfused sequence moves (FusionTraffic.h) and its extra kernels, one
  /// per prologue; minimumBytes is then the fused kernel's. 0: not fused.
  double unfusedBytes = 0;
  int prologueKernels = 0;
};

struct LaunchReport {
  KernelLaunch launch;
  PtxKernel ptx;
  /// What ptxas made of the kernel; nullopt without a disassembler.
  std::optional<SassKernel> sass;
  runtime::KernelResources resources;
  int64_t threads = 0;
  double elementsPerThread = 0;
  /// Instructions each thread executes, loops weighted by their trips.
  double instructionsPerThread = 0;
  /// Of those, mma.sync, and the issue slots they hold (each its kind's
  /// mmaIssueSlots; one of a kind without a rate as f16 m16n8k16).
  double mmaPerThread = 0, mmaSlotsPerThread = 0;
  /// The kind and shape of the mma.sync the thread issues most; nullopt
  /// without one the chip table gives a rate for.
  std::optional<MmaShape> mma;
  double instructionsPerElement = 0;
  /// The heaviest loop's body per element (0 without a streaming loop).
  double loopInstructionsPerElement = 0;
  /// Index into ptx.loops of that loop, -1 if none.
  int mainLoop = -1;
  /// Per loop of ptx.loops: value elements per trip, and the trips assumed.
  std::vector<double> loopElementsPerTrip, loopTrips;
  /// The issue term and the loads in flight read the SASS where there is
  /// one (docs/gpu-report.md, "SASS in the estimate"), else the PTX.
  bool fromSass = false;
  /// Per loop of sass->loops, the trips assumed (the PTX's, rescaled).
  std::vector<double> sassLoopTrips;
  /// Global bytes one trip of the PTX main loop's SASS counterpart loads
  /// per thread (its loads in flight); -1 without one.
  double sassMainLoopLoadBytes = -1;
  /// SASS instructions each thread executes, loops weighted by their trips:
  /// all, per pipe (IssuePipes.h; fp32PerThread is the FMA pipe's, with
  /// fp16 and the integer multiply-adds, intPerThread the INT32 pipe's)
  /// and of the tensor cores.
  double sassPerThread = 0, fp32PerThread = 0, mufuPerThread = 0,
         intPerThread = 0, tensorPerThread = 0, conversionPerThread = 0;
  PipeCounts pipesPerThread;
  /// What binds the issue term: "dispatch" or a pipe's name (IssuePipes.h's
  /// busiestPipe) from the SASS; "dispatch" for PTX.
  std::string issueBinding = "dispatch";
  int blocksPerSm = 0;
  double occupancy = 0;         ///< resident warps / maximum
  std::string occupancyLimiter; ///< registers, threads, blocks, shared, grid
  int64_t bytesMoved = 0;
  double bytesInFlight = 0; ///< whole GPU
  /// DRAM latencies one trip of the main loop (or a loopless body) waits
  /// in sequence: 2 where a load's address comes from a load of the same
  /// trip (a KV row after its page number from the block table), else 1.
  int latenciesPerTrip = 1;
  /// Bytes between the addresses of adjacent lanes, and the 128-byte L1
  /// wavefronts one warp-wide access costs on average.
  double laneStrideBytes = 0, wavefrontsPerAccess = 0;
  double l1WavefrontsPerThread = 0; ///< per thread, summed over accesses
  /// Atomics one block executes (each atomic times the threads of the
  /// block that reach it) and the whole grid's.
  int64_t atomicsPerBlock = 0, atomicsExecuted = 0;
  double memorySeconds = 0, issueSeconds = 0, atomicSeconds = 0;
  double l1Seconds = 0;
  double seconds = 0; ///< the largest of the three plus the launch overhead
  std::string limiter;
  /// The ASSUMED chip constants (ChipTable.h) the time rests on: the
  /// launch overhead and those of the binding term, e.g. "DRAM latency
  /// 700 ns".
  std::vector<std::string> assumptions;
};

struct SpecReport {
  std::string title;
  std::string chip;
  std::vector<LaunchReport> launches;
  double bytesPerElement = 0, minimumBytesPerElement = 0;
  /// A fused spec's unfused sequence (SpecInput); 0 when not fused.
  double unfusedBytesPerElement = 0;
  int prologueKernels = 0;
  double seconds = 0;
  double bandwidthFraction = 0; ///< minimum bytes / time / peak
  std::string limiter;
  int mainLaunch = 0; ///< the launch that takes the most time
  /// Why the launches have no SASS (SpecInput::sassUnavailable).
  std::string sassUnavailable;
  /// Every launch's assumptions, each once, in launch order.
  std::vector<std::string> assumptions;
};

Expected<SpecReport> analyzeSpec(const SpecInput &input);
/// The spec's totals from its launches' bytes and times: seconds, bytes per
/// element, the fraction of HBM and the limiting factor (analyzeSpec ends
/// with it; a caller that replaces a launch's time calls it again).
void summarizeSpec(const SpecInput &input, SpecReport &report);

/// Disassembles `cubin` (Nvdisasm.h) into input.sass, or says in
/// input.sassUnavailable why it cannot: the report then reads PTX only.
void addSass(SpecInput &input, std::string_view cubin);

/// The format model's minimum: the value tensor plus codes, scales, zero
/// points and global scale, each moved once, at rows x cols.
double minimumBytes(const Scheme &scheme, int valueBytes, int64_t rows,
                    int64_t cols);
/// The ABI buffers of a spec at rows x cols, sized by the format model, in
/// the NVRTC reference kernels' order: value, codes, scales, zeros, global
/// (a zero-byte entry where the scheme has none).
std::vector<Buffer> formatBuffers(const Scheme &scheme, KernelOp op,
                                  int valueBytes, int64_t rows, int64_t cols);

/// The launches of runtime/nvrtc's reference kernels (their ABI is fixed in
/// ReferenceKernels.h) at rows x cols; buffers as formatBuffers plus one
/// scratch word for the amax.
std::vector<KernelLaunch> referenceKernelLaunches(KernelOp op, int groupSize,
                                                  bool needsTensorAmax,
                                                  int64_t rows, int64_t cols);

std::string widthsText(const std::map<int, int> &widths);
std::string formatReportText(const SpecReport &report);
std::string markdownHeader();
std::string formatReportMarkdownRow(const SpecReport &report);

} // namespace lowbit::report

#endif // LOWBIT_RUNTIME_REPORT_GPUREPORT_H
