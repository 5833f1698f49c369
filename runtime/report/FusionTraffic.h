//===- FusionTraffic.h - Bytes a fused kernel saves, from the model -------===//
//
// docs/fusion.md, "Bytes per element": a fused kernel (prologue | quantize)
// reads its input and side tensors once and writes the codes, scales, zero
// points, global scale and (add_rmsnorm) the updated residual. Unfused,
// each prologue is a kernel of its own that writes its [rows, cols] result
// in the input's dtype, and the next kernel reads it back: 2 x value bytes
// more per element and per prologue. Every size comes from the kernel ABI
// (runtime/spec/KernelAbi.h) and so from the format model; nothing is
// typed in. `lowbit demo`, `lowbit eval --fused` and `lowbit report` print
// it. MLIR-free.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_REPORT_FUSIONTRAFFIC_H
#define LOWBIT_RUNTIME_REPORT_FUSIONTRAFFIC_H

#include "runtime/spec/KernelSpec.h"

#include <cstdint>

namespace lowbit::report {

struct FusionTraffic {
  /// Bytes moved at [rows, cols]: one fused kernel, and the unfused
  /// sequence (the prologues' kernels, then the plain quantize).
  double fusedBytes = 0, unfusedBytes = 0;
  /// Kernels of the unfused sequence: one per prologue, plus the quantize.
  int unfusedKernels = 1;
  double fusedPerElement = 0, unfusedPerElement = 0;
};

/// The traffic of `spec` (a quantize, fused or not) for a [rows, cols]
/// quantized tensor; rows and cols must be positive.
FusionTraffic fusionTraffic(const KernelSpec &spec, int64_t rows, int64_t cols);

} // namespace lowbit::report

#endif // LOWBIT_RUNTIME_REPORT_FUSIONTRAFFIC_H
