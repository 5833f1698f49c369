//===- GpuReport.cpp - Occupancy and bandwidth model of a spec's kernels --===//
//
// The model (docs/gpu-report.md): each launch takes the longest of its
// memory time (bytes over the bandwidth its loads in flight can sustain),
// its issue time (warp instructions over the SMs' issue rate) and its
// contended-atomic time, plus a fixed launch overhead. The spec's fraction
// of HBM bandwidth is the format model's minimum bytes at peak bandwidth
// over the sum of those times.
//
//===----------------------------------------------------------------------===//

#include "runtime/report/GpuReport.h"

#include "format/Quantize.h"
#include "runtime/report/Nvdisasm.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <set>
#include <tuple>

#include <fmt/format.h>

namespace lowbit::report {

namespace {

/// The model of one row of the chip table, named `chip`.
std::optional<ChipModel> modelOf(const ChipConstants *row,
                                 std::string_view chip) {
  // The model needs a part: a row of limits alone has no bandwidth.
  if (!row || !row->hasDevice())
    return std::nullopt;
  // Every number and its source: target/ChipTable.cpp (docs/gpu-report.md).
  ChipModel model;
  model.chip = std::string(chip);
  model.device = std::string(row->device);
  model.constants = row;
  model.smCount = int(row->smCount.value);
  model.registersPerSm = int(row->registersPerSm.value);
  model.maxThreadsPerSm = int(row->maxThreadsPerSm.value);
  model.maxBlocksPerSm = int(row->maxBlocksPerSm.value);
  model.sharedBytesPerSm = int(row->sharedBytesPerSm.value);
  model.registerAllocationUnit = int(row->registerAllocationUnit.value);
  model.hbmBytesPerSecond = row->hbmBytesPerSecond.value;
  model.memoryLatencySeconds = row->memoryLatencySeconds.value;
  model.clockHz = row->clockHz.value;
  model.issuePerSmPerClock = int(row->issuePerSmPerClock.value);
  model.l1WavefrontsPerSmPerClock = int(row->l1WavefrontsPerClock.value);
  model.launchOverheadSeconds = row->launchOverheadSeconds.value;
  model.contendedAtomicSeconds = row->contendedAtomicSeconds.value;
  model.mmaSyncIssueSlots =
      int(std::lround(mmaIssueSlots(model, {MmaKind::F16, 16, 8, 16})));
  return model;
}

} // namespace

std::optional<MmaShape> mmaShapeOf(std::string_view opcode) {
  MmaShape mma;
  bool f16 = false, fp8 = false, s8 = false, e2m1 = false, scaled = false;
  bool other = false;
  while (!opcode.empty()) {
    size_t dot = opcode.find('.');
    std::string_view part = opcode.substr(0, dot);
    opcode = dot == std::string_view::npos ? "" : opcode.substr(dot + 1);
    int m = 0, n = 0, k = 0;
    if (std::sscanf(std::string(part).c_str(), "m%dn%dk%d", &m, &n, &k) == 3) {
      mma.m = m;
      mma.n = n;
      mma.k = k;
    }
    if (part == "bf16" || part == "f16")
      f16 = true;
    fp8 |= part == "e4m3" || part == "e5m2";
    s8 |= part == "s8" || part == "u8";
    e2m1 |= part == "e2m1";
    scaled |= part == "block_scale";
    other |= part == "tf32" || part == "f64" || part == "b1" || part == "s4" ||
             part == "u4" || part == "e2m3" || part == "e3m2";
  }
  if (mma.m == 0 || other)
    return std::nullopt;
  // The operand kind: f16 may also name the accumulator of an fp8 mma.
  if (e2m1 && scaled)
    mma.kind = MmaKind::Fp4BlockScaled;
  else if (e2m1)
    return std::nullopt;
  else if (fp8)
    mma.kind = MmaKind::Fp8;
  else if (s8)
    mma.kind = MmaKind::S8;
  else if (f16)
    mma.kind = MmaKind::F16;
  else
    return std::nullopt;
  return mma;
}

std::string mmaShapeText(const MmaShape &mma) {
  return fmt::format("{} m{}n{}k{}", mmaKindName(mma.kind), mma.m, mma.n,
                     mma.k);
}

double mmaIssueSlots(const ChipModel &chip, const MmaShape &mma) {
  double rate =
      chip.constants ? mmaSyncMacsPerClock(*chip.constants, mma.kind) : 0;
  if (rate <= 0 || chip.issuePerSmPerClock <= 0)
    return 0;
  return double(mma.m) * mma.n * mma.k / (rate / chip.issuePerSmPerClock);
}

std::optional<ChipModel> chipModel(std::string_view chip) {
  return modelOf(chipConstants(chip), chip);
}

std::optional<ChipModel> partModel(std::string_view device) {
  const ChipConstants *row = partConstants(device);
  return row ? modelOf(row, row->chip) : std::nullopt;
}

std::string knownReportChips() {
  std::string names;
  for (const ChipConstants &row : chipTable())
    if (row.hasDevice())
      names += (names.empty() ? "" : ", ") + std::string(row.chip);
  return names;
}

namespace {

int64_t product(const std::array<int64_t, 3> &sizes) {
  return sizes[0] * sizes[1] * sizes[2];
}

/// Resident blocks per SM and which limit binds.
void computeOccupancy(const ChipModel &chip, const KernelLaunch &launch,
                      const runtime::KernelResources &resources,
                      LaunchReport &out) {
  int64_t threadsPerBlock = product(launch.block);
  int64_t warpsPerBlock = (threadsPerBlock + 31) / 32;
  struct Limit {
    int64_t blocks;
    const char *name;
  };
  std::vector<Limit> limits;
  limits.push_back({chip.maxThreadsPerSm / (warpsPerBlock * 32), "threads"});
  limits.push_back({chip.maxBlocksPerSm, "blocks"});
  if (resources.registers > 0) {
    int64_t unit = chip.registerAllocationUnit;
    int64_t perWarp = (resources.registers * 32 + unit - 1) / unit * unit;
    limits.push_back(
        {chip.registersPerSm / (perWarp * warpsPerBlock), "registers"});
  }
  int64_t shared =
      std::max(0, resources.sharedBytes) + launch.dynamicSharedBytes;
  if (shared > 0)
    limits.push_back({chip.sharedBytesPerSm / shared, "shared memory"});
  Limit binding = *std::min_element(
      limits.begin(), limits.end(),
      [](const Limit &a, const Limit &b) { return a.blocks < b.blocks; });
  out.blocksPerSm = int(binding.blocks);
  out.occupancyLimiter = binding.name;
  out.occupancy = double(binding.blocks * warpsPerBlock) /
                  double(chip.maxThreadsPerSm / 32);
}

const PtxKernel *findKernel(const std::vector<PtxKernel> &kernels,
                            const std::string &name) {
  for (const PtxKernel &kernel : kernels)
    if (kernel.name == name)
      return &kernel;
  return nullptr;
}

std::string bytesText(double bytes) {
  if (bytes >= 1 << 20)
    return fmt::format("{:.1f} MiB", bytes / double(1 << 20));
  if (bytes >= 1024)
    return fmt::format("{:.0f} KiB", bytes / 1024);
  return fmt::format("{:.0f} B", bytes);
}

/// The streamed accesses of `loop`: loads in quantize, stores in
/// dequantize.
std::vector<const PtxKernel::Access *> streamedAccesses(const SpecInput &input,
                                                        const PtxKernel &ptx,
                                                        const PtxLoop &loop) {
  std::vector<const PtxKernel::Access *> streamed;
  for (const PtxKernel::Access &access : ptx.accesses)
    if (access.instruction >= loop.firstInstruction &&
        access.instruction <= loop.lastInstruction &&
        access.load == (input.op == KernelOp::Quantize))
      streamed.push_back(&access);
  return streamed;
}

/// The one ABI buffer an access addresses (PtxAddresses.h); nullopt when
/// its address reads none or several.
std::optional<int> bufferOf(const LaunchReport &out,
                            const PtxKernel::Access &access) {
  std::set<int> buffers;
  for (int slot : access.addressParameters)
    if (size_t(slot) < out.launch.bufferOfParameter.size() &&
        out.launch.bufferOfParameter[size_t(slot)] >= 0)
      buffers.insert(out.launch.bufferOfParameter[size_t(slot)]);
  if (buffers.size() != 1)
    return std::nullopt;
  return *buffers.begin();
}

/// The trips of a streaming loop whose streamed accesses all address one
/// buffer each (PtxAddresses.h): per buffer, its bytes per thread over the
/// bytes the loop's trip streams from it; the loop takes the largest.
/// nullopt when an access's buffer is unknown.
std::optional<double> attributedTrips(const SpecInput &input,
                                      const LaunchReport &out,
                                      const PtxLoop &loop) {
  if (out.threads <= 0)
    return std::nullopt;
  std::map<int, double> bytesPerTrip;
  for (const PtxKernel::Access *access :
       streamedAccesses(input, out.ptx, loop)) {
    std::optional<int> buffer = bufferOf(out, *access);
    if (!buffer)
      return std::nullopt;
    bytesPerTrip[*buffer] += access->bits / 8.0;
  }
  if (bytesPerTrip.empty())
    return std::nullopt;
  double trips = 0;
  for (const auto &[buffer, bytes] : bytesPerTrip)
    trips = std::max(trips, double(input.buffers[size_t(buffer)].bytes) /
                                double(out.threads) / bytes);
  return trips;
}

/// Whether adjacent lanes take adjacent elements in every streamed access
/// of `loop` (PtxAddresses.h), so the lanes share the range it walks.
bool lanesAdjacent(const SpecInput &input, const PtxKernel &ptx,
                   const PtxLoop &loop) {
  std::vector<const PtxKernel::Access *> streamed =
      streamedAccesses(input, ptx, loop);
  return !streamed.empty() && std::all_of(streamed.begin(), streamed.end(),
                                          [](const PtxKernel::Access *access) {
                                            return access->lanesContiguous;
                                          });
}

/// The ABI buffers the streamed accesses of `loop` address; nullopt when
/// one of them has no single buffer.
std::optional<std::set<int>> streamedBuffers(const SpecInput &input,
                                             const LaunchReport &out,
                                             const PtxLoop &loop) {
  std::set<int> buffers;
  for (const PtxKernel::Access *access :
       streamedAccesses(input, out.ptx, loop)) {
    std::optional<int> buffer = bufferOf(out, *access);
    if (!buffer)
      return std::nullopt;
    buffers.insert(*buffer);
  }
  return buffers;
}

/// Loops weighted by their trips: a loop that streams S value bytes per trip
/// runs elementsPerThread * valueBytes / S times; any other loop once (the
/// static count is all the PTX says). A streaming loop beside another
/// whose trip streams an integer multiple F of its own is that loop's
/// remainder or alignment prologue: LLVM's unroll leaves a remainder after
/// the unrolled body, and vectorized code peels the unaligned head and the
/// tail around its wide loop (vLLM's vectorize_with_alignment). A loop
/// before the wide one counts only as a peeled head: its lanes take
/// adjacent elements and both stream the same buffers (two passes over
/// one or two tensors are not a prologue). It covers
/// fewer than F of its own trips: where its lanes take adjacent elements
/// the warp shares them, ceil((F - 1) / 32) trips a lane; otherwise each
/// thread has its own, (F - 1) / 2 on average. Nested loops take the
/// innermost's weight.
void countInstructions(const SpecInput &input, LaunchReport &out) {
  const PtxKernel &ptx = out.ptx;
  std::vector<double> weight(size_t(ptx.instructions), 1.0);
  std::vector<int> owner(size_t(ptx.instructions), -1);
  auto elementsPerTrip = [&](const PtxLoop &loop) {
    int streamed = input.op == KernelOp::Quantize ? loop.globalLoadBytes
                                                  : loop.globalStoreBytes;
    return double(streamed) / input.valueBytes;
  };
  // Loops whose bodies overlap without one holding the other are one
  // loop (two back edges to two headers around a shared tail): one whose
  // trips the PTX does not state takes its partner's.
  std::vector<double> stated = ptx.loopStatedTrips;
  std::vector<int> tests = ptx.loopTests;
  stated.resize(ptx.loops.size(), 0);
  tests.resize(ptx.loops.size(), -1);
  for (size_t l = 0; l < ptx.loops.size(); ++l)
    for (size_t m = 0; m < ptx.loops.size() && stated[l] == 0; ++m) {
      const PtxLoop &a = ptx.loops[l], &b = ptx.loops[m];
      bool overlap = a.firstInstruction <= b.lastInstruction &&
                     b.firstInstruction <= a.lastInstruction;
      bool nested = (a.firstInstruction <= b.firstInstruction &&
                     b.lastInstruction <= a.lastInstruction) ||
                    (b.firstInstruction <= a.firstInstruction &&
                     a.lastInstruction <= b.lastInstruction);
      if (m != l && overlap && !nested && ptx.loopStatedTrips[m] > 0) {
        stated[l] = ptx.loopStatedTrips[m];
        tests[l] = tests[m];
      }
    }
  double heaviest = 0;
  for (size_t l = 0; l < ptx.loops.size(); ++l) {
    const PtxLoop &loop = ptx.loops[l];
    double perTrip = elementsPerTrip(loop);
    double unroll = 0;
    std::optional<std::set<int>> buffers = streamedBuffers(input, out, loop);
    bool shared = lanesAdjacent(input, ptx, loop);
    for (const PtxLoop &other : ptx.loops)
      if (&other != &loop && perTrip > 0 &&
          (other.lastInstruction < loop.firstInstruction ||
           (shared && buffers && !buffers->empty() &&
            streamedBuffers(input, out, other) == buffers))) {
        double factor = elementsPerTrip(other) / perTrip;
        if (factor > 1 && factor == std::floor(factor))
          unroll = std::max(unroll, factor);
      }
    double remainderTrips =
        shared ? std::ceil((unroll - 1) / 32) : (unroll - 1) / 2;
    double trips = 1;
    if (perTrip > 0 && out.elementsPerThread > 0)
      trips = unroll > 0 ? std::max(1.0, remainderTrips)
                         : std::max(1.0, out.elementsPerThread / perTrip);
    if (perTrip > 0 && unroll == 0)
      if (std::optional<double> own = attributedTrips(input, out, loop))
        trips = std::max(1.0, *own);
    // Trips the loop's bound states (PtxTrips.h) are what runs, per entry
    // of the loop: times the trips of the innermost loop around it.
    bool reached = size_t(loop.firstInstruction) >= ptx.reached.size() ||
                   ptx.reached[size_t(loop.firstInstruction)];
    if (!reached) {
      trips = 0; // a guard the launch decides skips it
    } else if (stated[l] > 0) {
      trips = stated[l];
      int enclosing = -1;
      for (size_t o = 0; o < l; ++o)
        if (ptx.loops[o].firstInstruction <= loop.firstInstruction &&
            ptx.loops[o].lastInstruction >= loop.lastInstruction &&
            (enclosing < 0 || ptx.loops[o].instructions() <
                                  ptx.loops[size_t(enclosing)].instructions()))
          enclosing = int(o);
      // Two back edges with one test (LLVM's shared latch) are one loop.
      bool sameTest = enclosing >= 0 && tests[l] >= 0 &&
                      tests[l] == tests[size_t(enclosing)];
      if (enclosing >= 0 && !sameTest)
        trips *= out.loopTrips[size_t(enclosing)];
    }
    out.loopElementsPerTrip.push_back(perTrip);
    out.loopTrips.push_back(trips);
    for (int i = loop.firstInstruction; i <= loop.lastInstruction; ++i) {
      int current = owner[size_t(i)];
      if (current < 0 ||
          ptx.loops[size_t(current)].instructions() > loop.instructions()) {
        owner[size_t(i)] = int(l);
        weight[size_t(i)] = trips;
      }
    }
    if (perTrip > 0 && trips * loop.instructions() > heaviest) {
      heaviest = trips * loop.instructions();
      out.mainLoop = int(l);
      out.loopInstructionsPerElement = loop.instructions() / perTrip;
    }
  }
  for (size_t i = 0; i < weight.size() && i < ptx.reached.size(); ++i)
    if (!ptx.reached[i])
      weight[i] = 0;
  out.instructionsPerThread = 0;
  for (double w : weight)
    out.instructionsPerThread += w;
  // Each mma.sync holds its kind's slots; one the table gives no rate for
  // (or of a kind the chip lacks) is charged as f16 m16n8k16.
  out.mmaPerThread = 0;
  out.mmaSlotsPerThread = 0;
  double mostIssued = -1;
  for (size_t j = 0; j < ptx.mmaInstructions.size(); ++j) {
    double issued = weight[size_t(ptx.mmaInstructions[j])];
    std::optional<MmaShape> mma = j < ptx.mmaOpcodes.size()
                                      ? mmaShapeOf(ptx.mmaOpcodes[j])
                                      : std::nullopt;
    double slots = mma ? mmaIssueSlots(input.chip, *mma) : 0;
    if (slots <= 0)
      slots = input.chip.mmaSyncIssueSlots;
    out.mmaPerThread += issued;
    out.mmaSlotsPerThread += issued * slots;
    if (mma && issued > mostIssued) {
      mostIssued = issued;
      out.mma = mma;
    }
  }

  // Lane stride: in a launch whose grid grows with the tensor (not a
  // grid-stride loop), a thread that handles E > 1 elements handles E
  // consecutive ones, so adjacent lanes are E values apart; otherwise they
  // are one access apart. Only the streamed side (loads of quantize, stores
  // of dequantize) is given the stride; other accesses count as coalesced.
  bool chunked = out.elementsPerThread > 1 && !out.launch.gridStride;
  out.laneStrideBytes = chunked ? out.elementsPerThread * input.valueBytes : 0;
  double accesses = 0, wavefronts = 0;
  for (const PtxKernel::Access &access : ptx.accesses) {
    bool streamedSide = access.load == (input.op == KernelOp::Quantize);
    double stride = std::max(double(access.bits) / 8,
                             streamedSide ? out.laneStrideBytes : 0.0);
    double perWarp = access.warpLines > 0
                         ? double(access.warpLines)
                         : std::min(32.0, std::ceil(32.0 * stride / 128.0));
    accesses += weight[size_t(access.instruction)];
    wavefronts += weight[size_t(access.instruction)] * perWarp;
  }
  out.wavefrontsPerAccess = accesses > 0 ? wavefronts / accesses : 0;
  out.l1WavefrontsPerThread = wavefronts;
  if (out.elementsPerThread > 0)
    out.instructionsPerElement =
        out.instructionsPerThread / out.elementsPerThread;
}

/// Loops of one body, where loops whose bodies overlap without one holding
/// the other are one: the code layout put a shared tail between two back
/// edges to two headers (both LLVM's PTX and ptxas's SASS do). A region's
/// trip streams the bytes of every streamed access in it.
struct LoopRegion {
  int first = 0, last = 0;
  /// Global bytes a trip streams, loads, and loads and stores.
  double streamedBytes = 0, loadBytes = 0, movedBytes = 0;
  std::vector<size_t> loops;
};

std::vector<LoopRegion>
loopRegions(const std::vector<CodeLoop> &loops,
            const std::function<std::array<double, 3>(int, int)> &bytesOf) {
  std::vector<size_t> order(loops.size());
  for (size_t l = 0; l < order.size(); ++l)
    order[l] = l;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return loops[a].firstInstruction < loops[b].firstInstruction;
  });
  std::vector<LoopRegion> regions;
  for (size_t l : order) {
    const CodeLoop &loop = loops[l];
    LoopRegion *overlapped = nullptr;
    for (LoopRegion &region : regions)
      if (region.first < loop.firstInstruction &&
          loop.firstInstruction <= region.last &&
          region.last < loop.lastInstruction)
        overlapped = &region;
    if (overlapped) {
      overlapped->last = loop.lastInstruction;
      overlapped->loops.push_back(l);
    } else {
      regions.push_back(
          {loop.firstInstruction, loop.lastInstruction, 0, 0, 0, {l}});
    }
  }
  for (LoopRegion &region : regions) {
    std::array<double, 3> bytes = bytesOf(region.first, region.last);
    region.streamedBytes = bytes[0];
    region.loadBytes = bytes[1];
    region.movedBytes = bytes[2];
  }
  return regions;
}

