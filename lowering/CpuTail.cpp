//===- CpuTail.cpp - Loops -> LLVM dialect -> host JIT --------------------===//

#include "lowering/CpuTail.h"

#include "lowering/PassVerification.h"
#include "lowering/Passes.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ExecutionEngine/JITEventListener.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/ExecutionEngine/Orc/RTDyldObjectLinkingLayer.h"
#include "llvm/ExecutionEngine/SectionMemoryManager.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <mutex>
#include <string_view>

#define DEBUG_TYPE "lowbit-cpu-tail"

using namespace mlir;

namespace lowbit {
namespace {

llvm::Error makeError(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// LLVM's native target must be initialized once per process before the
/// first JIT (TOOLCHAIN.md: the target and its asm printer).
void initializeNativeTargetOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

/// Whether the environment variable `name` asks for something ("1", "on",
/// "true"; unset, empty and "0" do not).
bool environmentFlag(const char *name) {
  const char *value = std::getenv(name);
  if (!value)
    return false;
  std::string_view text = value;
  return !text.empty() && text != "0" && text != "off" && text != "false";
}

} // namespace

void buildCpuTailPipeline(OpPassManager &pm) {
  pm.addPass(createLowbitExpandCodecs());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createSCFToControlFlowPass());
  // bf16 truncf/extf become integer arithmetic (RNE), so the JIT needs no
  // soft-float runtime symbols for them.
  arith::ArithExpandOpsPassOptions expandOptions;
  expandOptions.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expandOptions));
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void registerCpuTailDialects(DialectRegistry &registry) {
  registry.insert<arith::ArithDialect, cf::ControlFlowDialect,
                  func::FuncDialect, LLVM::LLVMDialect, math::MathDialect,
                  memref::MemRefDialect, scf::SCFDialect>();
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
}

std::string cpuTailPipelineText() {
  OpPassManager pm(ModuleOp::getOperationName());
  buildCpuTailPipeline(pm);
  std::string text;
  llvm::raw_string_ostream stream(text);
  pm.printAsTextualPipeline(stream);
  return text;
}

llvm::Error lowerLoopsToLlvm(ModuleOp module) {
  std::string diagnostics;
  ScopedDiagnosticHandler handler(module.getContext(), [&](Diagnostic &diag) {
    diagnostics += diag.str() + "\n";
    return success();
  });
  PassManager pm(module.getContext());
  configureVerifier(pm);
  buildCpuTailPipeline(pm);
  if (failed(pm.run(module)))
    return makeError("lowering to the LLVM dialect failed: " + diagnostics);
  return llvm::Error::success();
}

llvm::Expected<std::string> translateToLlvmIr(ModuleOp module) {
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext);
  if (!llvmModule)
    return makeError("translation to LLVM IR failed");
  std::string text;
  llvm::raw_string_ostream stream(text);
  llvmModule->print(stream, nullptr);
  return text;
}

HostExecutable::~HostExecutable() = default;

namespace {

/// The packed form `_mlir_<name>(void **args)` of every function `module`
/// defines (what mlir::ExecutionEngine::invokePacked calls): args[i] points
/// at the i-th argument.
void addPackedWrappers(llvm::Module &module) {
  llvm::IRBuilder<> builder(module.getContext());
  std::vector<llvm::Function *> defined;
  for (llvm::Function &function : module)
    if (!function.isDeclaration())
      defined.push_back(&function);
  auto *packedType = llvm::FunctionType::get(
      builder.getVoidTy(), builder.getPtrTy(), /*isVarArg=*/false);
  for (llvm::Function *function : defined) {
    auto *packed =
        llvm::Function::Create(packedType, llvm::GlobalValue::ExternalLinkage,
                               "_mlir_" + function->getName(), module);
    builder.SetInsertPoint(
        llvm::BasicBlock::Create(module.getContext(), "entry", packed));
    std::vector<llvm::Value *> args;
    for (llvm::Argument &arg : function->args()) {
      llvm::Value *slot = builder.CreateConstGEP1_64(
          builder.getPtrTy(), packed->getArg(0), arg.getArgNo());
      llvm::Value *pointer = builder.CreateLoad(builder.getPtrTy(), slot);
      args.push_back(builder.CreateLoad(arg.getType(), pointer));
    }
    llvm::Value *result = builder.CreateCall(function, args);
    if (!result->getType()->isVoidTy()) {
      llvm::Value *slot = builder.CreateConstGEP1_64(
          builder.getPtrTy(), packed->getArg(0), function->arg_size());
      builder.CreateStore(result, builder.CreateLoad(builder.getPtrTy(), slot));
    }
    builder.CreateRetVoid();
  }
}

} // namespace

