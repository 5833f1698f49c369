//===- WorkspaceWords.cpp - How much workspace a spec's kernels need ------===//

#include "runtime/jit/WorkspaceWords.h"

#include <atomic>

namespace lowbit::jit {

namespace {
/// -1: no override.
std::atomic<int64_t> overriddenWords{-1};
} // namespace

int64_t overriddenWorkspaceWords(int64_t computed) {
  int64_t words = overriddenWords.load();
  return words >= 0 ? words : computed;
}

void overrideWorkspaceWordsForTesting(std::optional<int64_t> words) {
  overriddenWords.store(words ? *words : -1);
}

} // namespace lowbit::jit