/// How many PTX trips one trip of the SASS loop region runs, from the
/// bytes each moves per trip: ptxas's unroll multiplies a trip's bytes by
/// a whole number, so a SASS trip with more bytes but not a whole multiple
/// holds code that not every trip runs (a guarded copy of a tail, say),
/// and runs one PTX trip; fewer bytes keep their ratio.
double ptxTripsPerSassTrip(double ptxBytes, double sassBytes) {
  double ratio = sassBytes / ptxBytes;
  if (ratio <= 1.0)
    return ratio;
  double whole = std::round(ratio);
  return std::abs(ratio - whole) <= 0.02 * whole ? whole : 1.0;
}

/// The SASS's instructions per thread, loops weighted by their trips. The
/// k-th streaming loop region of the SASS is the k-th of the PTX (ptxas
/// keeps the loops' order) and streams the same bytes per thread in all,
/// so it runs the PTX region's trips times the PTX trip's streamed bytes
/// over its own (ptxas may unroll further). Where ptxas made a different
/// number of streaming regions (it unrolled one away), each streams the
/// thread's elements, the PTX's first rule. Loops that stream nothing run
/// once; nested regions take the innermost's weight, as in
/// countInstructions.
void weighSass(const SpecInput &input, LaunchReport &out) {
  const SassKernel &sass = *out.sass;
  bool quantize = input.op == KernelOp::Quantize;
  std::vector<LoopRegion> ptxRegions =
      loopRegions(out.ptx.loops, [&](int first, int last) {
        std::array<double, 3> bytes{};
        for (const PtxKernel::Access &access : out.ptx.accesses)
          if (access.instruction >= first && access.instruction <= last) {
            if (access.load == quantize)
              bytes[0] += access.bits / 8.0;
            if (access.load)
              bytes[1] += access.bits / 8.0;
            bytes[2] += access.bits / 8.0;
          }
        return bytes;
      });
  std::vector<LoopRegion> sassRegions = loopRegions(sass.loops, [&](int first,
                                                                    int last) {
    std::array<double, 3> bytes{};
    for (int i = first; i <= last && size_t(i) < sass.globalBytes.size(); ++i) {
      auto [load, store] = sass.globalBytes[size_t(i)];
      bytes[0] += quantize ? load : store;
      bytes[1] += load;
      bytes[2] += load + store;
    }
    return bytes;
  });
  auto streaming = [](const std::vector<LoopRegion> &regions) {
    std::vector<const LoopRegion *> found;
    for (const LoopRegion &region : regions)
      if (region.streamedBytes > 0)
        found.push_back(&region);
    return found;
  };
  std::vector<const LoopRegion *> ptxStreaming = streaming(ptxRegions);
  std::vector<const LoopRegion *> sassStreaming = streaming(sassRegions);
  bool paired = ptxStreaming.size() == sassStreaming.size();
  // A PTX region's trips: its loops' most (0 when a guard skips them all).
  auto tripsOf = [&](const LoopRegion &ptx) {
    double trips = 0;
    for (size_t l : ptx.loops)
      trips = std::max(trips, out.loopTrips[l]);
    return trips;
  };
  std::vector<double> regionTrips(sassRegions.size(), 1.0);
  // Where ptxas kept every region, the k-th of the SASS is the k-th of the
  // PTX whether it streams or not: it runs the PTX's trips, over ptxas's
  // unroll where the global bytes per trip show one.
  if (ptxRegions.size() == sassRegions.size())
    for (size_t k = 0; k < sassRegions.size(); ++k) {
      double trips = tripsOf(ptxRegions[k]);
      if (ptxRegions[k].movedBytes > 0 && sassRegions[k].movedBytes > 0)
        trips /= ptxTripsPerSassTrip(ptxRegions[k].movedBytes,
                                     sassRegions[k].movedBytes);
      regionTrips[k] = trips > 0 ? std::max(1.0, trips) : 0;
    }
  for (size_t k = 0; k < sassStreaming.size(); ++k) {
    const LoopRegion &region = *sassStreaming[k];
    double trips =
        out.elementsPerThread * input.valueBytes / region.streamedBytes;
    bool skipped = false;
    if (paired) {
      const LoopRegion &ptx = *ptxStreaming[k];
      double ptxTrips = tripsOf(ptx);
      skipped = ptxTrips == 0;
      trips = std::max(1.0, ptxTrips) /
              ptxTripsPerSassTrip(ptx.streamedBytes, region.streamedBytes);
      if (std::find(ptx.loops.begin(), ptx.loops.end(), size_t(out.mainLoop)) !=
          ptx.loops.end())
        out.sassMainLoopLoadBytes = region.loadBytes;
    }
    regionTrips[size_t(&region - sassRegions.data())] =
        skipped ? 0 : std::max(1.0, trips);
  }
  if (!paired && sass.criticalLoop >= 0)
    out.sassMainLoopLoadBytes =
        sass.loops[size_t(sass.criticalLoop)].globalLoadBytes;
  // Straight-line code a guard the launch decides skips (PtxTrips.h's
  // lanesReaching) has no SASS counterpart the report can name; ptxas
  // keeps the code's blocks, so the SASS's straight-line code runs the
  // share of the PTX's that warp 0 reaches.
  double straight = 0, straightReached = 0;
  for (size_t i = 0; i < out.ptx.reached.size(); ++i) {
    bool inLoop = false;
    for (const PtxLoop &loop : out.ptx.loops)
      inLoop |=
          loop.firstInstruction <= int(i) && int(i) <= loop.lastInstruction;
    if (!inLoop) {
      straight += 1;
      straightReached += out.ptx.reached[i];
    }
  }
  double straightShare = straight > 0 ? straightReached / straight : 1.0;
  out.sassLoopTrips.assign(sass.loops.size(), 1.0);
  std::vector<double> weight(sass.classes.size(), straightShare);
  std::vector<int> owner(sass.classes.size(), -1);
  for (size_t r = 0; r < sassRegions.size(); ++r) {
    const LoopRegion &region = sassRegions[r];
    for (size_t l : region.loops)
      out.sassLoopTrips[l] = regionTrips[r];
    for (int i = region.first; i <= region.last && size_t(i) < weight.size();
         ++i) {
      int current = owner[size_t(i)];
      if (current < 0 || sassRegions[size_t(current)].last -
                                 sassRegions[size_t(current)].first >
                             region.last - region.first) {
        owner[size_t(i)] = int(r);
        weight[size_t(i)] = regionTrips[r];
      }
    }
  }
  out.fromSass = true;
  for (size_t i = 0; i < weight.size(); ++i) {
    // A diverged warp's fallback, a slow path: not run (SassAnalysis.h).
    if (i < sass.coldPath.size() && sass.coldPath[i])
      continue;
    out.sassPerThread += weight[i];
    out.pipesPerThread.add(sass, i, weight[i]);
    if (sass.classes[i] == "tensor")
      out.tensorPerThread += weight[i];
  }
  // The fields the report prints, per pipe (IssuePipes.h).
  out.fp32PerThread = out.pipesPerThread.fmaPipe;
  out.mufuPerThread = out.pipesPerThread.mufu;
  out.intPerThread = out.pipesPerThread.alu;
  out.conversionPerThread = out.pipesPerThread.conversion;
}

