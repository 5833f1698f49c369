//===- MatmulKernelCommon.h - What lowbit.matmul's GPU kernels share -*- C++
//-*-===//
//
// The buffers of one matmul and the two roundings of docs/matmul.md's
// order that both GPU kernels (the GEMV of GpuMatmulGemv.h, the mma.sync
// GEMM of GpuMatmulGemm.h) apply: w rounded to X's dtype, the accumulator
// rounded to Y's with the canonical NaN.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_MATMULKERNELCOMMON_H
#define LOWBIT_LOWERING_MATMULKERNELCOMMON_H

#include "lowering/GpuKernelBuilder.h"
#include "lowering/GpuMmaLayout.h"
#include "lowering/MatmulArithmetic.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

namespace lowbit {

/// The buffers of one matmul: X [M, K], the weights as lowbit.dequantize
/// takes them for an [N, K] result (codes, scales, optional zeros and
/// global), optional bias ([N] or [1, N]), Y [M, N].
struct MatmulBuffers {
  mlir::Value x, codes, scales, zeros, global, bias, output;
};

/// Base of the matmul kernels' emitters.
class MatmulKernelBuilder : public gpu_mapping::GpuKernelBuilder {
public:
  MatmulKernelBuilder(mlir::ImplicitLocOpBuilder &builder, const Scheme &scheme,
                      const MatmulBuffers &buffers, int64_t threadsPerBlock)
      : GpuKernelBuilder(builder, scheme, threadsPerBlock), buffers(buffers) {}

protected:
  mlir::Type inputType() const {
    return mlir::cast<mlir::MemRefType>(buffers.x.getType()).getElementType();
  }
  /// The order's w as X's element: the reference's f32 rounded to X's
  /// dtype (RNE; the cvt.rn gives the canonical NaN).
  mlir::Value roundWeight(mlir::Value weight) {
    return narrow(weight, inputType());
  }
  /// The order's w as an f32: rounded to X's dtype and widened back,
  /// exactly.
  mlir::Value toInputType(mlir::Value weight) {
    return widen(roundWeight(weight));
  }
  /// acc as Y's element: RNE, a NaN the canonical NaN of Y's type
  /// (matmul::roundOutputBits).
  mlir::Value roundOutput(mlir::Value acc) {
    return roundMatmulOutput(
        b, acc,
        mlir::cast<mlir::FloatType>(
            mlir::cast<mlir::MemRefType>(buffers.output.getType())
                .getElementType()));
  }
  /// What weight (row, col) of W [N, K] needs, read from the stored
  /// scales (and zero points): loadParams for the row-major layouts; for
  /// the Blackwell 128x4 tile layout (groups along K) the element at the
  /// format model's offset (swizzle128x4Offset: ((row / 128) ceil(Kg / 4)
  /// + g / 4) 512 + (row % 32) 16 + ((row / 32) % 4) 4 + g % 4, g = col /
  /// group; the stored [roundUp(N, 128), roundUp(Kg, 4)] read flat).
  GroupParams loadWeightParams(mlir::Value row, mlir::Value col) {
    if (scheme.scale.layout != ScaleLayout::Swizzle128x4)
      return loadParams(buffers.scales, buffers.zeros, row, col);
    auto divui = [&](mlir::Value value, int64_t divisor) -> mlir::Value {
      return mlir::arith::DivUIOp::create(b, value, idx(divisor));
    };
    auto remui = [&](mlir::Value value, int64_t divisor) -> mlir::Value {
      return mlir::arith::RemUIOp::create(b, value, idx(divisor));
    };
    mlir::Value group = divui(col, scheme.scale.groupSize);
    // The stored scale columns are Kg rounded up to 4: a row of tiles.
    mlir::Value tilesPerRow = divui(kit::dimOf(b, buffers.scales, 1), 4);
    mlir::Value tile = add(mul(divui(row, 128), tilesPerRow), divui(group, 4));
    mlir::Value offset =
        add(add(mul(tile, idx(512)), mul(remui(row, 32), idx(16))),
            add(mul(remui(divui(row, 32), 4), idx(4)), remui(group, 4)));
    auto flat = [&](mlir::Value buffer) -> mlir::Value {
      return mlir::memref::CollapseShapeOp::create(
          b, buffer, llvm::ArrayRef<mlir::ReassociationIndices>{{0, 1}});
    };
    GroupParams params;
    params.scale = decodeScale(mlir::memref::LoadOp::create(
        b, flat(buffers.scales), mlir::ValueRange{offset}));
    if (scaleKind() == ScaleKind::Asymmetric)
      params.zero = mlir::arith::ExtUIOp::create(
          b, b.getI32Type(),
          mlir::memref::LoadOp::create(b, flat(buffers.zeros),
                                       mlir::ValueRange{offset}));
    return params;
  }
  /// acc + bias[column] (f32), or acc without a bias.
  mlir::Value addBias(mlir::Value acc, mlir::Value column) {
    if (!buffers.bias)
      return acc;
    // [N] or the ABI's [1, N].
    llvm::SmallVector<mlir::Value, 2> at(
        mlir::cast<mlir::MemRefType>(buffers.bias.getType()).getRank() - 1,
        idx(0));
    at.push_back(column);
    return mlir::arith::AddFOp::create(
        b, acc, mlir::memref::LoadOp::create(b, buffers.bias, at));
  }

  const MatmulBuffers &buffers;
  /// Y from a warp's mma.sync accumulator fragments: accumulator i of
  /// tile (tileM, tileN), at accumulatorElement(lane, i) from (warpRow,
  /// warpColumn), + bias, rounded, stored when inside [m, n]. `total`
  /// holds the tiles row-major, kAccumulatorRegisters each.
  void storeAccumulatorTiles(llvm::ArrayRef<mlir::Value> total, int64_t mTiles,
                             int64_t nTiles, mlir::Value warpRow,
                             mlir::Value warpColumn, mlir::Value group,
                             mlir::Value threadInGroup, mlir::Value m,
                             mlir::Value n) {
    for (int64_t tileM = 0; tileM < mTiles; ++tileM)
      for (int64_t tileN = 0; tileN < nTiles; ++tileN)
        for (int64_t i = 0; i < mma::kAccumulatorRegisters; ++i) {
          mlir::Value row =
              add(warpRow, add(idx(tileM * mma::kMmaM + 8 * (i / 2)), group));
          mlir::Value column =
              add(warpColumn, add(idx(tileN * mma::kMmaN + i % 2),
                                  mul(threadInGroup, idx(2))));
          auto inside = mlir::scf::IfOp::create(
              b,
              andAll({mlir::arith::CmpIOp::create(
                          b, mlir::arith::CmpIPredicate::ult, row, m),
                      mlir::arith::CmpIOp::create(
                          b, mlir::arith::CmpIPredicate::ult, column, n)}),
              false);
          mlir::OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(inside.thenBlock()->getTerminator());
          mlir::Value acc = addBias(
              total[(tileM * nTiles + tileN) * mma::kAccumulatorRegisters + i],
              column);
          mlir::memref::StoreOp::create(b, roundOutput(acc), buffers.output,
                                        mlir::ValueRange{row, column});
        }
  }
};

} // namespace lowbit

#endif // LOWBIT_LOWERING_MATMULKERNELCOMMON_H
