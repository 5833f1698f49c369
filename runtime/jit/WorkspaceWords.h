//===- WorkspaceWords.h - A spec's GPU workspace size -----------*- C++ -*-===//
//
// The number of 32-bit words of scratch a spec's GPU kernels take as their
// trailing workspace parameter (0: none; target/Workspace.h is the ABI,
// runtime/aot/WorkspacePool.h holds the buffers) comes with the compile
// (compiler::GpuCompilation::workspaceWords): the JIT records it in its
// kernel object at get(), `lowbit aot` in the manifest; nothing lowers
// again to learn it. Tests may override it here.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_JIT_WORKSPACEWORDS_H
#define LOWBIT_RUNTIME_JIT_WORKSPACEWORDS_H

#include <cstdint>
#include <optional>

namespace lowbit::jit {

/// `computed` (the compiler's count for a GPU build), unless a test
/// overrides it (below).
int64_t overriddenWorkspaceWords(int64_t computed);

/// Tests only: makes overriddenWorkspaceWords return `words` for every GPU
/// build (nullopt: the compiler's answer again), so the runtime's workspace
/// handling runs before any kernel needs one.
void overrideWorkspaceWordsForTesting(std::optional<int64_t> words);

} // namespace lowbit::jit

#endif // LOWBIT_RUNTIME_JIT_WORKSPACEWORDS_H
