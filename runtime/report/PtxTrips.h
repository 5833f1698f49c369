//===- PtxTrips.h - Loop trip counts from a PTX loop's bound ----*- C++ -*-===//
//
// The trips a loop runs, read off its induction variable where the PTX
// states them (docs/gpu-report.md, "Stated trips"): the back edge's
// predicate is a `setp` of a counter the body steps by a constant against
// a bound the loop does not change, and the counter's value on entry and
// the bound are known per lane (constants, the thread index, the launch's
// scalar arguments and block size; PtxAddresses.h). A GEMM's K loop
// (`for chunk < ceil(K / 32)`) runs 128 trips at K = 4096 whatever its
// bytes per trip say. MLIR-free, internal to runtime/report.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_REPORT_PTXTRIPS_H
#define LOWBIT_RUNTIME_REPORT_PTXTRIPS_H

#include "runtime/report/CodeLoops.h"
#include "runtime/report/PtxAddresses.h"
#include "runtime/report/PtxGuards.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lowbit::report {

/// The trips of `loop` per entry, the most of warp 0's lanes (a warp runs
/// until its last lane leaves), or nullopt where the PTX does not state
/// them. `labels` maps a label to its statement; `atHeader` is the dataflow's
/// state before the loop's first statement (in text order: the counter's
/// initial value). `compareAt`, where given, receives the index of the `setp`
/// the trips come from (two back edges that share one test are one loop's).
std::optional<double>
statedTrips(const std::vector<PtxStatement> &statements,
            const std::map<std::string, int, std::less<>> &labels,
            const CodeLoop &loop, const AddressDataflow &atHeader,
            int *compareAt = nullptr);

/// The trips of a loop whose value compared at trip t (1-based) differs
/// from the bound by `first + (t - 1) * step`, and which goes on while
/// `compare` (lt, le, gt, ge, eq, ne: PTX's setp names, the unsigned lo,
/// ls, hi, hs read as signed) holds; nullopt when it never stops.
std::optional<int64_t> tripsWhile(std::string_view compare, int64_t first,
                                  int64_t step);

/// The lanes of warp 0 (bit l: lane l) for which a `setp` on integers
/// holds, in the dataflow's state before it; nullopt unless both operands
/// are known per lane without an unknown base.
std::optional<uint32_t> compareLanes(const PtxStatement &setp,
                                     const AddressDataflow &state);

/// Per statement, the lanes of warp 0 that reach it, in one pass in text
/// order from the entry: a branch on a predicate whose lanes are known
/// (`predicateLanes`, per statement: the setp's compareLanes, taken only
/// outside loops, where the dataflow's values are a trip's) sends those
/// lanes to its target and the others on; any other conditional branch
/// sends every lane both ways. Back edges add nothing (a loop's body is
/// reached from its header). A statement no lane reaches is skipped code
/// (a guard the launch's arguments decide: vLLM's scalar tail when the
/// group is a whole number of vectors).
std::vector<uint32_t>
lanesReaching(const std::vector<PtxStatement> &statements,
              const std::map<std::string, int, std::less<>> &labels,
              const std::vector<std::optional<uint32_t>> &predicateLanes);

} // namespace lowbit::report

#endif // LOWBIT_RUNTIME_REPORT_PTXTRIPS_H
