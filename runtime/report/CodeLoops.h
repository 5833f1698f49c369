//===- CodeLoops.h - Loops of a kernel body, PTX or SASS --------*- C++ -*-===//
//
// A loop is a backward branch; several back edges to one header are one
// loop, whose body runs to the last of them. Both readers (PtxAnalysis,
// SassAnalysis) hand their branches, labels and per-instruction global
// bytes here. MLIR-free, internal to runtime/report.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_REPORT_CODELOOPS_H
#define LOWBIT_RUNTIME_REPORT_CODELOOPS_H

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace lowbit::report {

struct CodeLoop {
  int firstInstruction = 0, lastInstruction = 0; ///< inclusive
  int globalLoadBytes = 0, globalStoreBytes = 0; ///< per thread, per trip
  int instructions() const { return lastInstruction - firstInstruction + 1; }
};

/// `branches`: (instruction index, target label); `labels`: label -> the
/// index of the instruction after it; `globalBytes`: per instruction, the
/// global bytes it loads and stores. A branch to itself (the trap at the end
/// of a SASS function) is no loop.
std::vector<CodeLoop>
findLoops(const std::vector<std::pair<int, std::string>> &branches,
          const std::map<std::string, int, std::less<>> &labels,
          const std::vector<std::pair<int, int>> &globalBytes);

} // namespace lowbit::report

#endif // LOWBIT_RUNTIME_REPORT_CODELOOPS_H