/// The ASSUMED constants of `row` a launch's time rests on: the launch
/// overhead always, and those of the term that binds (`work`).
std::vector<std::string> assumptionsOf(const ChipConstants &row,
                                       const LaunchReport &out, double work) {
  std::vector<std::string> assumed;
  auto rest = [&](const Sourced &constant, std::string text) {
    if (constant.assumed)
      assumed.push_back(std::move(text));
  };
  rest(row.launchOverheadSeconds,
       fmt::format("launch overhead {:.1f} us",
                   row.launchOverheadSeconds.value * 1e6));
  if (work < row.launchOverheadSeconds.value)
    return assumed;
  if (work == out.atomicSeconds) {
    rest(row.contendedAtomicSeconds,
         fmt::format("contended atomic {:.1f} ns",
                     row.contendedAtomicSeconds.value * 1e9));
  } else if (work == out.l1Seconds || work == out.issueSeconds) {
    rest(row.clockHz, fmt::format("clock {:.2f} GHz", row.clockHz.value / 1e9));
    if (work == out.l1Seconds)
      rest(row.l1WavefrontsPerClock, "L1 128 B per clock per SM");
    else if (out.fromSass ? out.tensorPerThread > 0 : out.mmaPerThread > 0) {
      MmaKind kind = out.mma ? out.mma->kind : MmaKind::F16;
      const Sourced &peak = tensorMacsPerClock(row, kind);
      rest(peak, fmt::format("{} tensor peak {:.0f} multiply-adds per clock "
                             "per SM",
                             mmaKindName(kind), peak.value));
      rest(row.mmaSyncShareOfPeak,
           fmt::format("mma.sync at {:.0f}% of the tensor peak",
                       100 * row.mmaSyncShareOfPeak.value));
    }
    if (work == out.issueSeconds && out.issueBinding == "fp32 pipe")
      rest(row.fp32LanesPerClock,
           fmt::format("FP32 {:.0f} lanes per clock per SM",
                       row.fp32LanesPerClock.value));
    else if (work == out.issueSeconds && out.issueBinding == "MUFU pipe")
      rest(row.mufuLanesPerClock,
           fmt::format("MUFU {:.0f} lanes per clock per SM",
                       row.mufuLanesPerClock.value));
    else if (work == out.issueSeconds && out.issueBinding == "INT32 pipe")
      rest(row.int32LanesPerClock,
           fmt::format("INT32 {:.0f} lanes per clock per SM",
                       row.int32LanesPerClock.value));
    else if (work == out.issueSeconds && out.issueBinding == "conversion pipe")
      rest(row.conversionLanesPerClock,
           fmt::format("conversions {:.0f} per clock per SM",
                       row.conversionLanesPerClock.value));
  } else if (out.limiter.starts_with("memory-level parallelism")) {
    rest(row.memoryLatencySeconds,
         fmt::format("DRAM latency {:.0f} ns",
                     row.memoryLatencySeconds.value * 1e9));
  }
  return assumed;
}

