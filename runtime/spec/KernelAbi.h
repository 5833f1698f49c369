//===- KernelAbi.h - A spec's kernel parameters, without MLIR ---*- C++ -*-===//
//
// The kernel ABI (docs/kernel-abi.md) of one spec as plain data (the roles
// and element kinds are target/KernelAbi.h's): each parameter's role,
// whether the kernel writes it, what its elements are and its [rows, cols].
// The compiler maps the element kinds to MLIR types; the MLIR-free front
// end (the cache key's pointer count) and the CLI's buffers read it as is,
// so the parameter list is written once.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_SPEC_KERNELABI_H
#define LOWBIT_RUNTIME_SPEC_KERNELABI_H

#include "runtime/spec/KernelSpec.h"
#include "target/KernelAbi.h"

#include <cstddef>
#include <string>
#include <vector>

namespace lowbit {

struct KernelAbiParam {
  KernelParamRole role;
  bool isResult; ///< written by the kernel
  KernelParamElement element;
  Shape2D shape; ///< from the spec's sizes (kDynamic where they are)
  /// A fused prologue's side tensor ("weight", "smooth", "residual", and
  /// the written "residual"); empty for the quantizer's own parameters.
  std::string side = {};
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
