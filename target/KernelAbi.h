//===- KernelAbi.h - What every lowbit kernel's signature keeps -*- C++ -*-===//
//
// The part of the kernel ABI (docs/kernel-abi.md) that holds for every
// kernel, whatever its spec: the function's name, how a memref parameter
// is passed (MLIR's expanded descriptor), the parameters' roles and
// element kinds. The per-spec parameter list is the spec model's
// (runtime/spec/KernelAbi.h, kv/'s kernel specs); the workspace is
// target/Workspace.h's. Plain C++, no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TARGET_KERNELABI_H
#define LOWBIT_TARGET_KERNELABI_H

#include <cstddef>

namespace lowbit {

namespace abi {

/// The kernel function's name in every module the compiler builds (the
/// CPU tail's C interface is _mlir_ciface_<name>).
inline constexpr const char *kKernelFunction = "kernel";

/// Kernel parameters (cuLaunchKernel slots) of one memref argument of
/// `rank`: allocated and aligned pointers, offset, then `rank` sizes and
/// `rank` strides.
constexpr size_t memrefDescriptorSlots(size_t rank) { return 3 + 2 * rank; }

} // namespace abi

/// Workspace: the GPU kernels' runtime-owned scratch (docs/kernel-abi.md),
/// never in kernelAbi()'s list.
enum class KernelParamRole {
  Input,
  Scales,
  Zeros,
  Global,
  Codes,
  Output,
  Workspace
};

/// What a parameter's elements are: the spec's value type (f32, f16,
/// bf16), the scheme's stored scale type (scaleStorageBits), bytes (codes,
/// zero points) or f32 (the global scale).
enum class KernelParamElement { Value, Scale, Byte, F32 };

} // namespace lowbit

#endif // LOWBIT_TARGET_KERNELABI_H