/// 2 where a global load of the main loop (the whole body without one)
/// has an address computed from a global load of the same trip, else 1.
int latenciesPerTrip(const LaunchReport &out) {
  const PtxKernel &ptx = out.ptx;
  int first = 0, last = ptx.instructions - 1;
  if (out.mainLoop >= 0) {
    first = ptx.loops[size_t(out.mainLoop)].firstInstruction;
    last = ptx.loops[size_t(out.mainLoop)].lastInstruction;
  }
  for (const PtxKernel::Access &access : ptx.accesses)
    if (access.load && access.instruction >= first &&
        access.instruction <= last && access.feedingLoad >= first &&
        access.feedingLoad < access.instruction)
      return 2;
  return 1;
}

void estimateTime(const SpecInput &input, LaunchReport &out) {
  const ChipModel &chip = input.chip;
  int64_t threadsPerBlock = product(out.launch.block);
  int64_t gridBlocks = product(out.launch.grid);
  int64_t warpsPerBlock = (threadsPerBlock + 31) / 32;
  int64_t residentBlocks =
      std::min<int64_t>(gridBlocks, int64_t(chip.smCount) * out.blocksPerSm);
  if (residentBlocks < int64_t(chip.smCount) * out.blocksPerSm)
    out.occupancyLimiter +=
        fmt::format("; the grid fills {:.0f}% of the GPU's block slots",
                    100.0 * double(residentBlocks) /
                        double(int64_t(chip.smCount) * out.blocksPerSm));
  int64_t residentThreads = residentBlocks * warpsPerBlock * 32;

  // Bytes each thread has in flight: one trip of the main streaming loop
  // (ptxas hoists a trip's independent loads ahead of their uses), or
  // every load of a straight-line body.
  double loadBytesPerThread = out.ptx.globalLoadBytes;
  if (out.mainLoop >= 0 &&
      out.ptx.loops[size_t(out.mainLoop)].globalLoadBytes > 0)
    loadBytesPerThread = out.ptx.loops[size_t(out.mainLoop)].globalLoadBytes;
  // The SASS says what ptxas issues: its counterpart of the main loop (an
  // unroll puts more loads in a trip), or every load of a loopless body.
  if (out.fromSass) {
    if (out.sassMainLoopLoadBytes > 0) {
      loadBytesPerThread = out.sassMainLoopLoadBytes;
    } else if (out.mainLoop < 0) {
      loadBytesPerThread = 0;
      for (const auto &[bits, count] : out.sass->loadWidths)
        loadBytesPerThread += bits / 8.0 * count;
    }
  }
  out.bytesInFlight = double(residentThreads) * loadBytesPerThread;

  int64_t readBytes = 0;
  for (int slot : out.ptx.parametersRead)
    if (size_t(slot) < out.launch.bufferOfParameter.size())
      if (int buffer = out.launch.bufferOfParameter[size_t(slot)];
          buffer >= 0 && !input.buffers[size_t(buffer)].written)
        readBytes += input.buffers[size_t(buffer)].bytes;
  double peak = chip.hbmBytesPerSecond;
  // A load whose address waits for another load of the same trip (a
  // paged cache's row after its block-table entry) issues a latency later:
  // the trip holds its bytes in flight for two latencies. The table word
  // is charged DRAM's latency (the chip table has no L2 latency; a small
  // table is likely L2-resident, so this is an upper bound).
  out.latenciesPerTrip = latenciesPerTrip(out);
  double loadBandwidth =
      std::min(peak, out.bytesInFlight /
                         (chip.memoryLatencySeconds * out.latenciesPerTrip));
  out.memorySeconds = double(out.bytesMoved) / peak;
  if (readBytes > 0 && loadBandwidth > 0)
    out.memorySeconds =
        std::max(out.memorySeconds, double(readBytes) / loadBandwidth);

  int64_t activeSms = std::min<int64_t>(chip.smCount, gridBlocks);
  // Clocks of one SM per warp: the dispatch of every instruction (an
  // mma.sync holds its slots), or, from the SASS, the busiest pipe where
  // it is slower (a warp instruction of a pipe of L lanes takes 32 / L).
  double clocksPerWarp =
      (out.instructionsPerThread + out.mmaSlotsPerThread - out.mmaPerThread) /
      chip.issuePerSmPerClock;
  out.issueBinding = "dispatch";
  if (out.fromSass) {
    // A SASS tensor instruction holds the PTX mma.sync's slots on average.
    double slots = out.mmaPerThread > 0
                       ? out.mmaSlotsPerThread / out.mmaPerThread
                       : double(chip.mmaSyncIssueSlots);
    clocksPerWarp = (out.sassPerThread + (slots - 1) * out.tensorPerThread) /
                    chip.issuePerSmPerClock;
    BusiestPipe busiest =
        busiestPipe(out.pipesPerThread, *chip.constants, clocksPerWarp);
    clocksPerWarp = busiest.clocks;
    out.issueBinding = std::string(busiest.name);
  }
  out.issueSeconds = double(out.threads) / 32.0 * clocksPerWarp /
                     (double(activeSms) * chip.clockHz);
  // Atomics as executed: per block, each atomic by the threads its guards
  // let through (tid.x == 0: one), times the block's y and z extent.
  out.atomicsPerBlock = 0;
  int64_t blockX = std::min<int64_t>(out.launch.block[0], kMaxBlockThreadsX);
  for (const ThreadSet &threads : out.ptx.atomicThreads) {
    int64_t running = 0;
    for (int64_t x = 0; x < blockX; ++x)
      running += threads[size_t(x)];
    out.atomicsPerBlock += running * out.launch.block[1] * out.launch.block[2];
  }
  out.atomicsExecuted = out.atomicsPerBlock * gridBlocks;
  out.atomicSeconds = double(out.atomicsExecuted) * chip.contendedAtomicSeconds;
  out.l1Seconds =
      double(out.threads) / 32.0 * out.l1WavefrontsPerThread /
      (double(activeSms) * chip.l1WavefrontsPerSmPerClock * chip.clockHz);

  double work = std::max(
      {out.memorySeconds, out.issueSeconds, out.atomicSeconds, out.l1Seconds});
  out.seconds = work + chip.launchOverheadSeconds;
  if (work < chip.launchOverheadSeconds)
    out.limiter = "launch overhead (tiny kernel)";
  else if (work == out.atomicSeconds)
    out.limiter =
        fmt::format("contended atomics ({} executed: {} per block x {} blocks)",
                    out.atomicsExecuted, out.atomicsPerBlock, gridBlocks);
  else if (work == out.l1Seconds)
    out.limiter = fmt::format("uncoalesced access ({:.1f} L1 wavefronts per "
                              "warp access, lanes {:.0f} "
                              "B apart)",
                              out.wavefrontsPerAccess, out.laneStrideBytes);
  else if (work == out.issueSeconds && !out.fromSass)
    out.limiter = fmt::format("instruction issue ({:.1f} instr/elem)",
                              out.instructionsPerElement);
  else if (work == out.issueSeconds)
    out.limiter = fmt::format(
        "instruction issue ({:.1f} SASS instr/elem{})",
        out.elementsPerThread > 0 ? out.sassPerThread / out.elementsPerThread
                                  : out.sassPerThread,
        out.issueBinding == "dispatch" ? "" : "; the " + out.issueBinding);
  else if (loadBandwidth < peak && readBytes > 0)
    out.limiter = fmt::format(
        "memory-level parallelism ({} in flight, {} needed{})",
        bytesText(out.bytesInFlight),
        bytesText(peak * chip.memoryLatencySeconds * out.latenciesPerTrip),
        out.latenciesPerTrip > 1
            ? "; each trip's loads wait for a loaded address"
            : "");
  else
    out.limiter = "HBM bandwidth";
  if (chip.constants)
    out.assumptions = assumptionsOf(*chip.constants, out, work);
}

} // namespace

