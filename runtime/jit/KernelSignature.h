//===- KernelSignature.h - A kernel's cache key, without MLIR --*- C++ -*-===//
//
// What lowbit::Jit::get() puts in a kernel's key (docs/runtime.md, "C++
// API"), computed without MLIR or LLVM: the canonical spec, the chip and
// its features, the value dtype, the size policies, the ABI's pointer
// count, and the compiler's identity. Jit.cpp and the CLI's MLIR-free front
// end both call it, so a kernel the one writes is the kernel the other
// finds.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_JIT_KERNELSIGNATURE_H
#define LOWBIT_RUNTIME_JIT_KERNELSIGNATURE_H

#include "runtime/cache/KernelKey.h"
#include "runtime/spec/KernelSpec.h"
#include "target/Target.h"

#include <string>
#include <string_view>

namespace lowbit::jit {

/// The pass-pipeline text whose hash is in every key, and LLVM's version:
/// generated at build time from the compiler (PrintCompilerIdentity.cpp).
std::string_view compilerPipelineDescription();
std::string_view compilerLlvmVersion();

/// The signature of `spec`'s kernel on `target`. `hostFeatures` is the
/// host CPU's name and feature hash for a CPU target (unused for NVIDIA
/// targets, whose features are the PTX version).
runtime::KernelSignature kernelSignature(const KernelSpec &spec,
                                         const Target &target,
                                         std::string_view hostFeatures);

/// What every kernel's signature holds beside its spec's own fields: the
/// canonical spec text, the chip and its features, the ABI's pointer
/// count and the compiler's identity (LLVM version, pipeline hash). The
/// KV kernels' keys (Jit::getKv) are this with every size dynamic.
runtime::KernelSignature targetSignature(std::string canonicalSpec,
                                         const Target &target,
                                         std::string_view hostFeatures,
                                         int pointerCount);

/// The key get() compiles first: the spec's static sizes (0 where
/// dynamic), every buffer 16-byte aligned.
runtime::KernelKey
primaryKernelKey(const KernelSpec &spec,
                 std::shared_ptr<const runtime::PreparedSignature> signature);

} // namespace lowbit::jit

#endif // LOWBIT_RUNTIME_JIT_KERNELSIGNATURE_H
