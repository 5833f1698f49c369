//===- IssuePipes.cpp - SASS instructions by the pipe that runs them ------===//

#include "runtime/report/IssuePipes.h"

#include <tuple>

namespace lowbit::report {

void PipeCounts::add(const SassKernel &sass, size_t i, double weight) {
  std::string_view kind = sass.classes[i];
  bool integerMultiply =
      i < sass.fmaPipeInteger.size() && sass.fmaPipeInteger[i];
  bool move = i < sass.aluMove.size() && sass.aluMove[i];
  if (kind == "fp32" || kind == "fp16" || integerMultiply)
    fmaPipe += weight;
  if (integerMultiply)
    fmaInteger += weight;
  if ((kind == "int" && !integerMultiply) || move)
    alu += weight;
  if (kind == "mufu")
    mufu += weight;
  if (i < sass.conversionPipe.size() && sass.conversionPipe[i])
    conversion += weight;
}

BusiestPipe busiestPipe(const PipeCounts &counts, const ChipConstants &row,
                        double dispatchClocks) {
  BusiestPipe out{dispatchClocks, "dispatch"};
  for (auto [name, count, lanes] :
       {std::tuple{"FMA pipe", counts.fmaPipe, row.fp32LanesPerClock.value},
        std::tuple{"FMA pipe's IMAD half", counts.fmaInteger,
                   row.fp32LanesPerClock.value / 2},
        std::tuple{"MUFU pipe", counts.mufu, row.mufuLanesPerClock.value},
        std::tuple{"INT32 pipe", counts.alu, row.int32LanesPerClock.value},
        std::tuple{"conversion pipe", counts.conversion,
                   row.conversionLanesPerClock.value}})
    if (lanes > 0 && count * 32 / lanes > out.clocks) {
      out.clocks = count * 32 / lanes;
      out.name = name;
    }
  return out;
}

} // namespace lowbit::report
