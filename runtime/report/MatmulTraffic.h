//===- MatmulTraffic.h - The quantized-weight matmul in the report --------===//
//
// docs/gpu-report.md, "The matmul": what `lowbit report 'matmul ...'` hands
// the shared model for one call Y[M, N] = X[M, K] . dequant(W)[N, K]^T.
// An element is one weight; the codes are the streamed side (the loop
// trips follow them); every ABI buffer (X, codes, scales, zero points,
// global scale, bias, Y) is moved once, which is also the minimum, so the
// fraction of HBM is the time the model gives (bytes against the SASS's
// issue time, latency, L1) against those bytes at peak. X is read again by
// every block; it is 8 KiB to 512 KiB, so those reads are L2 hits and are
// stated, not counted as HBM bytes. A launch with mma.sync (the GEMM) is
// also measured against the chip's mma.sync peak of its kind. MLIR-free.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_REPORT_MATMULTRAFFIC_H
#define LOWBIT_RUNTIME_REPORT_MATMULTRAFFIC_H

#include "runtime/report/GpuReport.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace lowbit::report {

/// One call's sizes: X [m, k], the weights [n, k].
struct MatmulShape {
  int64_t m = 0, n = 0, k = 0;
};

/// The ABI parameter `name` (x, codes, scales, zeros, global, bias, y;
/// runtime/compiler/MatmulSignature.h) as a report buffer: the codes are
/// the streamed side, named "input" for analyzeSpec.
Buffer matmulBuffer(const std::string &name, int64_t bytes, bool written);

/// input.op, elements, valueBytes and minimumBytes for `shape`, from
/// input.buffers (every one moved once).
void setMatmulTraffic(SpecInput &input, const MatmulShape &shape);

/// The seconds of shape's m n k multiply-adds through mma.sync of `kind` at
/// the chip's rate of that kind (ChipTable.h: the kind's dense tensor peak
/// times mmaSyncShareOfPeak, per SM per clock); 0 where the chip has no
/// mma.sync of the kind.
double mmaSyncPeakSeconds(const ChipModel &chip, const MatmulShape &shape,
                          MmaKind kind);

/// The GEMV's own estimate (docs/gpu-report.md, "The matmul"). The
/// kernel holds one chunk loop per row bucket (1, 4, 16 rows of X) and a
/// per-element loop for a chunk K cuts, and only the bucket of M runs, so
/// the shared model's loop weighting (every streaming loop at its own
/// trips) does not apply; this one takes the SASS loop of M's bucket: the
/// loop whose global loads per trip are the closest to one chunk of each
/// of a warp's columns' codes plus the bucket's X rows (32 values each),
/// at least those. A warp's columns are N over the launch's warps.
///
/// Issue, per warp trip, is the slowest of (sources: NVIDIA's developer
/// forum answers on the GV100 and GA10x/GH100 pipes, quoted in
/// docs/matmul-gpu.md, "The static report"; sm_100a ASSUMED as GH100):
///   - dispatch: every instruction, issuePerSmPerClock a clock per SM;
///   - the FMA pipe: FP32, FP16x2 (both FMA halves) and the integer
///     multiply-adds (IMAD, IDP) at fp32LanesPerClock, and those integer
///     ones alone at half of it (the "heavy" half only);
///   - the ALU ("INT32 pipe"): the other integer, logic and predicate
///     instructions and the register moves, at int32LanesPerClock;
///   - the conversion pipe (F2F, F2I, I2F, I2I) at conversionLanesPerClock;
/// and the issue time is the busiest SM's: ceil(blocks / SMs) blocks.
struct GemvEstimate {
  int64_t bucket = 0;         ///< rows of X the pass is specialised for
  int64_t columnsPerWarp = 0; ///< output columns a warp owns
  int firstInstruction = 0, loopInstructions = 0; ///< the SASS loop
  int loadBytesPerTrip = 0;
  /// Per lane: 32 x columns x chunks a trip (ptxas unroll).
  double weightsPerTrip = 0;
  double tripsPerWarp = 0; ///< every lane of a warp runs them in lockstep
  /// The loop's instructions per pipe (above): FMA pipe, of them the
  /// integer multiply-adds, ALU, conversion pipe.
  double fmaPipe = 0, fmaInteger = 0, alu = 0, conversion = 0;
  /// What bounds the issue time: dispatch, FMA pipe, FMA pipe's IMAD half,
  /// INT32 pipe or conversion pipe.
  std::string issueBound;
  /// "issue (<issueBound>)", HBM bandwidth or memory-level parallelism.
  std::string binding;
  /// The loop's SASS instructions by class (SassKernel::mix's names).
  std::map<std::string, int> loopMix;
  double issueSeconds = 0, memorySeconds = 0, seconds = 0;
  double bytesInFlight = 0;
  /// HBM bytes / peak over the kernel's time, and over that time plus the
  /// chip's launch overhead (one launch).
  double fraction = 0, fractionWithLaunch = 0;
};

/// nullopt when the launch has no SASS or no loop of the bucket.
std::optional<GemvEstimate> estimateGemv(const SpecInput &input,
                                         const LaunchReport &launch,
                                         const MatmulShape &shape,
                                         int codesBytesPerChunk,
                                         int xElementBytes);

/// The matmul's own estimates in the report: each launch without
/// mma.sync (the GEMV) takes estimateGemv's time (plus the launch
/// overhead) and binding term instead of the shared model's, whose loop
/// weighting does not describe it, and the spec's totals are summarized
/// again, so the summary line says what the GEMV line says.
void applyMatmulEstimates(const SpecInput &input, SpecReport &report,
                          const MatmulShape &shape);

/// The model's inputs, one line: the bytes per buffer, X's re-reads per
/// block (L2) and, per launch, its SASS issue per weight.
std::string matmulInputsText(const SpecInput &input, const SpecReport &report,
                             const MatmulShape &shape);

} // namespace lowbit::report

#endif // LOWBIT_RUNTIME_REPORT_MATMULTRAFFIC_H
