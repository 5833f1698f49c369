//===- CodeLoops.cpp - Loops of a kernel body, PTX or SASS ----------------===//

#include "runtime/report/CodeLoops.h"

#include <algorithm>

namespace lowbit::report {

std::vector<CodeLoop>
findLoops(const std::vector<std::pair<int, std::string>> &branches,
          const std::map<std::string, int, std::less<>> &labels,
          const std::vector<std::pair<int, int>> &globalBytes) {
  std::map<int, int> loopEnds; // header -> last back edge
  for (const auto &[index, target] : branches) {
    auto label = labels.find(target);
    if (label == labels.end() || label->second >= index)
      continue;
    int &end = loopEnds[label->second];
    end = std::max(end, index);
  }
  std::vector<CodeLoop> loops;
  for (const auto &[first, last] : loopEnds) {
    CodeLoop loop;
    loop.firstInstruction = first;
    loop.lastInstruction = last;
    for (int i = first; i <= last && size_t(i) < globalBytes.size(); ++i) {
      loop.globalLoadBytes += globalBytes[size_t(i)].first;
      loop.globalStoreBytes += globalBytes[size_t(i)].second;
    }
    loops.push_back(loop);
  }
  return loops;
}

} // namespace lowbit::report
