//===- lowbit-opt.cpp - mlir-opt for the lowbit dialect -------------------===//
//
// Parses, verifies, prints and transforms lowbit IR. Only the dialects that
// lowbit's kernel templates and lowering passes produce are registered, one
// header per dialect: the all-in-one registration headers cost ~20 s of
// compile time per translation unit (TOOLCHAIN.md). The lowering's named
// pipelines (lowering/Pipelines.h) run the compiler's passes by name.
//
//===----------------------------------------------------------------------===//

#include "dialect/LowbitOps.h"
#include "lowering/CpuTail.h"
#include "lowering/GpuTail.h"
#include "lowering/Passes.h"
#include "lowering/Pipelines.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerTransformsPasses();
  lowbit::registerLoweringPasses();
  lowbit::registerLoweringPipelines();
  mlir::DialectRegistry registry;
  registry.insert<lowbit::dialect::LowbitDialect, mlir::arith::ArithDialect,
                  mlir::bufferization::BufferizationDialect,
                  mlir::cf::ControlFlowDialect, mlir::func::FuncDialect,
                  mlir::linalg::LinalgDialect,
                  mlir::math::MathDialect, mlir::memref::MemRefDialect,
                  mlir::scf::SCFDialect, mlir::tensor::TensorDialect>();
  // The GPU tail's dialects (gpu, nvvm, llvm, vector) and the interfaces
  // its conversions need, and the CPU tail's: what the pipelines produce.
  lowbit::registerGpuTailDependencies(registry);
  lowbit::registerCpuTailDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "lowbit optimizer driver\n", registry));
}