Expected<SpecReport> analyzeSpec(const SpecInput &input) {
  Expected<std::vector<PtxKernel>> kernels = analyzePtx(input.ptx);
  if (!kernels)
    return kernels.error();
  if (input.elements <= 0)
    return makeError(ErrorCode::InvalidArgument,
                     "report: the reference size has no elements");
  SpecReport report;
  report.title = input.title;
  report.chip = input.chip.chip;
  std::vector<SassKernel> sass = analyzeSass(input.sass);
  report.sassUnavailable = input.sassUnavailable;
  if (!input.sass.empty() && sass.empty() && report.sassUnavailable.empty())
    report.sassUnavailable = "nvdisasm printed no code section";
  int valueBuffer = -1;
  for (size_t b = 0; b < input.buffers.size(); ++b)
    if (input.buffers[b].role ==
        (input.op == KernelOp::Quantize ? "input" : "output"))
      valueBuffer = int(b);
  for (const KernelLaunch &launch : input.launches) {
    const PtxKernel *ptx = findKernel(*kernels, launch.kernel);
    if (!ptx)
      return makeError(ErrorCode::InvalidArgument,
                       "report: launch of '" + launch.kernel +
                           "', which the PTX does not define");
    for (int buffer : launch.bufferOfParameter)
      if (buffer >= int(input.buffers.size()))
        return makeError(ErrorCode::InvalidArgument,
                         fmt::format("report: a parameter of '{}' names "
                                     "buffer {}, but the spec has {}",
                                     launch.kernel, buffer,
                                     input.buffers.size()));
    LaunchReport out;
    out.launch = launch;
    out.ptx = *ptx;
    // The launch's scalar arguments and block size make more lanes'
    // addresses and loop bounds known.
    std::set<int> bufferSlots;
    for (size_t slot = 0; slot < launch.bufferOfParameter.size(); ++slot)
      if (launch.bufferOfParameter[slot] >= 0)
        bufferSlots.insert(int(slot));
    Expected<std::vector<PtxKernel>> bound = analyzePtx(
        input.ptx, {{launch.kernel, launch.parameterValues}},
        {{launch.kernel, launch.block}}, {{launch.kernel, bufferSlots}});
    if (!bound)
      return bound.error();
    out.ptx = *findKernel(*bound, launch.kernel);
    for (const runtime::KernelResources &resources : input.resources)
      if (resources.function == launch.kernel)
        out.resources = resources;
    for (const SassKernel &kernel : sass)
      if (kernel.name == launch.kernel)
        out.sass = kernel;
    if (!sass.empty() && !out.sass && report.sassUnavailable.empty())
      report.sassUnavailable = "no SASS of " + launch.kernel;
    out.threads = product(launch.grid) * product(launch.block);
    std::vector<bool> moved(input.buffers.size(), false);
    for (int slot : ptx->parametersRead)
      if (size_t(slot) < launch.bufferOfParameter.size())
        if (int buffer = launch.bufferOfParameter[size_t(slot)]; buffer >= 0)
          moved[size_t(buffer)] = true;
    for (size_t b = 0; b < moved.size(); ++b)
      if (moved[b])
        out.bytesMoved += input.buffers[b].bytes;
    if (valueBuffer >= 0 && moved[size_t(valueBuffer)] && out.threads > 0)
      out.elementsPerThread = double(input.elements) / double(out.threads);
    countInstructions(input, out);
    if (out.sass && input.chip.constants)
      weighSass(input, out);
    computeOccupancy(input.chip, launch, out.resources, out);
    estimateTime(input, out);
    for (const std::string &assumption : out.assumptions)
      if (std::find(report.assumptions.begin(), report.assumptions.end(),
                    assumption) == report.assumptions.end())
        report.assumptions.push_back(assumption);
    report.launches.push_back(std::move(out));
  }
  summarizeSpec(input, report);
  return report;
}

