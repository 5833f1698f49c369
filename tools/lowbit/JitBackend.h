//===- JitBackend.h - The CLI's view of the JIT compiler --------*- C++ -*-===//
//
// The CLI's commands (quantize, dequantize, demo) and the benchmarks reach
// the compiler only through this header. It holds no MLIR or LLVM types, so
// that only JitBackend.cpp and CompileCommand.cpp pay for MLIR's headers
// and the rest of the tool stays quick to build.
//
// The CPU backend follows docs/kernel-abi.md: one host buffer per
// kernelParams() entry, sized by bufferShapes(), scales stored as their
// code bytes (e8m0, ue4m3) or as themselves (f32, f16, bf16). Its results
// are the reference quantizer's representation (QuantizedTensor), so the
// same writer serves both backends and the files are equal byte for byte.
//
// Compiled kernels come from one process-wide lowbit::Jit (the library's
// thread-safe cache; LOWBIT_CACHE and LOWBIT_CACHE_DIR as everywhere). Its
// JIT engines must be destroyed before LLVM's own statics are (static
// destruction of an engine crashed a test binary), so the command entry
// calls releaseJitKernels() before it returns; a process that never calls
// it leaks the engines, which is also safe.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TOOLS_LOWBIT_JITBACKEND_H
#define LOWBIT_TOOLS_LOWBIT_JITBACKEND_H

#include "format/Quantize.h"
#include "runtime/spec/KernelSpec.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lowbit {
class Jit;
} // namespace lowbit

namespace lowbit::cli {

/// Wall-clock time of the steps of one JIT call, in milliseconds. A kernel
/// found in the cache costs 0 to compile.
struct JitTiming {
  double compileMillis = 0;
  double runMillis = 0;
};

/// One kernel parameter's row-major host buffer.
struct KernelBuffer {
  void *data = nullptr;
  int64_t rows = 0, cols = 0;
};
/// Runs `spec`'s kernel over its buffers (docs/kernel-abi.md order) in
/// place of the CPU JIT; the GPU emulator's backend (EmulatorBackend.h).
/// Returns false with a message in `error`.
using KernelRunner = std::function<bool(
    const KernelSpec &spec, const std::vector<KernelBuffer> &buffers,
    std::string *error)>;

/// Compiles `spec` for the CPU (or finds it in the cache). On failure
/// returns false with the compiler's message (verifier, lowering) in
/// `error`.
bool compileCpuKernel(const KernelSpec &spec, std::string *error,
                      double *compileMillis = nullptr);

/// Sets `backend` (the user's "cpu", or a choice left to lowbit) to "cpu"
/// when `spec` compiles for the CPU, else to "reference"; false, with the
/// compiler's message in `error`, when "cpu" was asked for and cannot be.
bool chooseCpuOrReference(const KernelSpec &spec, std::string &backend,
                          std::string *error);

/// The spec of the quantize kernel that computes what the reference
/// quantize(scheme, ..., given) computes, for `valueType` input.
KernelSpec quantizeSpecFor(const Scheme &scheme, ValueType valueType,
                           const StaticScales &given);

/// Quantizes with the CPU kernel. `input` holds rows * cols values of
/// `valueType`: f32, or f16/bf16 bit patterns. `given` as for the
/// reference quantize (static scales, a fixed global scale). `runner`, if
/// set, runs the kernel instead of the CPU JIT.
std::optional<QuantizedTensor>
jitQuantize(const Scheme &scheme, ValueType valueType, const void *input,
            int64_t rows, int64_t cols, const StaticScales &given,
            std::string *error, JitTiming *timing = nullptr,
            const KernelRunner &runner = {});

/// Dequantizes with the CPU kernel: rows * cols values of `valueType` as
/// little-endian bytes (f32, or f16/bf16 bit patterns).
std::optional<std::vector<uint8_t>>
jitDequantize(const QuantizedTensor &tensor, ValueType valueType,
              std::string *error, JitTiming *timing = nullptr,
              const KernelRunner &runner = {});

/// A fused quantize (prologue | quantize, docs/fusion.md) of a dynamic
/// scheme with the CPU kernel. `reads` holds the bytes of each parameter
/// the kernel reads, in kernelAbi() order: the input ([rows,
/// prologueInputWidth(cols)] values of spec.valueType), then the side
/// tensors (KernelAbiParam::side) in chain order. `residual`, if set,
/// receives the updated residual's bytes (add_rmsnorm). `runner`, if set,
/// runs the kernel instead of the CPU JIT.
std::optional<QuantizedTensor>
jitQuantizeFused(const KernelSpec &spec,
                 const std::vector<std::vector<uint8_t>> &reads, int64_t rows,
                 int64_t cols, std::vector<uint8_t> *residual,
                 std::string *error, JitTiming *timing = nullptr,
                 const KernelRunner &runner = {});

/// The process's Jit (LOWBIT_CACHE, LOWBIT_CACHE_DIR), made on first use
/// and destroyed by releaseJitKernels(); null and a message when it cannot
/// be made.
Jit *sharedJit(std::string *error);

/// Destroys the process's Jit and every kernel it holds (and their JIT
/// engines). Call before main() returns.
void releaseJitKernels();

} // namespace lowbit::cli

#endif // LOWBIT_TOOLS_LOWBIT_JITBACKEND_H
