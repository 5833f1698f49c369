//===- PtxGuards.h - Which threads of a block run each statement -*- C++
//-*-===//
//
// A guard analysis over one PTX kernel body (docs/gpu-report.md, "Executed
// atomics"): the values computed from %tid.x alone are evaluated for every
// x index of a block, so a branch or a predicate that tests them (tid == 0,
// tid % 32 == 0, warp == 0) restricts the threads that reach what it
// guards. The report uses it to count atomics as executed: one a block
// under `if (threadIdx.x == 0)`, not one a thread. MLIR-free, internal to
// runtime/report.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_REPORT_PTXGUARDS_H
#define LOWBIT_RUNTIME_REPORT_PTXGUARDS_H

#include <bitset>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace lowbit::report {

/// The largest x size of a block (CUDA C++ Programming Guide, "Technical
/// Specifications per Compute Capability": 1024 threads per block).
constexpr int kMaxBlockThreadsX = 1024;

/// The x indices (%tid.x) of a block's threads that may run a statement.
using ThreadSet = std::bitset<kMaxBlockThreadsX>;

/// One statement of a kernel body, as the PTX reader splits it.
struct PtxStatement {
  /// The guard without '@': "%p1", "!%p1", or empty.
  std::string_view predicate;
  std::string_view opcode;
  /// The operand text, without the ';'.
  std::string_view operands;
};

/// Per statement, the threads that may run it: those reaching its basic
/// block, by the branches whose predicates are functions of %tid.x, and
/// passing its own predicate. A predicate the analysis cannot evaluate
/// (data, the block index, a loop counter) lets every thread through, so
/// the answer is an upper bound. `labels` maps each label to the index of
/// the statement after it.
std::vector<ThreadSet>
threadsRunning(const std::vector<PtxStatement> &statements,
               const std::map<std::string, int, std::less<>> &labels);

} // namespace lowbit::report

#endif // LOWBIT_RUNTIME_REPORT_PTXGUARDS_H
