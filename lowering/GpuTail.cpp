//===- GpuTail.cpp - Loops-level module -> PTX, in process ----------------===//
//
// The heavy headers (NVVM, GPU passes) are kept in this one file. The
// tail's own rewrites are passes (lowering/LowbitGpu*.cpp, Passes.td);
// buildGpuTailPipeline strings them together with MLIR's GPU passes
// (GpuTail.h lists the steps; docs/gpu.md says what is not done yet).
//
//===----------------------------------------------------------------------===//

#include "lowering/GpuTail.h"

#include "dialect/LowbitOps.h"
#include "lowering/NvptxCodegen.h"
#include "lowering/PassVerification.h"
#include "lowering/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/SCFToGPU/SCFToGPUPass.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVM/NVVM/Utils.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"

#include "llvm/IR/Module.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#define DEBUG_TYPE "lowbit-gpu-tail"

using namespace mlir;

namespace lowbit {

void registerGpuTailDependencies(DialectRegistry &registry) {
  registry.insert<dialect::LowbitDialect, arith::ArithDialect,
                  affine::AffineDialect, bufferization::BufferizationDialect,
                  cf::ControlFlowDialect, func::FuncDialect, gpu::GPUDialect,
                  LLVM::LLVMDialect, math::MathDialect, memref::MemRefDialect,
                  NVVM::NVVMDialect, scf::SCFDialect, vector::VectorDialect>();
  // gpu-module-to-binary needs the NVVM target's external model; without it
  // it crashes without a message.
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  // convert-gpu-to-nvvm converts the other dialects in the kernels through
  // their ConvertToLLVM interfaces.
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  vector::registerConvertVectorToLLVMInterface(registry);
  registerConvertNVVMToLLVMInterface(registry);
}

namespace {

/// gpu-module-to-binary's NVPTX serializer, PTX only, with these
/// differences:
///  - libdevice (~2 ms to read and link) is linked only when the kernels
///    call one of its functions (an `__nv_` declaration is left after
///    translation). lowbit's kernels never do (lowbit-gpu-expand-libdevice-
///    math and convert-math-to-llvm keep math out of it), so today it never
///    is.
///  - the PTX comes back as a string instead of a gpu.binary op, whose
///    string attribute the (long-lived, pooled) context would keep forever.
///  - unless the gpu.module carries kStockPipelineAttr: the TargetMachine
///    comes from the pool (borrowNvptxMachine) instead of being made per
///    compile, and LLVM's middle end runs lowbit's pass list
///    (optimizeForPtx), whose PTX is O3's, instead of the O level's whole
///    pipeline (lowering/NvptxCodegen.h).
class PtxSerializer : public NVVM::SerializeGPUModuleBase {
public:
  PtxSerializer(Operation &module, NVVM::NVVMTargetAttr target,
                bool stockPipeline, std::optional<int> stockCodegenLevel)
      : SerializeGPUModuleBase(module, target), stockPipeline(stockPipeline),
        stockCodegenLevel(stockCodegenLevel) {}

  /// Why the pooled path failed, if it did.
  std::string error;

protected:
  std::optional<SmallVector<std::unique_ptr<llvm::Module>>>
  loadBitcodeFiles(llvm::Module &module) override {
    bool callsLibdevice =
        llvm::any_of(module.functions(), [](const llvm::Function &function) {
          return function.isDeclaration() &&
                 function.getName().starts_with("__nv_");
        });
    if (!callsLibdevice)
      return SmallVector<std::unique_ptr<llvm::Module>>();
    return SerializeGPUModuleBase::loadBitcodeFiles(module);
  }

  void setDataLayoutAndTriple(llvm::Module &module) override {
    if (stockPipeline)
      return SerializeGPUModuleBase::setDataLayoutAndTriple(module);
    std::optional<NvptxMachineLease> lease =
        borrowNvptxMachine(chip, features, error);
    if (!lease)
      return; // optimizeModule reports it
    machine.emplace(std::move(*lease));
    module.setDataLayout((*machine)->createDataLayout());
    module.setTargetTriple((*machine)->getTargetTriple());
  }

  LogicalResult optimizeModule(llvm::Module &module, int level) override {
    if (stockPipeline)
      return SerializeGPUModuleBase::optimizeModule(module, level);
    if (!machine || !optimizeForPtx(module, **machine, error))
      return failure();
    return success();
  }