void summarizeSpec(const SpecInput &input, SpecReport &report) {
  int64_t totalBytes = 0;
  report.seconds = 0;
  for (const LaunchReport &launch : report.launches) {
    totalBytes += launch.bytesMoved;
    report.seconds += launch.seconds;
  }
  double elements = double(input.elements);
  report.bytesPerElement = double(totalBytes) / elements;
  report.minimumBytesPerElement = input.minimumBytes / elements;
  report.unfusedBytesPerElement = input.unfusedBytes / elements;
  report.prologueKernels = input.prologueKernels;
  double peak = input.chip.hbmBytesPerSecond;
  report.bandwidthFraction =
      report.seconds > 0 ? input.minimumBytes / peak / report.seconds : 0;

  // The limiting factor: the largest loss against minimumBytes / peak.
  struct Loss {
    double seconds;
    std::string name;
  };
  std::vector<Loss> losses;
  losses.push_back(
      {(double(totalBytes) - input.minimumBytes) / peak,
       fmt::format("extra traffic ({:.2f} B/elem moved, {:.2f} "
                   "minimum)",
                   report.bytesPerElement, report.minimumBytesPerElement)});
  losses.push_back(
      {double(report.launches.size()) * input.chip.launchOverheadSeconds,
       fmt::format("launch overhead ({} launches)", report.launches.size())});
  double slowest = -1;
  for (size_t i = 0; i < report.launches.size(); ++i) {
    const LaunchReport &launch = report.launches[i];
    if (launch.seconds > slowest) {
      slowest = launch.seconds;
      report.mainLaunch = int(i);
    }
    double work = launch.seconds - input.chip.launchOverheadSeconds;
    losses.push_back({work - double(launch.bytesMoved) / peak,
                      launch.limiter + " in " + launch.launch.kernel});
  }
  const Loss &largest = *std::max_element(
      losses.begin(), losses.end(),
      [](const Loss &a, const Loss &b) { return a.seconds < b.seconds; });
  report.limiter =
      report.bandwidthFraction >= 0.95 ? "HBM bandwidth" : largest.name;
}

