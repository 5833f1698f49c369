//===- IssuePipes.h - SASS instructions by the pipe that runs them -*- C++
//-*-===//
//
// The one rule both issue terms of the report use (the shared model in
// GpuReport.cpp and the GEMV's in MatmulTraffic.cpp; docs/gpu-report.md,
// "SASS in the estimate"). Sources: NVIDIA's developer forum answers on the
// GV100 and GA10x/GH100 pipes (docs/matmul-gpu.md, "The static report");
// sm_100a ASSUMED as GH100. MLIR-free, internal to runtime/report.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_REPORT_ISSUEPIPES_H
#define LOWBIT_RUNTIME_REPORT_ISSUEPIPES_H

#include "runtime/report/SassAnalysis.h"
#include "target/ChipTable.h"

#include <cstddef>
#include <string_view>

namespace lowbit::report {

/// Instructions a thread (or a warp's trip) issues, per pipe:
///   - fmaPipe: FP32, FP16x2 and the integer multiply-adds (IMAD, IMUL,
///     IDP), which the FMA pipe runs (its "heavy" half only, from GA10x);
///   - fmaInteger: of them, the integer multiply-adds;
///   - alu ("INT32 pipe"): the other integer, logic and predicate
///     instructions and the register moves (MOV);
///   - mufu: the special-function unit;
///   - conversion: F2F, F2I, I2F, I2I.
struct PipeCounts {
  double fmaPipe = 0, fmaInteger = 0, alu = 0, mufu = 0, conversion = 0;

  /// Adds SASS instruction `i` of `sass`, `weight` times.
  void add(const SassKernel &sass, size_t i, double weight);
};

/// The clocks of one SM a warp's `counts` take on their busiest pipe, if
/// that is slower than `dispatchClocks` (a warp instruction of a pipe of
/// L lanes per SM takes 32 / L clocks; the integer multiply-adds alone
/// have half the FMA pipe's lanes), and the pipe's name ("dispatch",
/// "FMA pipe", "FMA pipe's IMAD half", "MUFU pipe", "INT32 pipe" or
/// "conversion pipe").
struct BusiestPipe {
  double clocks = 0;
  std::string_view name = "dispatch";
};
BusiestPipe busiestPipe(const PipeCounts &counts, const ChipConstants &row,
                        double dispatchClocks);

} // namespace lowbit::report

#endif // LOWBIT_RUNTIME_REPORT_ISSUEPIPES_H