  FailureOr<SmallVector<char, 0>>
  moduleToObject(llvm::Module &llvmModule) override {
    llvm::TargetMachine *codegenMachine = machine ? &**machine : nullptr;
    if (stockPipeline) {
      FailureOr<llvm::TargetMachine *> created = getOrCreateTargetMachine();
      codegenMachine = succeeded(created) ? *created : nullptr;
      // optimizeModule set O's level on it; codegen may ask for another.
      if (codegenMachine && stockCodegenLevel)
        codegenMachine->setOptLevel(
            static_cast<llvm::CodeGenOptLevel>(*stockCodegenLevel));
    }
    if (!codegenMachine) {
      getOperation().emitError() << "no LLVM target machine for " << triple;
      return failure();
    }
    FailureOr<SmallString<0>> ptx =
        translateModuleToISA(llvmModule, *codegenMachine,
                             [&] { return getOperation().emitError(); });
    if (failed(ptx))
      return failure();
    return SmallVector<char, 0>(ptx->begin(), ptx->end());
  }

private:
  bool stockPipeline;
  std::optional<int> stockCodegenLevel;
  std::optional<NvptxMachineLease> machine;
};

/// While alive, collects the context's diagnostics as text, so that a
/// failing pass's messages become the error lowerToNvvm/lowerToPtx return.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(MLIRContext *context)
      : handler(context, [this](Diagnostic &diagnostic) {
          llvm::raw_string_ostream(text) << diagnostic << "\n";
          return success();
        }) {}

  std::string failedIn(const char *stage) const {
    return std::string("GPU tail failed in ") + stage +
           (text.empty() ? std::string() : ": " + text);
  }

private:
  std::string text;
  ScopedDiagnosticHandler handler;
};

/// Names the first pass of the tail that failed, for the error message.
class FailedPassRecorder : public PassInstrumentation {
public:
  explicit FailedPassRecorder(std::string &name) : name(name) {}
  void runAfterPassFailed(Pass *pass, Operation *) override {
    // The innermost pass fails first; the adaptors around it follow.
    if (name.empty())
      name = pass->getArgument().str();
  }

private:
  std::string &name;
};

} // namespace

void buildGpuTailPipeline(OpPassManager &pm, const Target &target,
                          const PtxOptions &options) {
  // Chip-specific conversions, then the codecs for everything else.
  LowbitNativeConversionsOptions nativeOptions;
  nativeOptions.chip = target.chip;
  nativeOptions.ptxVersion = target.ptxVersion;
  pm.addPass(createLowbitNativeConversions(nativeOptions));
  pm.addPass(createLowbitExpandCodecs());
  // The loops into the shape MLIR's GPU mapping takes.
  pm.addPass(createLowbitGpuReductionsToAtomics());
  pm.addPass(createLowbitGpuWrapHostStores());
  LowbitGpuTileForThreadsOptions tileOptions;
  tileOptions.threadsPerBlock = kThreadsPerBlock;
  pm.addPass(createLowbitGpuTileForThreads(tileOptions));
  pm.addPass(createLowbitGpuExpandLibdeviceMath());
  pm.addNestedPass<func::FuncOp>(createGpuMapParallelLoopsPass());
  pm.addNestedPass<func::FuncOp>(createConvertParallelLoopToGpuPass());
  pm.addPass(createLowbitGpuSinkHostGlue());
  pm.addPass(createLowbitGpuCheckNoHostMemory());
  pm.addPass(createLowbitGpuOutlineKernels());
  pm.addPass(createLowbitGpuMergeModules());
  pm.addPass(createLowbitGpuAlignWorkgroup());

  GpuNVVMAttachTargetOptions targetOptions;
  targetOptions.chip = target.chip;
  targetOptions.features = "+ptx" + std::to_string(target.ptxVersion);
  targetOptions.optLevel = options.optLevel.value_or(kPtxOptLevel);
  pm.addPass(createGpuNVVMAttachTarget(targetOptions));
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  // View ops sunk into a kernel (the matmul's bias is a collapse_shape of
  // the ABI's [1, N] row) have no NVVM lowering of their own: rewrite them
  // as offsets and strides first. A kernel without views is unchanged.
  kernels.addPass(memref::createExpandStridedMetadataPass());
  kernels.addPass(createLowerAffinePass());
  kernels.addPass(createSCFToControlFlowPass());
  // math.absf/ctlz/... become LLVM intrinsics that NVPTX selects directly;
  // left to convert-gpu-to-nvvm they would become libdevice calls, which
  // stay unresolved externs when no CUDA toolkit is found at run time.
  kernels.addPass(createConvertMathToLLVMPass());
  kernels.addPass(createConvertGpuOpsToNVVMOps());
  kernels.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createLowbitGpuRelaxAtomics());
}

