//===- KernelCompileSupport.cpp - Shared steps of the kernel compilers ---===//

#include "runtime/compiler/KernelCompileSupport.h"

#include "dialect/LowbitDialect.h"
#include "lowering/PassVerification.h"
#include "runtime/compiler/Compiler.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
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

llvm::Expected<std::unique_ptr<HostExecutable>>
loopsModuleToHost(ModuleOp module) {
  if (llvm::Error error = lowerLoopsToLlvm(module))
    return error;
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

MemRefType memrefTypeOf(Builder &b, const KvKernelParam &param) {
  const std::string &name = param.elementType;
  Type element = name == "f16"    ? b.getF16Type()
                 : name == "bf16" ? b.getBF16Type()
                 : name == "i8"   ? b.getI8Type()
                 : name == "i32"  ? Type(b.getI32Type())
                                  : Type(b.getF32Type());
  SmallVector<int64_t> shape;
  for (int64_t size : param.shape)
    shape.push_back(isCallDim(size) ? ShapedType::kDynamic : size);
  return MemRefType::get(shape, element);
}

llvm::Expected<OwningOpRef<ModuleOp>> buildSignatureModule(
    MLIRContext &context, const std::vector<KvKernelParam> &params,
    llvm::function_ref<void(OpBuilder &, Location, ValueRange)> body,
    const std::string &what) {
  context.loadDialect<dialect::LowbitDialect, func::FuncDialect>();
  DiagnosticText diagnostics(context);
  OpBuilder b(&context);
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  SmallVector<Type> argTypes;
  for (const KvKernelParam &param : params)
    argTypes.push_back(memrefTypeOf(b, param));
  auto func = func::FuncOp::create(b, loc, kKernelName,
                                   b.getFunctionType(argTypes, {}));
  func->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  body(b, loc, entry->getArguments());
  func::ReturnOp::create(b, loc);
  if (failed(verify(*module)))
    return compileError("the " + what +
                        " module does not verify: " + diagnostics.str());
  return module;
}

llvm::Expected<OwningOpRef<ModuleOp>>
lowerModule(llvm::Expected<OwningOpRef<ModuleOp>> module,
            llvm::Error (*lower)(ModuleOp)) {
  if (!module)
    return module.takeError();
  if (llvm::Error error = lower(**module))
    return error;
  return module;
}

std::string moduleText(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream stream(text);
  module.print(stream);
  return text;
}

llvm::Expected<std::unique_ptr<HostExecutable>>
loopsToHost(LoopsModuleBuilder build) {
  ContextLease context = borrowContext();
  auto module = build(*context);
  if (!module)
    return module.takeError();
  return loopsModuleToHost(**module);
}

llvm::Expected<GpuCompilation> loopsToGpu(LoopsModuleBuilder build,
                                          const Target &target,
                                          const PtxOptions &options,
                                          const std::string &entry) {
  if (!target.isNvidia())
    return compileError(entry + " needs an NVIDIA target, got '" +
                        target.str() + "'");
  ContextLease context = borrowContext();
  auto module = build(*context);
  if (!module)
    return module.takeError();
  GpuCompileOptions compileOptions;
  compileOptions.ptx = options;
  return compileModuleForGpu(**module, /*lowerToLoops=*/nullptr, target,
                             compileOptions);
}

} // namespace lowbit::compiler
