//===- WorkspaceWords.cpp - How much workspace a spec's kernels need ------===//

#include "runtime/jit/WorkspaceWords.h"

#include "runtime/compiler/Compiler.h"

#include <atomic>

namespace lowbit::jit {

namespace {
/// -1: no override.
std::atomic<int64_t> overriddenWords{-1};
} // namespace

int64_t kernelWorkspaceWords(const KernelSpec &spec, const Target &target) {
  if (!target.isNvidia())
    return 0;
  if (int64_t words = overriddenWords.load(); words >= 0)
    return words;
  // The compiler maps the spec for the GPU to find out (a few ms); callers
  // keep the answer with the kernel (docs/kernel-abi.md, "Workspace").
  return compiler::workspaceWords(spec, target);
}

int64_t overriddenWorkspaceWords(int64_t computed) {
  int64_t words = overriddenWords.load();
  return words >= 0 ? words : computed;
}

void overrideWorkspaceWordsForTesting(std::optional<int64_t> words) {
  overriddenWords.store(words ? *words : -1);
}

} // namespace lowbit::jit
