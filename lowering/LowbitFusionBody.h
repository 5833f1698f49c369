//===- LowbitFusionBody.h - Prologues as upstream ops on tensors -*- C++
//-*-===//
//
// Builds a `lowbit.fused` kernel for a prologue chain (format/Prologue.h):
// linalg.generic ops on tensors whose scalar bodies are the reference's f32
// operations in the reference's order (docs/fusion.md), then the
// lowbit.quantize. The scalar pieces (exp, silu, a map expression) are also
// exported so that every lowering emits the same arithmetic.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_LOWBITFUSIONBODY_H
#define LOWBIT_LOWERING_LOWBITFUSIONBODY_H

#include "dialect/LowbitOps.h"
#include "format/Prologue.h"

#include "mlir/IR/Builders.h"

namespace lowbit {

/// f32 scalars, exactly prologueExp / prologueSilu / evaluateExpr.
mlir::Value emitPrologueExp(mlir::OpBuilder &b, mlir::Location loc,
                            mlir::Value x);
mlir::Value emitPrologueSilu(mlir::OpBuilder &b, mlir::Location loc,
                             mlir::Value x);
mlir::Value emitPrologueExpr(mlir::OpBuilder &b, mlir::Location loc,
                             const PrologueExpr &expr, mlir::Value x);

/// Marks the [rows, 32] linalg.generic of RMSNorm's partial sums: its 32
/// columns are the lanes of the warp that owns the row (the GPU lowering
/// keeps one per lane; the CPU lowering runs it as any generic).
inline constexpr const char *kLanePartialsAttr = "lowbit.lane_partials";
/// Marks a Hadamard butterfly stage (its half h, an i64): the GPU stages
/// wide blocks in shared memory (lowering/GpuFusedRows.cpp).
inline constexpr const char *kHadamardHalfAttr = "lowbit.hadamard_half";

/// What the fused quantize takes besides its input, and what it returns;
/// null values and types are absent (as lowbit.quantize's builder wants).
struct FusedQuantizeSignature {
  mlir::Value staticScales, staticZeros, staticGlobal;
  mlir::Type codes, scales, zeros, global;
  dialect::SchemeAttr scheme;
};

/// Creates `lowbit.fused` at `b`'s point: `chain` applied to `input` (the
/// kernel's dtype, [rows, prologueInputWidth] ), then the quantize.
/// `sideInputs` are the chain's side tensors in order (prologueOperands of
/// each prologue; weights and smoothing vectors are [1, cols], residuals
/// [rows, cols], all in the input's dtype). Results: the quantize's, then
/// the last add_rmsnorm's updated residual (side_outputs = 1) if any.
dialect::FusedOp buildFusedQuantize(mlir::OpBuilder &b, mlir::Location loc,
                                    llvm::ArrayRef<Prologue> chain,
                                    mlir::Value input,
                                    mlir::ValueRange sideInputs,
                                    const FusedQuantizeSignature &signature);

} // namespace lowbit

#endif // LOWBIT_LOWERING_LOWBITFUSIONBODY_H