void addSass(SpecInput &input, std::string_view cubin) {
  Expected<std::string> text = disassembleCubin(cubin);
  input.sass = text ? *text : std::string();
  input.sassUnavailable = text ? std::string() : text.error().message;
}

double minimumBytes(const Scheme &scheme, int valueBytes, int64_t rows,
                    int64_t cols) {
  double bytes = 0;
  for (const Buffer &buffer :
       formatBuffers(scheme, KernelOp::Quantize, valueBytes, rows, cols))
    bytes += double(buffer.bytes);
  return bytes;
}

std::vector<Buffer> formatBuffers(const Scheme &scheme, KernelOp op,
                                  int valueBytes, int64_t rows, int64_t cols) {
  bool quantize = op == KernelOp::Quantize;
  Shape2D codes = codesShape(scheme, rows, cols);
  Shape2D scales = scaleShape(scheme, rows, cols);
  int codeBytes = std::max(1, containerBits(scheme) / 8);
  int64_t scaleCount = scales.rows * scales.cols;
  std::vector<Buffer> buffers;
  buffers.push_back(
      {quantize ? "input" : "output", rows * cols * valueBytes, !quantize});
  buffers.push_back({"codes", codes.rows * codes.cols * codeBytes, quantize});
  buffers.push_back({"scales",
                     scaleCount * scaleStorageBits(scheme.scale.type) / 8,
                     quantize && scheme.scale.mode == ScaleMode::Dynamic});
  buffers.push_back(
      {"zeros", scheme.scale.zeroPoint ? scaleCount : 0, quantize});
  buffers.push_back({"global",
                     scheme.scale.globalScale != GlobalScale::None ? 4 : 0,
                     quantize});
  return buffers;
}

std::vector<KernelLaunch> referenceKernelLaunches(KernelOp op, int groupSize,
                                                  bool needsTensorAmax,
                                                  int64_t rows, int64_t cols) {
  // Buffers as formatBuffers: 0 value, 1 codes, 2 scales, 3 zeros, 4 global,
  // then 5 the amax scratch word.
  std::vector<KernelLaunch> launches;
  int64_t count = rows * cols;
  if (op == KernelOp::Dequantize) {
    // lowbit_ref_dequantize(codes, rows, cols, scales, zeros, global, out):
    // one thread per element in blocks of 128.
    KernelLaunch launch{"lowbit_ref_dequantize",
                        "1 thread/element, block 128",
                        {(count + 127) / 128, 1, 1},
                        {128, 1, 1},
                        0,
                        false,
                        {1, -1, -1, 2, 3, 4, 0},
                        {}};
    launches.push_back(launch);
    return launches;
  }
  if (needsTensorAmax) {
    // lowbit_ref_amax(x, count, amaxBits): grid-stride, the launch the GPU
    // oracle test uses (ReferenceKernelsGpuTest): min(ceil(n/256), 1024)
    // blocks of 256.
    launches.push_back({"lowbit_ref_amax",
                        "grid-stride, min(ceil(n/256), 1024) x 256",
                        {std::min<int64_t>((count + 255) / 256, 1024), 1, 1},
                        {256, 1, 1},
                        0,
                        /*gridStride=*/true,
                        {0, -1, 5},
                        {}});
  }
  int64_t threads =
      groupSize == 0 ? count : rows * ((cols + groupSize - 1) / groupSize);
  // lowbit_ref_quantize(x, rows, cols, amaxBits, codes, scales, zeros,
  // global): quantizeThreads() threads in blocks of 128.
  launches.push_back(
      {"lowbit_ref_quantize",
       groupSize == 0
           ? "1 thread/element, block 128"
           : fmt::format("1 thread/group of {}, block 128", groupSize),
       {(threads + 127) / 128, 1, 1},
       {128, 1, 1},
       0,
       false,
       {0, -1, -1, needsTensorAmax ? 5 : -1, 1, 2, 3, 4},
       {}});
  return launches;
}

std::string widthsText(const std::map<int, int> &widths) {
  std::string text;
  for (const auto &[bits, count] : widths)
    text += fmt::format("{}{}b x{}", text.empty() ? "" : " ", bits, count);
  return text.empty() ? "-" : text;
}

namespace {

std::string resourceText(int value) {
  return value < 0 ? "?" : std::to_string(value);
}

std::string spillText(const runtime::KernelResources &resources) {
  if (resources.spillStoreBytes < 0)
    return "?";
  return fmt::format("{}/{} B", resources.spillStoreBytes,
                     resources.spillLoadBytes);
}

std::string perElementText(double value) {
  return value > 0 ? fmt::format("{:.1f}", value) : "-";
}

/// The SASS line of a launch, or why there is none.
std::string sassText(const LaunchReport &launch,
                     const std::string &unavailable) {
  if (!launch.sass)
    return fmt::format("    sass      unavailable ({}); the counts are PTX\n",
                       unavailable.empty() ? "no disassembly" : unavailable);
  const SassKernel &sass = *launch.sass;
  std::string atomics;
  for (const auto &[opcode, count] : sass.atomics)
    atomics +=
        fmt::format("{}{} x{}", atomics.empty() ? "" : " ", opcode, count);
  std::string loop = "no loop";
  if (sass.criticalLoop >= 0) {
    const SassLoop &critical = sass.loops[size_t(sass.criticalLoop)];
    loop = fmt::format("critical loop {} instr, {} B loaded and {} B stored "
                       "per trip",
                       critical.instructions(), critical.globalLoadBytes,
                       critical.globalStoreBytes);
  }
  return fmt::format(
      "    sass      {} instr ({}); global loads {}, stores {}; atomics {}; "
      "shared {}/{} B; local {}/{} (spills, stack); R0-R{}; {}\n",
      sass.instructions, sassMixText(sass), widthsText(sass.loadWidths),
      widthsText(sass.storeWidths), atomics.empty() ? "-" : atomics,
      sass.sharedLoadBytes, sass.sharedStoreBytes, sass.localLoads,
      sass.localStores, sass.highestRegister, loop);
}

/// What the issue term counted: the SASS weighted by its loops' trips, or
/// the PTX where there is no SASS.
std::string issueText(const LaunchReport &launch) {
  if (!launch.fromSass)
    return fmt::format("    issue     from PTX (no SASS): {:.0f} instr/thread, "
                       "bound by dispatch\n",
                       launch.instructionsPerThread);
  std::string trips;
  for (double t : launch.sassLoopTrips)
    trips += fmt::format("{}{:.1f}", trips.empty() ? "" : ", ", t);
  return fmt::format(
      "    issue     from SASS: {:.0f} instr/thread (FMA {:.0f} of them "
      "IMAD {:.0f}, MUFU {:.0f}, INT32 {:.0f}, tensor {:.0f}, conversion "
      "{:.0f}); loop trips {}; bound by {}\n",
      launch.sassPerThread, launch.fp32PerThread,
      launch.pipesPerThread.fmaInteger, launch.mufuPerThread,
      launch.intPerThread, launch.tensorPerThread, launch.conversionPerThread,
      trips.empty() ? "-" : trips, launch.issueBinding);
}

} // namespace

