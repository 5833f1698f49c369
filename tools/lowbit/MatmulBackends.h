//===- MatmulBackends.h - Where `lowbit matmul` runs its kernel -*- C++ -*-===//
//
// The quantized-weight matmul (docs/matmul.md) over one weight set and one
// X, on the CPU through lowbit::Jit::getKv (the JIT's caches and compiler),
// or as the GPU kernels of a target in the GPU emulator (the one GPU
// compile, compiler::matmulGpuText, then EmulatedProgram). Both take and
// give the kernel ABI's bytes (runtime/compiler/MatmulSignature.h), so
// their outputs compare byte for byte.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TOOLS_LOWBIT_MATMULBACKENDS_H
#define LOWBIT_TOOLS_LOWBIT_MATMULBACKENDS_H

#include "format/Quantize.h"
#include "matmul/MatmulSpec.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lowbit::cli {

struct MatmulProblem {
  /// A dynamic spec whose scheme is the weights'.
  matmul::MatmulSpec spec;
  const QuantizedTensor *weights = nullptr;
  /// [m, K] elements of spec.input, little endian.
  std::vector<uint8_t> x;
  int64_t m = 0;
  /// [N] when spec.bias.
  std::vector<float> bias;
  /// The prologues' side tensors ([K] of spec.input each), in ABI order.
  std::vector<std::vector<uint8_t>> sides;
};

/// Y's bytes ([m, N] of spec.output) from the CPU kernel; nullopt and a
/// message on failure. `compileMillis`, if set, receives the compile time
/// (0 for a cached kernel).
std::optional<std::vector<uint8_t>>
runMatmulOnCpu(const MatmulProblem &problem, std::string *error,
               double *compileMillis = nullptr);

/// Y's bytes from the GPU kernels of `target` run in the emulator.
std::optional<std::vector<uint8_t>>
runMatmulInEmulator(const MatmulProblem &problem, std::string_view target,
                    std::string *error);

} // namespace lowbit::cli

#endif // LOWBIT_TOOLS_LOWBIT_MATMULBACKENDS_H
