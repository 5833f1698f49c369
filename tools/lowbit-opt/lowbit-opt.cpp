//===- lowbit-opt.cpp - mlir-opt for the lowbit dialect -------------------===//
//
// Parses, verifies, prints and transforms lowbit IR. Only the dialects that
// lowbit's kernel templates use are registered, to keep the tool small.
//
//===----------------------------------------------------------------------===//

#include "dialect/LowbitOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerTransformsPasses();
  mlir::DialectRegistry registry;
  registry.insert<lowbit::dialect::LowbitDialect, mlir::arith::ArithDialect,
                  mlir::func::FuncDialect, mlir::tensor::TensorDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "lowbit optimizer driver\n", registry));
}
