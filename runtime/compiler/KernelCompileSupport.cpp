//===- KernelCompileSupport.cpp - Shared steps of the kernel compilers ---===//

#include "runtime/compiler/KernelCompileSupport.h"

#include "lowering/PassVerification.h"

#include "mlir/Pass/PassManager.h"

using namespace mlir;

namespace lowbit::compiler {

llvm::Error compileError(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

DiagnosticText::DiagnosticText(MLIRContext &context)
    : handler(&context, [this](Diagnostic &diagnostic) {
        text += (text.empty() ? "" : "\n") + diagnostic.str();
        return success();
      }) {}

llvm::Error runLoweringPasses(ModuleOp module, ArrayRef<PassFactory> passes,
                              const std::string &what) {
  DiagnosticText diagnostics(*module.getContext());
  PassManager pm(module.getContext());
  configureVerifier(pm);
  for (PassFactory create : passes)
    pm.addPass(create());
  if (failed(pm.run(module)))
    return compileError(what + " failed: " + diagnostics.str());
  return llvm::Error::success();
}

llvm::Expected<PtxModule> gpuModuleToPtx(ModuleOp module, const Target &target,
                                         const PtxOptions &options) {
  DiagnosticText diagnostics(*module.getContext());
  std::string error;
  FailureOr<PtxModule> ptx = lowerToPtx(module, target, error, options);
  if (failed(ptx))
    return compileError(error.empty() ? diagnostics.str() : error);
  return std::move(*ptx);
}

llvm::Expected<std::unique_ptr<HostExecutable>>
loopsModuleToHost(ModuleOp module) {
  if (llvm::Error error = lowerLoopsToLlvm(module))
    return std::move(error);
  return makeHostExecutable(module);
}

Type kvElementType(Builder &b, kv::KvValueType type) {
  switch (type) {
  case kv::KvValueType::F16:
    return b.getF16Type();
  case kv::KvValueType::BF16:
    return b.getBF16Type();
  case kv::KvValueType::F32:
    break;
  }
  return b.getF32Type();
}

} // namespace lowbit::compiler
