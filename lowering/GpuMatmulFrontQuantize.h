//===- GpuMatmulFrontQuantize.h - X behind prologues, into the workspace --===//
//
// `PROLOGUE | matmul w=SCHEME a=SCHEME` on the GPU (docs/matmul-gpu.md,
// "Prologues"): the chain needs X's whole row (rmsnorm's sum of squares, a
// Hadamard block wider than a K tile) before X's scale exists, so the GEMM
// cannot quantize X in its A load. A front kernel, the fused
// `prologue | quantize` kernel that `quantize` builds for the same chain
// (LowbitFusionBody.h, lowered by GpuFusedRows.cpp), writes X's codes and
// scales into the workspace's region that grows with X's rows
// (docs/kernel-abi.md, "Workspace"); the GEMM reads them there.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_GPUMATMULFRONTQUANTIZE_H
#define LOWBIT_LOWERING_GPUMATMULFRONTQUANTIZE_H

#include "dialect/LowbitMatmulOps.h"
#include "lowering/GpuMatmulQuantized.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"

#include <string>

namespace lowbit {

/// Why the front kernel cannot quantize X for `activations`, or "".
std::string frontQuantizeRefusal(const Scheme &activations);

/// Emits, at `builder`'s point, the fused prologue | quantize kernel of
/// `op`'s chain writing X's codes and scales into a workspace argument it
/// adds to `op`'s function; returns views of them for the GEMM. Fails,
/// emitting nothing, when the function has a workspace already.
mlir::FailureOr<QuantizedX>
emitFrontQuantize(mlir::RewriterBase &rewriter,
                  mlir::ImplicitLocOpBuilder &builder, dialect::MatmulOp op,
                  const Scheme &activations);

} // namespace lowbit

#endif // LOWBIT_LOWERING_GPUMATMULFRONTQUANTIZE_H
