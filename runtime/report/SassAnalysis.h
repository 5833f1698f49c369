//===- SassAnalysis.h - What ptxas made of a kernel -------------*- C++ -*-===//
//
// Reads nvdisasm's text of a cubin (docs/gpu-report.md, "SASS"): per
// kernel, the instruction mix by class, global loads and stores by width,
// atomics, shared-memory and local (spill) traffic, the highest register
// named, and loops as backward branches with the one that streams the most
// global bytes per trip (the critical loop). MLIR-free.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_REPORT_SASSANALYSIS_H
#define LOWBIT_RUNTIME_REPORT_SASSANALYSIS_H

#include "runtime/report/CodeLoops.h"

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lowbit::report {

/// A loop of SASS: a branch back to an earlier instruction.
using SassLoop = CodeLoop;

struct SassKernel {
  std::string name;
  /// Instructions, without the NOP padding after the last EXIT's trap.
  int instructions = 0;
  /// Class (fp32, fp16, mufu, int, uniform, conversion, move, global,
  /// shared, local, constant, atomic, warp, tensor, control, other) ->
  /// static count.
  std::map<std::string, int> mix;
  /// Per instruction, in order, its class (one of the mix's names): the
  /// estimate weights them by their loops' trips.
  std::vector<std::string_view> classes;
  /// Per instruction, whether it is a conversion the conversion pipe runs
  /// (F2F, F2I, I2F, I2I; not the packed F2FP, I2FP, F2IP, I2IP): the
  /// estimate charges those at the chip table's conversion rate.
  std::vector<bool> conversionPipe;
  /// Per instruction, whether it is an integer multiply-add (IMAD, IMUL,
  /// IDP and their 32I forms), which NVIDIA's GV100-GH100 notes put on the
  /// FMA pipe ("FMAheavy" from GA10x), not the ALU; and whether it is a
  /// register move (MOV, MOV32I), which they put on the ALU. The GEMV's
  /// estimate reads them (MatmulTraffic.h); the class stays "int"/"move".
  std::vector<bool> fmaPipeInteger, aluMove;
  /// Per instruction, the global bytes it loads and stores.
  std::vector<std::pair<int, int>> globalBytes;
  /// Global (and generic) loads and stores: bits per access -> count.
  std::map<int, int> loadWidths, storeWidths;
  /// Global atomics and reductions (ATOMG, ATOM, REDG, RED), by opcode.
  std::map<std::string, int> atomics;
  int sharedLoadBytes = 0, sharedStoreBytes = 0; ///< per thread, static
  int localLoads = 0, localStores = 0;           ///< spills and stack
  /// The highest general register named (R0..R254), -1 if none.
  int highestRegister = -1;
  /// Per instruction, whether it is on a path a converged warp with
  /// ordinary operands does not run, so the estimate does not count it:
  ///   - the path a warp takes at a `BRA.DIV` when its lanes have
  ///     diverged: ptxas's out-of-line fallback of a warp-synchronous
  ///     shuffle or vote, from the branch's target to the first
  ///     unconditional `BRA` (back to the converged path); its back
  ///     branch is no loop;
  ///   - ptxas's `$__internal_..._slowpath` subroutines (f32 division and
  ///     reciprocal for denormal, infinite or zero operands) and the
  ///     blocks that call them (from the branch or label before the
  ///     `CALL` to the next label).
  std::vector<bool> coldPath;
  std::vector<SassLoop> loops;
  /// Index into loops of the loop streaming the most global bytes per trip
  /// (the largest loop when none streams); -1 without loops.
  int criticalLoop = -1;
  int atomicCount() const;
};

/// Every function of nvdisasm's text ("-c" output: `.text.NAME:` sections of
/// `/*0040*/ [@P0] OPCODE operands ;` lines). Text without a code section
/// gives no kernels.
std::vector<SassKernel> analyzeSass(std::string_view text);

/// "fp32 12, int 40, ..." in a fixed order, zero classes left out.
std::string sassMixText(const SassKernel &kernel);

} // namespace lowbit::report

#endif // LOWBIT_RUNTIME_REPORT_SASSANALYSIS_H