std::string formatReportText(const SpecReport &report) {
  std::string text = fmt::format(
      "{} on {}: {} launch(es), {:.2f} B/elem moved (minimum {:.2f}), "
      "estimated {:.0f}% of HBM bandwidth, limited by {}\n",
      report.title, report.chip, report.launches.size(), report.bytesPerElement,
      report.minimumBytesPerElement, 100 * report.bandwidthFraction,
      report.limiter);
  if (report.prologueKernels > 0)
    text += fmt::format(
        "  fused     {} launch(es), minimum {:.2f} B/elem; unfused {} "
        "prologue kernel(s) + {} launch(es), minimum {:.2f} B/elem "
        "({:.2f}x)\n",
        report.launches.size(), report.minimumBytesPerElement,
        report.prologueKernels, report.launches.size(),
        report.unfusedBytesPerElement,
        report.unfusedBytesPerElement / report.minimumBytesPerElement);
  if (!report.assumptions.empty()) {
    std::string assumed;
    for (const std::string &assumption : report.assumptions)
      assumed += (assumed.empty() ? "" : ", ") + assumption;
    text += fmt::format("  assumes   {} (ASSUMED in the chip table; the "
                        "other constants have sources)\n",
                        assumed);
  }
  for (const LaunchReport &launch : report.launches) {
    const auto &g = launch.launch.grid, &b = launch.launch.block;
    text += fmt::format("  {}\n", launch.launch.kernel);
    text += fmt::format("    policy    {}\n", launch.launch.policy);
    text += fmt::format("    launch    grid {}x{}x{}, block {}x{}x{}, {} "
                        "threads, {:.2f} elem/thread\n",
                        g[0], g[1], g[2], b[0], b[1], b[2], launch.threads,
                        launch.elementsPerThread);
    text += fmt::format(
        "    global    loads {}, stores {}{}{}\n",
        widthsText(launch.ptx.loadWidths), widthsText(launch.ptx.storeWidths),
        launch.ptx.genericAccesses
            ? fmt::format(" ({} generic)", launch.ptx.genericAccesses)
            : "",
        launch.latenciesPerTrip > 1
            ? "; dependent loads (an address loaded in the same trip): 2 "
              "latencies per trip"
            : "");
    text += fmt::format(
        "    instr     {} static, {:.0f}/thread, {}/elem, main loop {}/elem "
        "(PTX)\n",
        launch.ptx.instructions, launch.instructionsPerThread,
        perElementText(launch.instructionsPerElement),
        perElementText(launch.loopInstructionsPerElement));
    for (size_t l = 0; l < launch.ptx.loops.size(); ++l)
      text += fmt::format(
          "    loop      instructions {}-{} ({}), {} B loaded and {} B stored "
          "per trip, {:.2f} elem/trip, {:.1f} trips{}\n",
          launch.ptx.loops[l].firstInstruction,
          launch.ptx.loops[l].lastInstruction,
          launch.ptx.loops[l].instructions(),
          launch.ptx.loops[l].globalLoadBytes,
          launch.ptx.loops[l].globalStoreBytes, launch.loopElementsPerTrip[l],
          launch.loopTrips[l], int(l) == launch.mainLoop ? " (main)" : "");
    text += sassText(launch, report.sassUnavailable);
    text += issueText(launch);
    text += fmt::format(
        "    ops       {} atomics ({} cas, {} .sys; executed {} per block, "
        "{} in all), {} shuffles, {} barriers, {} f32 divisions{}\n",
        launch.ptx.atomics, launch.ptx.casAtomics, launch.ptx.sysScopeOps,
        launch.atomicsPerBlock, launch.atomicsExecuted, launch.ptx.shuffles,
        launch.ptx.barriers, launch.ptx.divisions,
        launch.ptx.mmaInstructions.empty()
            ? std::string()
            : fmt::format(
                  ", {} mma.sync ({:.0f}/thread, "
                  "{:.0f} issue slots each)",
                  launch.ptx.mmaInstructions.size(), launch.mmaPerThread,
                  launch.mmaPerThread > 0
                      ? launch.mmaSlotsPerThread / launch.mmaPerThread
                      : double(chipModel(report.chip)->mmaSyncIssueSlots)));
    text += fmt::format(
        "    resources {} registers, spills {}, shared {} B; occupancy {:.0f}% "
        "({} blocks/SM, limited by {})\n",
        resourceText(launch.resources.registers), spillText(launch.resources),
        resourceText(launch.resources.sharedBytes), 100 * launch.occupancy,
        launch.blocksPerSm, launch.occupancyLimiter);
    text += fmt::format("    estimate  {:.1f} us: memory {:.1f}, issue {:.1f}, "
                        "L1 {:.1f}, atomics {:.1f}; {} moved; {}\n",
                        launch.seconds * 1e6, launch.memorySeconds * 1e6,
                        launch.issueSeconds * 1e6, launch.l1Seconds * 1e6,
                        launch.atomicSeconds * 1e6,
                        bytesText(double(launch.bytesMoved)), launch.limiter);
  }
  return text;
}

std::string markdownHeader() {
  return "| kernel | chip | launches | main kernel: block | loads | stores | "
         "instr/elem | regs | spills | occupancy | B/elem (min) | est. % HBM "
         "| limited by |\n"
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
}

/// `text` as one table cell: a fused spec's `|` would end the cell.
static std::string markdownCell(std::string_view text) {
  std::string cell;
  for (char c : text) {
    if (c == '|')
      cell += '\\';
    cell += c;
  }
  return cell;
}

std::string formatReportMarkdownRow(const SpecReport &report) {
  const LaunchReport &main = report.launches[size_t(report.mainLaunch)];
  const auto &b = main.launch.block;
  // A fused spec: the unfused sequence's kernels and minimum beside its own.
  std::string launches = std::to_string(report.launches.size());
  std::string minimum = fmt::format("{:.2f}", report.minimumBytesPerElement);
  if (report.prologueKernels > 0) {
    launches += fmt::format(" (unfused {}+{})", report.prologueKernels,
                            report.launches.size());
    minimum += fmt::format("; unfused {:.2f}", report.unfusedBytesPerElement);
  }
  return fmt::format(
      "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0f}% | {:.2f} "
      "({}) | {:.0f}% | {} |\n",
      markdownCell(report.title), report.chip, launches, b[0] * b[1] * b[2],
      widthsText(main.ptx.loadWidths), widthsText(main.ptx.storeWidths),
      perElementText(main.instructionsPerElement),
      resourceText(main.resources.registers), spillText(main.resources),
      100 * main.occupancy, report.bytesPerElement, minimum,
      100 * report.bandwidthFraction, report.limiter);
}

} // namespace lowbit::report
