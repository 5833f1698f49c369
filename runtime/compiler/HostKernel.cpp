//===- HostKernel.cpp - A KV kernel JIT-compiled for the host -------------===//

#include "runtime/compiler/HostKernel.h"

#include "lowering/CpuTail.h"
#include "runtime/compiler/Compiler.h"
#include "runtime/compiler/KiviAttentionCompiler.h"
#include "runtime/compiler/KiviCompiler.h"
#include "runtime/compiler/KvAttentionCompiler.h"
#include "runtime/compiler/KvCompiler.h"
#include "runtime/compiler/MatmulCompiler.h"

namespace lowbit::compiler {

namespace {

std::vector<int64_t> shapeOf(const KvBuffer &buffer) { return buffer.shape; }
std::vector<int64_t> shapeOf(const HostBuffer &buffer) {
  return {buffer.rows, buffer.cols};
}

} // namespace

template <typename Spec, typename Buffer>
HostKernel<Spec, Buffer>::HostKernel(Spec spec,
                                     std::unique_ptr<HostExecutable> executable,
                                     CheckBuffers check)
    : kernelSpec(std::move(spec)), executable(std::move(executable)),
      check(check) {}

template <typename Spec, typename Buffer>
HostKernel<Spec, Buffer>::~HostKernel() = default;

template <typename Spec, typename Buffer>
llvm::Error HostKernel<Spec, Buffer>::run(const std::vector<Buffer> &buffers) {
  if (llvm::Error error = check(kernelSpec, buffers))
    return error;
  // MLIR's ranked descriptor: allocated, aligned, offset, sizes[rank],
  // strides[rank], all 64-bit.
  std::vector<std::vector<int64_t>> descriptors(buffers.size());
  std::vector<void *> descriptorPointers(buffers.size());
  std::vector<void *> args(buffers.size());
  for (size_t index = 0; index < buffers.size(); ++index) {
    std::vector<int64_t> shape = shapeOf(buffers[index]);
    std::vector<int64_t> &descriptor = descriptors[index];
    auto address = reinterpret_cast<intptr_t>(buffers[index].data);
    descriptor = {address, address, 0};
    descriptor.insert(descriptor.end(), shape.begin(), shape.end());
    std::vector<int64_t> strides(shape.size(), 1);
    for (size_t axis = shape.size() - 1; axis > 0; --axis)
      strides[axis - 1] = strides[axis] * shape[axis];
    descriptor.insert(descriptor.end(), strides.begin(), strides.end());
    descriptorPointers[index] = descriptor.data();
    args[index] = &descriptorPointers[index];
  }
  return executable->invoke(kKernelName, args);
}

template class HostKernel<kv::KvKernelSpec, KvBuffer>;
template class HostKernel<kv::KiviKernelSpec, KvBuffer>;
template class HostKernel<kv::KvAttentionSpec, HostBuffer>;
template class HostKernel<kv::KiviAttentionSpec, KvBuffer>;
template class HostKernel<matmul::MatmulSpec, HostBuffer>;

} // namespace lowbit::compiler
