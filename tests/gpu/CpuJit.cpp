//===- CpuJit.cpp - A minimal JIT for loops-level test functions ----------===//

#include "CpuJit.h"
#include "GpuTestSupport.h"

#include "dialect/LowbitOps.h"
#include "format/Format.h"
#include "lowering/CpuTail.h"
#include "lowering/Passes.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"

#include "llvm/Support/raw_ostream.h"

namespace lowbit::test {

struct CpuJit::Impl {
  mlir::MLIRContext context;
  std::unique_ptr<lowbit::HostExecutable> executable;
};

CpuJit::CpuJit() : impl(std::make_unique<Impl>()) {}
CpuJit::~CpuJit() = default;

std::unique_ptr<CpuJit> CpuJit::compile(const std::string &moduleText,
                                        std::string &error) {
  std::unique_ptr<CpuJit> jit(new CpuJit());
  mlir::MLIRContext &context = jit->impl->context;
  mlir::DialectRegistry registry;
  registry.insert<lowbit::dialect::LowbitDialect, mlir::arith::ArithDialect,
                  mlir::func::FuncDialect, mlir::scf::SCFDialect,
                  mlir::memref::MemRefDialect, mlir::cf::ControlFlowDialect,
                  mlir::LLVM::LLVMDialect>();
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  context.appendDialectRegistry(registry);

  mlir::OwningOpRef<mlir::ModuleOp> module =
      parseTestModule(context, moduleText, error);
  if (!module)
    return nullptr;
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &diag) {
    llvm::raw_string_ostream(diagnostics) << diag << "\n";
    return mlir::success();
  });
  mlir::PassManager pm(&context);
  pm.addPass(lowbit::createLowbitExpandCodecs());
  pm.addPass(mlir::createSCFToControlFlowPass());
  pm.addPass(mlir::createArithToLLVMConversionPass());
  pm.addPass(mlir::createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(mlir::createConvertFuncToLLVMPass());
  pm.addPass(mlir::createConvertControlFlowToLLVMPass());
  pm.addPass(mlir::createReconcileUnrealizedCastsPass());
  if (mlir::failed(pm.run(*module))) {
    error = "lowering failed: " + diagnostics;
    return nullptr;
  }
  // The product's host JIT (lowering/CpuTail.h), looked up by address
  // only: no packed wrappers.
  lowbit::HostJitOptions options;
  options.optLevel = 2;
  options.packedWrappers = false;
  auto executable = lowbit::makeHostExecutable(*module, options);
  if (!executable) {
    error = "JIT failed: " + llvm::toString(executable.takeError());
    return nullptr;
  }
  jit->impl->executable = std::move(*executable);
  return jit;
}

void *CpuJit::lookup(const std::string &name) {
  auto symbol = impl->executable->address("_mlir_ciface_" + name);
  if (!symbol) {
    llvm::consumeError(symbol.takeError());
    return nullptr;
  }
  return *symbol;
}

std::string formatAttrText(const std::string &formatName) {
  mlir::MLIRContext context;
  context.loadDialect<lowbit::dialect::LowbitDialect>();
  std::optional<lowbit::Format> format = lowbit::lookupFormat(formatName);
  if (!format)
    return "<unknown format " + formatName + ">";
  std::string text;
  llvm::raw_string_ostream stream(text);
  stream << lowbit::dialect::toFormatAttr(&context, *format);
  return text;
}

} // namespace lowbit::test
