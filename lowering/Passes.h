//===- Passes.h - lowbit lowering passes ------------------------*- C++ -*-===//

#ifndef LOWBIT_LOWERING_PASSES_H
#define LOWBIT_LOWERING_PASSES_H

#include "mlir/Pass/Pass.h"

#include <memory>
#include <string>

namespace mlir {
class DialectRegistry;
namespace arith {
class ArithDialect;
}
namespace scf {
class SCFDialect;
}
namespace memref {
class MemRefDialect;
}
namespace math {
class MathDialect;
}
namespace bufferization {
class BufferizationDialect;
}
namespace vector {
class VectorDialect;
}
namespace NVVM {
class NVVMDialect;
}
namespace LLVM {
class LLVMDialect;
}
namespace gpu {
class GPUDialect;
}
namespace linalg {
class LinalgDialect;
}
namespace affine {
class AffineDialect;
}
namespace tensor {
class TensorDialect;
}
class RewritePatternSet;
} // namespace mlir

namespace lowbit {

#define GEN_PASS_DECL
#include "lowering/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "lowering/Passes.h.inc"

/// lowbit-to-gpu's rewrites: lowbit.quantize (dynamic groups along the row),
/// lowbit.dequantize (per-tensor, per-token, row groups), lowbit.fused rows,
/// the KV append/dequantize rows and decode attention's split stage, to
/// gpu.launch ops. Ops they do not cover are left alone.
void populateLowbitToGpuPatterns(mlir::RewritePatternSet &patterns,
                                 int64_t threadsPerBlock = 256);

/// Dynamic per-tensor quantize (byte codes) in two launches: a grid-stride
/// statistics launch reduced through the runtime's workspace parameter,
/// then the quantize pass (lowering/GpuTensorReduce.cpp).
void populateLowbitTensorReducePatterns(mlir::RewritePatternSet &patterns,
                                        int64_t threadsPerBlock);

/// Dynamic per-token (per_channel axis 0) quantize in one launch, one warp
/// per row (lowering/GpuRowReduce.cpp).
void populateLowbitRowReducePatterns(mlir::RewritePatternSet &patterns,
                                     int64_t threadsPerBlock);

} // namespace lowbit

#endif // LOWBIT_LOWERING_PASSES_H