LogicalResult lowerToNvvm(ModuleOp module, const Target &target,
                          std::string &error, const PtxOptions &options) {
  if (!target.isNvidia()) {
    error = "the GPU tail needs an NVIDIA target, got '" + target.str() + "'";
    return failure();
  }
  // Before any codegen: LLVM aborts on a PTX version the chip rejects.
  if (!validateTarget(target, &error))
    return failure();
  for (std::optional<int> level : {options.optLevel, options.codegenLevel})
    if (level && (*level < 0 || *level > 3)) {
      error = "the GPU tail's LLVM optimization level must be 0..3, got " +
              std::to_string(*level);
      return failure();
    }

  MLIRContext *context = module.getContext();
  DiagnosticCollector diagnostics(context);
  PassManager pm(context);
  configureVerifier(pm);
  std::string failedPass;
  pm.addInstrumentation(std::make_unique<FailedPassRecorder>(failedPass));
  buildGpuTailPipeline(pm, target, options);
  if (failed(pm.run(module))) {
    error = diagnostics.failedIn(failedPass.empty() ? "its pipeline"
                                                    : failedPass.c_str());
    return failure();
  }
  // Read by serializeToPtx: LLVM's stock pipeline at the #nvvm.target's O.
  if (options.optLevel) {
    Attribute stock = UnitAttr::get(context);
    if (options.codegenLevel)
      stock = IntegerAttr::get(IntegerType::get(context, 32),
                               *options.codegenLevel);
    for (auto gpuModule : module.getOps<gpu::GPUModuleOp>())
      gpuModule->setAttr(kStockPipelineAttr, stock);
  }
  // Verified once here when the passes did not verify after each step:
  // malformed IR must be an error, never reach LLVM's translation.
  if (!verifyAfterEachPass() && failed(verify(module))) {
    error = diagnostics.failedIn("verifying the lowered module");
    return failure();
  }
  return success();
}

FailureOr<PtxModule> lowerToPtx(ModuleOp module, const Target &target,
                                std::string &error, const PtxOptions &options) {
  if (failed(lowerToNvvm(module, target, error, options)))
    return failure();
  return serializeToPtx(module, error);
}

FailureOr<PtxModule> serializeToPtx(ModuleOp module, std::string &error) {
  // lowbit-gpu-merge-modules left one gpu.module, with its #nvvm.target.
  SmallVector<gpu::GPUModuleOp> gpuModules(module.getOps<gpu::GPUModuleOp>());
  if (gpuModules.empty()) {
    error = "GPU tail produced no PTX (no scf.parallel to map?)";
    return failure();
  }
  MLIRContext *context = module.getContext();
  DiagnosticCollector diagnostics(context);
  PtxModule result;
  NVVM::SerializeGPUModuleBase::init();
  for (gpu::GPUModuleOp gpuModule : gpuModules) {
    ArrayAttr targets = gpuModule.getTargetsAttr();
    auto nvvmTarget = targets && targets.size() == 1
                          ? dyn_cast<NVVM::NVVMTargetAttr>(targets[0])
                          : NVVM::NVVMTargetAttr();
    if (!nvvmTarget) {
      error = "GPU tail: the gpu.module has no single #nvvm.target";
      return failure();
    }
    Attribute stock = gpuModule->getAttr(kStockPipelineAttr);
    std::optional<int> stockCodegenLevel;
    if (auto level = dyn_cast_or_null<IntegerAttr>(stock))
      stockCodegenLevel = int(level.getInt());
    PtxSerializer serializer(*gpuModule, nvvmTarget, bool(stock),
                             stockCodegenLevel);
    std::optional<SmallVector<char, 0>> ptx = serializer.run();
    if (!ptx) {
      error = serializer.error.empty() ? diagnostics.failedIn("GPU codegen")
                                       : serializer.error;
      return failure();
    }
    result.ptx.append(ptx->begin(), ptx->end());
  }
  module.walk([&](gpu::LaunchFuncOp launch) {
    result.kernelNames.push_back(launch.getKernelName().getValue().str());
  });
  result.optLevel =
      cast<NVVM::NVVMTargetAttr>(gpuModules.front().getTargetsAttr()[0]).getO();
  if (result.ptx.empty()) {
    error = "GPU tail produced no PTX (no scf.parallel to map?)";
    return failure();
  }
  return result;
}

} // namespace lowbit
