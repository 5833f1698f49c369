//===- MatmulArithmetic.h - Arithmetic shared by the matmul's kernels -----===//
//
// The steps of docs/matmul.md's order that the CPU loops
// (LowbitMatmulToLoops) and the GPU GEMV (GpuMatmulGemv) emit alike, so
// that both round the way matmul::roundOutputBits does.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_MATMULARITHMETIC_H
#define LOWBIT_LOWERING_MATMULARITHMETIC_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace lowbit {

/// The f32 accumulator `acc` as an element of Y's `outputType` (f32, f16
/// or bf16): RNE, a NaN the canonical NaN of that type
/// (matmul::roundOutputBits), the bits the GPU's cvt.rn gives.
inline mlir::Value roundMatmulOutput(mlir::ImplicitLocOpBuilder &b,
                                     mlir::Value acc,
                                     mlir::FloatType outputType) {
  uint64_t canonicalBits = outputType.isF32() ? 0x7fffffffu : 0x7fffu;
  mlir::Value canonicalNan = mlir::arith::ConstantOp::create(
      b, b.getFloatAttr(outputType,
                        llvm::APFloat(outputType.getFloatSemantics(),
                                      llvm::APInt(outputType.getWidth(),
                                                  canonicalBits))));
  mlir::Value isNan = mlir::arith::CmpFOp::create(
      b, mlir::arith::CmpFPredicate::UNO, acc, acc);
  mlir::Value rounded =
      outputType.isF32()
          ? acc
          : mlir::arith::TruncFOp::create(b, outputType, acc).getResult();
  return mlir::arith::SelectOp::create(b, isNan, canonicalNan, rounded);
}

} // namespace lowbit

#endif // LOWBIT_LOWERING_MATMULARITHMETIC_H
