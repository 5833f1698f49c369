//===- KernelAbi.h - A spec's kernel parameters, without MLIR ---*- C++ -*-===//
//
// The kernel ABI (docs/kernel-abi.md) as plain data: each parameter's role,
// whether the kernel writes it, what its elements are and its [rows, cols].
// The compiler maps the element kinds to MLIR types; the MLIR-free front
// end (the cache key's pointer count) and the CLI's buffers read it as is,
// so the parameter list is written once.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_SPEC_KERNELABI_H
#define LOWBIT_RUNTIME_SPEC_KERNELABI_H

#include "runtime/spec/KernelSpec.h"

#include <cstddef>
#include <string>
#include <vector>

namespace lowbit {

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

struct KernelAbiParam {
  KernelParamRole role;
  bool isResult; ///< written by the kernel
  KernelParamElement element;
  Shape2D shape; ///< from the spec's sizes (kDynamic where they are)
  /// A fused prologue's side tensor ("weight", "smooth", "residual", and
  /// the written "residual"); empty for the quantizer's own parameters.
  std::string side;
};

/// The parameters of `spec`'s kernel, in ABI order: dequantize reads codes,
/// scales, zero points and the global scale and writes the output;
/// quantize takes its operands (input, given scales, zero points, global
/// scale) and then its results (codes, computed scales, zero points and
/// global scale). A fused kernel (docs/fusion.md) takes its prologues'
/// side tensors right after the input, and writes the updated residual
/// last; its input is [rows, prologueInputWidth(prologues, cols)].
std::vector<KernelAbiParam> kernelAbi(const KernelSpec &spec);

/// Bytes per element of a parameter of `spec`'s kernel.
size_t kernelParamElementBytes(const KernelSpec &spec,
                               KernelParamElement element);

} // namespace lowbit

#endif // LOWBIT_RUNTIME_SPEC_KERNELABI_H
