//===- LowbitFusion.h - lowbit.fused kernels to loops ------------*- C++
//-*-===//
//
// The rewrites of lowbit-fusion-to-loops, for pipelines that compose them
// (docs/fusion.md).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_LOWBITFUSION_H
#define LOWBIT_LOWERING_LOWBITFUSION_H

namespace mlir {
class DialectRegistry;
class RewritePatternSet;
} // namespace mlir

namespace lowbit {

/// Inlines each lowbit.fused region in place of the op: its block
/// arguments become the operands, its results the yielded values.
void populateLowbitFusionInlinePatterns(mlir::RewritePatternSet &patterns);

/// What lowering a fused kernel needs registered: the bufferization models
/// of linalg and tensor.
void registerLowbitFusionDependencies(mlir::DialectRegistry &registry);

} // namespace lowbit

#endif // LOWBIT_LOWERING_LOWBITFUSION_H
