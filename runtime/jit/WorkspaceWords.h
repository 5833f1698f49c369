//===- WorkspaceWords.h - A spec's GPU workspace size -----------*- C++ -*-===//
//
// The number of 32-bit words of scratch a spec's GPU kernels take as their
// trailing workspace parameter (0: none; target/Workspace.h is the ABI,
// runtime/aot/WorkspacePool.h holds the buffers). The JIT records it in
// its kernel object at get(), `lowbit aot` in the manifest; neither
// recomputes it per launch.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_JIT_WORKSPACEWORDS_H
#define LOWBIT_RUNTIME_JIT_WORKSPACEWORDS_H

#include "runtime/spec/KernelSpec.h"
#include "target/Target.h"

#include <cstdint>
#include <optional>

namespace lowbit::jit {

/// Words of workspace of `spec`'s kernels on `target` (0 for the CPU).
int64_t kernelWorkspaceWords(const KernelSpec &spec, const Target &target);

/// `computed` (the compiler's count for a GPU build), unless a test
/// overrides it (below).
int64_t overriddenWorkspaceWords(int64_t computed);

/// Tests only: makes kernelWorkspaceWords and overriddenWorkspaceWords return
/// `words` for every GPU target (nullopt: the compiler's answer again), so the
/// runtime's workspace handling runs before any kernel needs one.
void overrideWorkspaceWordsForTesting(std::optional<int64_t> words);

} // namespace lowbit::jit

#endif // LOWBIT_RUNTIME_JIT_WORKSPACEWORDS_H
