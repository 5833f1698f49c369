//===- GpuMma.cpp - Build nvvm.mma.sync with f32 accumulators -------------===//
//
// NVVM wants f16 multiplicands as vector<2xf16> and bf16 ones as i32 (the
// table in nvvm.mma.sync's description); the builder converts either form
// with a bitcast, so that callers pass what they loaded.
//
//===----------------------------------------------------------------------===//

#include "lowering/GpuMma.h"
#include "lowering/GpuMmaLayout.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;

namespace lowbit {

FailureOr<SmallVector<Value, 4>>
buildMmaSyncF32(OpBuilder &builder, Location loc, ArrayRef<Value> a,
                ArrayRef<Value> b, ArrayRef<Value> c, Type elementType) {
  bool isBf16 = isa<BFloat16Type>(elementType);
  if (!isBf16 && !isa<Float16Type>(elementType))
    return emitError(loc, "mma.sync: multiplicands must be f16 or bf16, got ")
           << elementType;
  // The f16/bf16 shape of the fragment model whose register counts these
  // are.
  std::optional<mma::MmaFragmentShape> shape;
  for (mma::MmaShape candidate :
       {mma::MmaShape::M16N8K16, mma::MmaShape::M16N8K8}) {
    mma::MmaFragmentShape fragments = mma::fragmentShape(candidate);
    if (int(a.size()) == fragments.aRegisters() &&
        int(b.size()) == fragments.bRegisters())
      shape = fragments;
  }
  if (!shape || c.size() != size_t(mma::kAccumulatorRegisters))
    return emitError(loc, "mma.sync: m16n8k16 takes 4 A, 2 B and 4 C "
                          "registers, m16n8k8 2, 1 and 4; got ")
           << a.size() << ", " << b.size() << " and " << c.size();
  Type i32 = builder.getI32Type();
  Type pair = VectorType::get({2}, elementType);
  // The operand type NVVM takes for this element type.
  Type operandType = isBf16 ? i32 : pair;
  for (Value value : llvm::concat<const Value>(a, b))
    if (value.getType() != i32 && value.getType() != pair)
      return emitError(loc, "mma.sync: a multiplicand register must be ")
             << pair << " or " << i32 << ", got " << value.getType();
  Type f32 = builder.getF32Type();
  for (Value value : c)
    if (value.getType() != f32)
      return emitError(loc, "mma.sync: accumulators must be f32, got ")
             << value.getType();

  auto asOperand = [&](Value value) -> Value {
    if (value.getType() == operandType)
      return value;
    return LLVM::BitcastOp::create(builder, loc, operandType, value);
  };
  SmallVector<Value> operandsA, operandsB;
  for (Value value : a)
    operandsA.push_back(asOperand(value));
  for (Value value : b)
    operandsB.push_back(asOperand(value));
  NVVM::MMATypes ptxType = isBf16 ? NVVM::MMATypes::bf16 : NVVM::MMATypes::f16;
  auto resultType = LLVM::LLVMStructType::getLiteral(
      builder.getContext(), SmallVector<Type>(mma::kAccumulatorRegisters, f32));
  auto mmaOp = NVVM::MmaOp::create(
      builder, loc, resultType, operandsA, operandsB, c,
      ArrayRef<int64_t>{mma::kMmaM, mma::kMmaN, shape->k}, std::nullopt,
      std::nullopt, std::array<NVVM::MMATypes, 2>{ptxType, ptxType},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  SmallVector<Value, 4> d;
  for (int64_t i = 0; i < mma::kAccumulatorRegisters; ++i)
    d.push_back(LLVM::ExtractValueOp::create(builder, loc, mmaOp.getResult(),
                                             ArrayRef<int64_t>{i}));
  return d;
}

FailureOr<SmallVector<Value, 4>>
buildMmaBlockScaleF32(OpBuilder &builder, Location loc, ArrayRef<Value> a,
                      ArrayRef<Value> b, ArrayRef<Value> c, Value scaleA,
                      Value scaleB, int64_t blockK) {
  mma::MmaFragmentShape shape = mma::kM16N8K64E2M1;
  Type i32 = builder.getI32Type(), f32 = builder.getF32Type();
  if (blockK != 16 && blockK != 32)
    return emitError(loc, "mma.block_scale: scale blocks of 16 (NVFP4) or "
                          "32 (MXFP4) along K, got ")
           << blockK;
  if (int(a.size()) != shape.aRegisters() ||
      int(b.size()) != shape.bRegisters() ||
      c.size() != size_t(mma::kAccumulatorRegisters))
    return emitError(loc, "mma.block_scale: m16n8k64 takes 4 A, 2 B and 4 C "
                          "registers; got ")
           << a.size() << ", " << b.size() << " and " << c.size();
  for (Value value : llvm::concat<const Value>(a, b))
    if (value.getType() != i32)
      return emitError(loc, "mma.block_scale: a multiplicand register must "
                            "be i32 (8 packed e2m1), got ")
             << value.getType();
  for (Value value : c)
    if (value.getType() != f32)
      return emitError(loc, "mma.block_scale: accumulators must be f32, got ")
             << value.getType();
  if (scaleA.getType() != i32 || scaleB.getType() != i32)
    return emitError(loc, "mma.block_scale: scale data must be i32");
  bool nvfp4 = blockK == 16;
  Value zero = LLVM::ConstantOp::create(builder, loc, builder.getI16Type(),
                                        builder.getI16IntegerAttr(0));
  auto resultType = LLVM::LLVMStructType::getLiteral(
      builder.getContext(), SmallVector<Type>(mma::kAccumulatorRegisters, f32));
  auto mmaOp = NVVM::MmaBlockScaleOp::create(
      builder, loc, resultType, a, b, c, scaleA, zero, zero, scaleB, zero, zero,
      ArrayRef<int64_t>{mma::kMmaM, mma::kMmaN, shape.k},
      std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::e2m1, NVVM::MMATypes::e2m1},
      nvfp4 ? NVVM::ScaleVecSize::X4 : NVVM::ScaleVecSize::X2,
      nvfp4 ? NVVM::BlockScaleFormat::UE4M3 : NVVM::BlockScaleFormat::UE8M0,
      nvfp4 ? NVVM::MMABlockScaleKind::MXF4NVF4
            : NVVM::MMABlockScaleKind::MXF4);
  SmallVector<Value, 4> d;
  for (int64_t i = 0; i < mma::kAccumulatorRegisters; ++i)
    d.push_back(LLVM::ExtractValueOp::create(builder, loc, mmaOp.getResult(),
                                             ArrayRef<int64_t>{i}));
  return d;
}

} // namespace lowbit
