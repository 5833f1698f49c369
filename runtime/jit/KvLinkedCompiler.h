//===- KvLinkedCompiler.h - The KV kernels' compiler entries -----*- C++
//-*-===//
//
// The CompilerBackend entries of lowbit::Jit::getKv (KvLinkedCompiler.cpp),
// linked into LowbitJit and so into liblowbit-compiler.so's table.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_JIT_KVLINKEDCOMPILER_H
#define LOWBIT_RUNTIME_JIT_KVLINKEDCOMPILER_H

#include "runtime/compiler/GpuCompile.h"
#include "runtime/jit/CompilerBackend.h"
#include "runtime/jit/KvJitSpec.h"

namespace lowbit::jit {

/// A KV, KIVI or decode-attention spec's kernels compiled for an NVIDIA
/// `target` by its family's compiler (the one GPU compile underneath):
/// what getKv and `lowbit aot` both build.
llvm::Expected<compiler::GpuCompilation>
compileKvSpecForGpu(const KvJitSpec &spec, const Target &target);

/// A GPU compile as the compiler backend hands it over (CompilerBackend.h):
/// the plan as text, the workspace words after the tests' override. Both
/// GPU entries, this file's and LinkedCompiler.cpp's, return through it.
GpuCompileResult backendResult(compiler::GpuCompilation build);

Expected<GpuCompileResult> compileKvGpu(std::string_view specText,
                                        const Target &target, bool startLinker);
Expected<std::unique_ptr<KvCpuKernelHandle>>
compileKvCpu(std::string_view specText);

} // namespace lowbit::jit

#endif // LOWBIT_RUNTIME_JIT_KVLINKEDCOMPILER_H
