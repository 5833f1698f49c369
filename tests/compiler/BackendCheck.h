//===- BackendCheck.h - Kernels vs the reference quantizer ------*- C++ -*-===//
//
// The bit-exact check of a kernel against format/Quantize.h, for any
// backend that runs a spec over host buffers: the CPU JIT
// (tests/compiler) and the GPU emulator (tests/emulator).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TESTS_COMPILER_BACKENDCHECK_H
#define LOWBIT_TESTS_COMPILER_BACKENDCHECK_H

#include "runtime/compiler/Compiler.h"
#include "runtime/spec/KernelSpec.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace lowbit::testing {

/// Runs `spec`'s kernel over `buffers` (ABI order, compiler::bufferShapes);
/// returns "" or what went wrong.
using KernelRunner = std::function<std::string(
    const KernelSpec &spec, std::vector<compiler::HostBuffer> &buffers)>;

/// A KernelRunner on the CPU tail: compiles each spec once (kept for the
/// process) and runs it; a compile error is returned as the run's error.
std::string runOnCpuJit(const KernelSpec &spec,
                        std::vector<compiler::HostBuffer> &buffers);

/// Seeded inputs with the cases that break kernels: zeros, an all-zero
/// group, NaN, inf, subnormals, huge and tiny values.
std::vector<float> makeInput(int64_t rows, int64_t cols, uint32_t seed);

/// Quantizes with the kernel and the reference; "" or the first mismatch.
std::string checkQuantize(const KernelSpec &spec, int64_t rows, int64_t cols,
                          uint32_t seed, const KernelRunner &run);
/// Dequantizes the reference's quantized tensor with the kernel; "" or the
/// first mismatch.
std::string checkDequantize(const KernelSpec &spec, int64_t rows, int64_t cols,
                            uint32_t seed, const KernelRunner &run);

} // namespace lowbit::testing

#endif // LOWBIT_TESTS_COMPILER_BACKENDCHECK_H
