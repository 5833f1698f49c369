//===- CompilerBackend.cpp - What lowbit::Jit asks of the compiler --------===//

#include "runtime/jit/CompilerBackend.h"

namespace lowbit::jit {

// The key function: the vtable lives with the MLIR-free Jit.
CpuKernelHandle::~CpuKernelHandle() = default;
KvCpuKernelHandle::~KvCpuKernelHandle() = default;

} // namespace lowbit::jit