llvm::Error HostExecutable::invoke(llvm::StringRef name,
                                   llvm::MutableArrayRef<void *> args) {
  auto function = address(("_mlir__mlir_ciface_" + name).str());
  if (!function)
    return function.takeError();
  reinterpret_cast<void (*)(void **)> (*function)(args.data());
  return llvm::Error::success();
}

llvm::Expected<void *> HostExecutable::address(llvm::StringRef name) {
  auto symbol = jit->lookup(name);
  if (!symbol)
    return symbol.takeError();
  return symbol->toPtr<void *>();
}

llvm::Expected<std::unique_ptr<HostExecutable>>
makeHostExecutable(ModuleOp module, const HostJitOptions &options) {
  initializeNativeTargetOnce();
  auto context = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, *context);
  if (!llvmModule)
    return makeError("translation to LLVM IR failed");
  auto machineBuilder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!machineBuilder)
    return machineBuilder.takeError();
  auto dataLayout = machineBuilder->getDefaultDataLayoutForTarget();
  if (!dataLayout)
    return dataLayout.takeError();
  llvmModule->setDataLayout(*dataLayout);
  llvmModule->setTargetTriple(machineBuilder->getTargetTriple());
  if (options.packedWrappers)
    addPackedWrappers(*llvmModule);
  if (llvm::Error error = makeOptimizingTransformer(
          options.optLevel, /*sizeLevel=*/0,
          /*targetMachine=*/nullptr)(llvmModule.get()))
    return error;

  // LLVM's defaults register every JIT'd function with perf (a jitdump
  // file under $JITDUMPDIR, $HOME or the temp folder's .debug/jit/, one
  // per process, never removed) and with gdb. lowbit writes nothing
  // outside its cache and the requested output unless asked.
  bool perf = environmentFlag("LOWBIT_JIT_PERF");
  bool gdb = environmentFlag("LOWBIT_JIT_GDB");
  auto linkingLayer = [perf, gdb](llvm::orc::ExecutionSession &session)
      -> llvm::Expected<std::unique_ptr<llvm::orc::ObjectLayer>> {
    auto layer = std::make_unique<llvm::orc::RTDyldObjectLinkingLayer>(
        session, [](const llvm::MemoryBuffer &) {
          return std::make_unique<llvm::SectionMemoryManager>();
        });
    if (llvm::JITEventListener *listener =
            perf ? llvm::JITEventListener::createPerfJITEventListener()
                 : nullptr)
      layer->registerJITEventListener(*listener);
    if (gdb)
      layer->registerJITEventListener(
          *llvm::JITEventListener::createGDBRegistrationListener());
    return layer;
  };
  // No platform: mlir::ExecutionEngine's LLJIT has the generic IR platform,
  // whose teardown looks up (and so compiles, on first use) its
  // `__lljit_run_atexits` runner. A Jit destroyed after main returned then
  // ran LLVM's code generator on its freed statics (crashes and aborts at
  // exit; tests/lit/cli/jit-teardown.test). lowbit's kernels have no
  // constructors, destructors or atexit calls for a platform to run.
  auto jit = llvm::orc::LLJITBuilder()
                 .setJITTargetMachineBuilder(std::move(*machineBuilder))
                 .setObjectLinkingLayerCreator(linkingLayer)
                 .setPlatformSetUp(llvm::orc::setUpInactivePlatform)
                 .create();
  if (!jit)
    return jit.takeError();
  // The kernels call libm and the process's own symbols.
  auto processSymbols =
      llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
          dataLayout->getGlobalPrefix());
  if (!processSymbols)
    return processSymbols.takeError();
  llvm::orc::JITDylib &dylib = (*jit)->getMainJITDylib();
  if (!options.symbols.empty()) {
    llvm::orc::MangleAndInterner mangle((*jit)->getExecutionSession(),
                                        (*jit)->getDataLayout());
    llvm::orc::SymbolMap symbols;
    for (const HostSymbol &symbol : options.symbols)
      symbols[mangle(symbol.name)] = {
          llvm::orc::ExecutorAddr::fromPtr(symbol.address),
          llvm::JITSymbolFlags::Exported};
    if (llvm::Error error =
            dylib.define(llvm::orc::absoluteSymbols(std::move(symbols))))
      return error;
  }
  dylib.addGenerator(std::move(*processSymbols));
  if (llvm::Error error = (*jit)->addIRModule(llvm::orc::ThreadSafeModule(
          std::move(llvmModule), std::move(context))))
    return error;
  std::unique_ptr<HostExecutable> executable(new HostExecutable());
  executable->jit = std::move(*jit);
  return executable;
}

} // namespace lowbit
