//===- KvLinkedCompiler.h - The KV kernels' compiler entries -----*- C++
//-*-===//
//
// The CompilerBackend entries of lowbit::Jit::getKv (KvLinkedCompiler.cpp),
// linked into LowbitJit and so into liblowbit-compiler.so's table.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_JIT_KVLINKEDCOMPILER_H
#define LOWBIT_RUNTIME_JIT_KVLINKEDCOMPILER_H

#include "runtime/jit/CompilerBackend.h"

namespace lowbit::jit {

Expected<GpuCompileResult> compileKvGpu(std::string_view specText,
                                        const Target &target, bool startLinker);
Expected<std::unique_ptr<KvCpuKernelHandle>>
compileKvCpu(std::string_view specText);

} // namespace lowbit::jit

#endif // LOWBIT_RUNTIME_JIT_KVLINKEDCOMPILER_H
