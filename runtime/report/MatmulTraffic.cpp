//===- MatmulTraffic.cpp - The quantized-weight matmul in the report ------===//

#include "runtime/report/MatmulTraffic.h"

#include "runtime/report/IssuePipes.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

#include <fmt/format.h>

namespace lowbit::report {

Buffer matmulBuffer(const std::string &name, int64_t bytes, bool written) {
  return {name == "codes" ? "input" : name, bytes, written};
}

void setMatmulTraffic(SpecInput &input, const MatmulShape &shape) {
  // The streamed side is loaded, as in quantize; valueBytes only scales
  // the PTX loops' trips, which the codes' own bytes per trip replace
  // (the loop's address dataflow names the codes buffer).
  input.op = KernelOp::Quantize;
  input.valueBytes = 1;
  input.elements = shape.n * shape.k;
  input.minimumBytes = 0;
  for (const Buffer &buffer : input.buffers)
    input.minimumBytes += double(buffer.bytes);
}

double mmaSyncPeakSeconds(const ChipModel &chip, const MatmulShape &shape,
                          MmaKind kind) {
  double rate = chip.constants ? mmaSyncMacsPerClock(*chip.constants, kind) : 0;
  if (rate <= 0)
    return 0;
  return double(shape.m) * double(shape.n) * double(shape.k) /
         (rate * chip.smCount * chip.clockHz);
}

namespace {

/// The GEMV's row buckets and chunk (lowering/GpuMatmulGemv.cpp,
/// matmul::kChunk): a pass of M rows runs the first bucket >= M.
constexpr int64_t kRowBuckets[] = {1, 4, 16};
constexpr int64_t kChunkWeights = 32, kSlices = 32;

std::string loopMixText(const std::map<std::string, int> &mix) {
  std::string text;
  for (const auto &[kind, count] : mix)
    text += fmt::format("{}{} {}", text.empty() ? "" : ", ", kind, count);
  return text;
}

} // namespace

std::optional<GemvEstimate> estimateGemv(const SpecInput &input,
                                         const LaunchReport &launch,
                                         const MatmulShape &shape,
                                         int codesBytesPerChunk,
                                         int xElementBytes) {
  if (!launch.sass || !input.chip.constants || launch.threads == 0)
    return std::nullopt;
  GemvEstimate out;
  int64_t rows = std::min<int64_t>(shape.m, 16);
  for (int64_t bucket : kRowBuckets)
    if (out.bucket == 0 && bucket >= rows)
      out.bucket = bucket;
  // The launch's warps cover N: each owns N / warps columns (rounded: the
  // last block's warps past N own none).
  double warps = double(launch.threads) / 32;
  out.columnsPerWarp =
      std::max<int64_t>(1, std::llround(double(shape.n) / warps));
  int expected = int(out.columnsPerWarp) * codesBytesPerChunk +
                 int(out.bucket * kChunkWeights * xElementBytes);
  const SassKernel &sass = *launch.sass;
  const SassLoop *chosen = nullptr;
  for (const SassLoop &loop : sass.loops)
    if (loop.globalLoadBytes >= expected &&
        (!chosen || loop.globalLoadBytes < chosen->globalLoadBytes))
      chosen = &loop;
  if (!chosen)
    return std::nullopt;
  out.firstInstruction = chosen->firstInstruction;
  out.loopInstructions = chosen->instructions();
  out.loadBytesPerTrip = chosen->globalLoadBytes;
  double chunksPerTrip =
      std::max(1.0, std::floor(double(chosen->globalLoadBytes) / expected));
  out.weightsPerTrip =
      kChunkWeights * double(out.columnsPerWarp) * chunksPerTrip;
  // A passes of 16 rows each; a lane's chunks are every 32nd of K's.
  int64_t passes = (shape.m + 15) / 16;
  int64_t chunks = (shape.k + kChunkWeights - 1) / kChunkWeights;
  out.tripsPerWarp =
      double(passes) *
      std::ceil(double((chunks + kSlices - 1) / kSlices) / chunksPerTrip);

  // Issue: the loop's SASS per warp trip, by dispatch or by the busiest
  // pipe (MatmulTraffic.h; the sources in docs/matmul-gpu.md).
  PipeCounts pipes;
  for (int i = chosen->firstInstruction; i <= chosen->lastInstruction; ++i) {
    pipes.add(sass, size_t(i), 1.0);
    ++out.loopMix[std::string(sass.classes[size_t(i)])];
  }
  out.fmaPipe = pipes.fmaPipe;
  out.fmaInteger = pipes.fmaInteger;
  out.alu = pipes.alu;
  out.conversion = pipes.conversion;
  BusiestPipe busiest =
      busiestPipe(pipes, *input.chip.constants,
                  double(out.loopInstructions) / input.chip.issuePerSmPerClock);
  double clocksPerTrip = busiest.clocks;
  out.issueBound = std::string(busiest.name);
  int64_t blocks =
      launch.launch.grid[0] * launch.launch.grid[1] * launch.launch.grid[2];
  int64_t activeSms = std::min<int64_t>(input.chip.smCount, blocks);
  int64_t threadsPerBlock =
      launch.launch.block[0] * launch.launch.block[1] * launch.launch.block[2];
  // The busiest SM runs ceil(blocks / SMs) blocks' warps.
  double warpsOnBusiestSm = double((blocks + activeSms - 1) / activeSms) *
                            double(threadsPerBlock) / 32;
  out.issueSeconds =
      warpsOnBusiestSm * out.tripsPerWarp * clocksPerTrip / input.chip.clockHz;

  // Memory: every byte once at peak, or the loads the resident warps keep
  // in flight over the latency, whichever is slower (no more blocks
  // resident than the grid has).
  double peak = input.chip.hbmBytesPerSecond;
  double resident = double(std::min<int64_t>(
                        blocks, int64_t(launch.blocksPerSm) * activeSms)) *
                    double(threadsPerBlock);
  out.bytesInFlight = resident * out.loadBytesPerTrip;
  double loadBandwidth =
      std::min(peak, out.bytesInFlight / input.chip.memoryLatencySeconds);
  out.memorySeconds = input.minimumBytes / loadBandwidth;
  if (out.issueSeconds > out.memorySeconds)
    out.binding = "issue (" + out.issueBound + ")";
  else
    out.binding =
        loadBandwidth < peak ? "memory-level parallelism" : "HBM bandwidth";
  out.seconds = std::max(out.issueSeconds, out.memorySeconds);
  out.fraction = input.minimumBytes / peak / out.seconds;
  out.fractionWithLaunch = input.minimumBytes / peak /
                           (out.seconds + input.chip.launchOverheadSeconds);
  return out;
}

namespace {

/// The bytes of one chunk's codes and of one X value, from the buffers.
std::pair<int, int> chunkAndXBytes(const SpecInput &input,
                                   const MatmulShape &shape) {
  int64_t xBytes = 0, codesBytes = 0;
  for (const Buffer &buffer : input.buffers) {
    if (buffer.role == "x")
      xBytes = buffer.bytes;
    if (buffer.role == "input")
      codesBytes = buffer.bytes;
  }
  if (shape.n * shape.k == 0 || shape.m * shape.k == 0)
    return {0, 0};
  return {int(codesBytes * kChunkWeights / (shape.n * shape.k)),
          int(xBytes / (shape.m * shape.k))};
}

} // namespace

void applyMatmulEstimates(const SpecInput &input, SpecReport &report,
                          const MatmulShape &shape) {
  auto [codesPerChunk, xElementBytes] = chunkAndXBytes(input, shape);
  for (LaunchReport &launch : report.launches) {
    if (launch.mmaPerThread > 0 || launch.tensorPerThread > 0)
      continue;
    std::optional<GemvEstimate> gemv =
        estimateGemv(input, launch, shape, codesPerChunk, xElementBytes);
    if (!gemv)
      continue;
    launch.memorySeconds = gemv->memorySeconds;
    launch.issueSeconds = gemv->issueSeconds;
    launch.l1Seconds = 0;
    launch.atomicSeconds = 0;
    launch.seconds = gemv->seconds + input.chip.launchOverheadSeconds;
    launch.limiter = fmt::format("{} (the GEMV's loop of {} rows)",
                                 gemv->binding, gemv->bucket);
  }
  summarizeSpec(input, report);
}

std::string matmulInputsText(const SpecInput &input, const SpecReport &report,
                             const MatmulShape &shape) {
  std::string text = fmt::format("  model inputs (M={} N={} K={}): HBM bytes",
                                 shape.m, shape.n, shape.k);
  int64_t xBytes = 0;
  for (const Buffer &buffer : input.buffers) {
    text += fmt::format(
        " {}={}", buffer.role == "input" ? "codes" : buffer.role, buffer.bytes);
    if (buffer.role == "x")
      xBytes = buffer.bytes;
  }
  text +=
      fmt::format(" (total {:.0f}, {:.2f} us at peak)\n", input.minimumBytes,
                  input.minimumBytes / input.chip.hbmBytesPerSecond * 1e6);
  for (const LaunchReport &launch : report.launches) {
    int64_t blocks =
        launch.launch.grid[0] * launch.launch.grid[1] * launch.launch.grid[2];
    if (launch.mmaPerThread > 0 || launch.tensorPerThread > 0)
      text += fmt::format("  {}: {} blocks, {} per SM; X and the codes re-read "
                          "per tile (L2, not counted)\n",
                          launch.launch.kernel, blocks, launch.blocksPerSm);
    else
      text += fmt::format("  {}: {} blocks, {} per SM; X re-read by every "
                          "block (L2, not counted): {} bytes\n",
                          launch.launch.kernel, blocks, launch.blocksPerSm,
                          blocks * xBytes);
    if (launch.mmaPerThread > 0 || launch.tensorPerThread > 0) {
      // The GEMM: its K loop's trips (the PTX's bound, PtxTrips.h) and the
      // mma.sync they issue, charged by their kind: against the chip
      // table's mma.sync peak of that kind and its dense tensor peak
      // (docs/gpu-report.md, "Tensor cores").
      MmaShape mma = launch.mma.value_or(MmaShape{MmaKind::F16, 16, 8, 16});
      const ChipConstants &row = *input.chip.constants;
      const Sourced &tensor = tensorMacsPerClock(row, mma.kind);
      double peak = mmaSyncPeakSeconds(input.chip, shape, mma.kind);
      double dense = peak * row.mmaSyncShareOfPeak.value;
      double mainTrips =
          launch.mainLoop >= 0 ? launch.loopTrips[size_t(launch.mainLoop)] : 0;
      double needed = double(shape.m) * double(shape.n) * double(shape.k) /
                      (double(mma.m) * mma.n * mma.k) /
                      double(launch.threads / 32);
      text += fmt::format(
          "  mma.sync {}: K loop {:.0f} trips, {:.0f} mma.sync per warp (the "
          "shape needs {:.0f}), {:.0f} issue slots each; {:.1f}% of the {} "
          "mma.sync peak ({:.2f} us: {:.0f} multiply-adds per clock per SM, "
          "{:.0f}% of the tensor peak {:.0f}{}, x {} SMs x {:.2f} GHz) and "
          "{:.1f}% of the dense tensor peak ({:.2f} us); {:.2f} us estimated, "
          "limited by {}\n",
          mmaShapeText(mma), mainTrips, launch.mmaPerThread, needed,
          mmaIssueSlots(input.chip, mma), 100 * peak / launch.seconds,
          mmaKindName(mma.kind), peak * 1e6, mmaSyncMacsPerClock(row, mma.kind),
          100 * row.mmaSyncShareOfPeak.value, tensor.value,
          tensor.assumed ? " ASSUMED" : "", input.chip.smCount,
          input.chip.clockHz / 1e9, 100 * dense / launch.seconds, dense * 1e6,
          launch.seconds * 1e6, launch.limiter);
      continue;
    }
    auto [codesPerChunk, xElementBytes] = chunkAndXBytes(input, shape);
    std::optional<GemvEstimate> gemv =
        estimateGemv(input, launch, shape, codesPerChunk, xElementBytes);
    if (!gemv) {
      text += "  GEMV: no SASS loop of M's row bucket (no estimate)\n";
      continue;
    }
    text += fmt::format(
        "  GEMV: bucket {} rows, {} columns a warp, SASS loop at {} of {} "
        "instr for {:.0f} weights ({:.2f} per weight; FMA pipe {:.2f}, of "
        "them IMAD {:.2f}, INT32 pipe {:.2f}, conversions {:.2f}), {} B "
        "loaded per trip, {:.0f} trips per warp; issue {:.2f} "
        "us, memory {:.2f} us ({:.1f} MiB in flight); {:.1f}% of HBM "
        "({:.1f}% with the launch overhead), bound by {}; the loop: {}\n",
        gemv->bucket, gemv->columnsPerWarp, gemv->firstInstruction,
        gemv->loopInstructions, gemv->weightsPerTrip,
        gemv->loopInstructions / gemv->weightsPerTrip,
        gemv->fmaPipe / gemv->weightsPerTrip,
        gemv->fmaInteger / gemv->weightsPerTrip,
        gemv->alu / gemv->weightsPerTrip,
        gemv->conversion / gemv->weightsPerTrip, gemv->loadBytesPerTrip,
        gemv->tripsPerWarp, gemv->issueSeconds * 1e6, gemv->memorySeconds * 1e6,
        gemv->bytesInFlight / (1 << 20), 100 * gemv->fraction,
        100 * gemv->fractionWithLaunch, gemv->binding,
        loopMixText(gemv->loopMix));
  }
  return text;
}

} // namespace lowbit::report
