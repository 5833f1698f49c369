//===- HostKernel.h - A KV kernel JIT-compiled for the host -----*- C++ -*-===//
//
// The CPU kernels of the KV-cache, KIVI and decode-attention compilers are
// the same object: compiled once, holding the loaded executable; run()
// checks the buffers, which is each kernel's own part, then calls @kernel
// with one memref descriptor per buffer (C order). The instances are the
// compilers' KvCpuKernel, KiviCpuKernel, KvAttentionCpuKernel and
// KiviAttentionCpuKernel.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_COMPILER_HOSTKERNEL_H
#define LOWBIT_RUNTIME_COMPILER_HOSTKERNEL_H

#include "llvm/Support/Error.h"

#include <memory>
#include <vector>

namespace lowbit {
class HostExecutable;
} // namespace lowbit

namespace lowbit::compiler {

/// `Buffer` is KvBuffer (rank N) or HostBuffer (rank 2).
template <typename Spec, typename Buffer> class HostKernel {
public:
  /// The kernel's checks of a call's buffers, before any is read.
  using CheckBuffers = llvm::Error (*)(const Spec &,
                                       const std::vector<Buffer> &);

  HostKernel(Spec spec, std::unique_ptr<HostExecutable> executable,
             CheckBuffers check);
  ~HostKernel();
  /// One buffer per parameter, in ABI order: checked, then the kernel runs.
  llvm::Error run(const std::vector<Buffer> &buffers);
  const Spec &spec() const { return kernelSpec; }

private:
  Spec kernelSpec;
  std::unique_ptr<HostExecutable> executable;
  CheckBuffers check;
};

} // namespace lowbit::compiler

#endif // LOWBIT_RUNTIME_COMPILER_HOSTKERNEL_H
