//===- GpuTail.cpp - Loops-level module -> PTX, in process ----------------===//
//
// The heavy headers (NVVM, GPU passes) are kept in this one file. The
// helpers below are the steps of lowerToPtx, in order (GpuTail.h lists
// them; docs/gpu.md says what is not done yet: GPU execution unverified,
// reduction globals shared per module, performance work).
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
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVM/NVVM/Utils.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/RegionUtils.h"

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

/// Rewrites each scf.parallel with reductions (scf.reduce; lowbit-to-loops
/// emits them for a dynamic per-tensor amax/min/max) into three steps, all
/// of which become kernels:
///   1. a one-thread loop that stores the init value into a device global
///      (memref.global, one per reduced value);
///   2. the loop without results, where each iteration folds its value into
///      the global with memref.generic_atomic_rmw, whose body is the
///      scf.reduce region itself (a compare-and-swap loop on the GPU), so
///      any associative and commutative combiner works unchanged;
///   3. the results are replaced by loads of the globals, which
///      sinkHostGlueIntoLaunches moves into the kernels that use them.
/// Kernels on one stream run in order, so each step sees the previous one.
/// lowbit's reductions are max/min of non-NaN values (NaN is skipped per
/// element), which are order-independent, so the result is bit-identical to
/// the sequential scan.
LogicalResult lowerReductionsToAtomics(ModuleOp module, std::string &error) {
  SmallVector<scf::ParallelOp> reductions;
  module.walk([&](scf::ParallelOp parallel) {
    if (!parallel.getInitVals().empty())
      reductions.push_back(parallel);
  });
  unsigned globalIndex = 0;
  for (scf::ParallelOp parallel : reductions) {
    if (parallel->getParentOfType<scf::ParallelOp>()) {
      error = "the GPU tail does not yet support a reduction nested in "
              "another scf.parallel";
      return failure();
    }
    for (Type type : parallel.getResultTypes())
      if (!type.isIntOrFloat() || type.getIntOrFloatBitWidth() != 32) {
        error = "the GPU tail reduces only 32-bit scalars";
        return failure();
      }
    Location loc = parallel.getLoc();
    MLIRContext *context = module.getContext();
    OpBuilder builder(parallel);
    Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
    Value one = arith::ConstantIndexOp::create(builder, loc, 1);

    // Step 1: one device global per reduced value, initialized by a
    // one-thread loop.
    SmallVector<memref::GlobalOp> globals;
    for (auto [init, type] :
         llvm::zip(parallel.getInitVals(), parallel.getResultTypes())) {
      OpBuilder moduleBuilder = OpBuilder::atBlockBegin(module.getBody());
      // Held as i32 bits: LLVM's cmpxchg takes integers only.
      auto globalType = MemRefType::get({1}, builder.getI32Type());
      std::string name = "lowbit_reduction_" + std::to_string(globalIndex++);
      globals.push_back(memref::GlobalOp::create(
          moduleBuilder, loc, name, moduleBuilder.getStringAttr("private"),
          globalType, Attribute(), /*constant=*/false, IntegerAttr()));
      auto initLoop = scf::ParallelOp::create(builder, loc, ValueRange{zero},
                                              ValueRange{one}, ValueRange{one});
      OpBuilder initBuilder = OpBuilder::atBlockBegin(initLoop.getBody());
      Value buffer =
          memref::GetGlobalOp::create(initBuilder, loc, globalType, name);
      memref::StoreOp::create(initBuilder, loc,
                              arith::BitcastOp::create(
                                  initBuilder, loc, builder.getI32Type(), init),
                              buffer, ValueRange{zero});
    }

    // Step 2: the same loop, folding into the globals atomically.
    auto atomicLoop =
        scf::ParallelOp::create(builder, loc, parallel.getLowerBound(),
                                parallel.getUpperBound(), parallel.getStep());
    IRMapping mapping;
    mapping.map(parallel.getInductionVars(), atomicLoop.getInductionVars());
    OpBuilder bodyBuilder = OpBuilder::atBlockBegin(atomicLoop.getBody());
    for (Operation &op : parallel.getBody()->without_terminator())
      bodyBuilder.clone(op, mapping);
    auto reduce = cast<scf::ReduceOp>(parallel.getBody()->getTerminator());
    for (auto [index, operand] : llvm::enumerate(reduce.getOperands())) {
      memref::GlobalOp global = globals[index];
      Value buffer = memref::GetGlobalOp::create(
          bodyBuilder, loc, global.getType(), global.getSymName());
      auto atomic = memref::GenericAtomicRMWOp::create(bodyBuilder, loc, buffer,
                                                       ValueRange{zero});
      Region &combiner = reduce.getReductions()[index];
      Block &combinerBlock = combiner.front();
      OpBuilder atomicBuilder = OpBuilder::atBlockBegin(atomic.getBody());
      IRMapping combinerMapping;
      // scf.reduce's region combines (accumulated, new).
      Type valueType = combinerBlock.getArgument(0).getType();
      combinerMapping.map(combinerBlock.getArgument(0),
                          arith::BitcastOp::create(atomicBuilder, loc,
                                                   valueType,
                                                   atomic.getCurrentValue()));
      combinerMapping.map(combinerBlock.getArgument(1),
                          mapping.lookupOrDefault(operand));
      for (Operation &op : combinerBlock.without_terminator())
        atomicBuilder.clone(op, combinerMapping);
      auto combined = cast<scf::ReduceReturnOp>(combinerBlock.getTerminator());
      memref::AtomicYieldOp::create(
          atomicBuilder, loc,
          arith::BitcastOp::create(
              atomicBuilder, loc, builder.getI32Type(),
              combinerMapping.lookupOrDefault(combined.getResult())));
    }

    // Step 3: the results are the globals' values after the loop.
    for (auto [result, global] : llvm::zip(parallel.getResults(), globals)) {
      Value buffer = memref::GetGlobalOp::create(builder, loc, global.getType(),
                                                 global.getSymName());
      Value bits =
          memref::LoadOp::create(builder, loc, buffer, ValueRange{zero});
      result.replaceAllUsesWith(
          arith::BitcastOp::create(builder, loc, result.getType(), bits));
    }
    parallel.erase();
    (void)context;
  }
  return success();
}

/// A store left in the host glue (e.g. the per-tensor scale computed from
/// the amax) becomes a one-thread loop, so it runs on the device like the
/// rest; the values it needs are sunk into it with the other host glue.
void wrapHostStores(ModuleOp module) {
  SmallVector<memref::StoreOp> hostStores;
  module.walk([&](memref::StoreOp store) {
    // Stores in lowbit-to-gpu's launches are already on the device.
    if (!store->getParentOfType<scf::ParallelOp>() &&
        !store->getParentOfType<gpu::LaunchOp>())
      hostStores.push_back(store);
  });
  for (memref::StoreOp store : hostStores) {
    OpBuilder builder(store);
    Location loc = store.getLoc();
    Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
    Value one = arith::ConstantIndexOp::create(builder, loc, 1);
    auto loop = scf::ParallelOp::create(builder, loc, ValueRange{zero},
                                        ValueRange{one}, ValueRange{one});
    store->moveBefore(loop.getBody()->getTerminator());
  }
}

/// Host glue that reads a buffer (e.g. NVFP4's global scale, loaded once
/// and used by every element) must run on the device: clone such loads,
/// and the pure arithmetic between them and the kernel, into each
/// gpu.launch that uses them. Kernels on one stream run in order, so a load
/// at kernel start sees what earlier kernels wrote.
void sinkHostGlueIntoLaunches(ModuleOp module) {
  auto isSinkable = [](Operation *op) {
    if (op->getNumRegions() != 0 || op->getNumResults() == 0)
      return false;
    return isa<memref::LoadOp, memref::DimOp, memref::GetGlobalOp>(op) ||
           isPure(op);
  };
  // gpu-kernel-outlining's sinkOperationsIntoLaunchOp only sinks ops whose
  // operands the kernel already uses, which leaves a load of an otherwise
  // unused buffer on the host; so sink here, operands after their users
  // (each clone goes to the top of the body, above the clones that use it).
  module.walk([&](gpu::LaunchOp launch) {
    Region &body = launch.getBody();
    bool changed = true;
    while (changed) {
      changed = false;
      SetVector<Value> outsideValues;
      getUsedValuesDefinedAbove(body, outsideValues);
      for (Value value : outsideValues) {
        Operation *definition = value.getDefiningOp();
        if (!definition || !isSinkable(definition))
          continue;
        OpBuilder builder(&body.front(), body.front().begin());
        Operation *clone = builder.clone(*definition);
        for (auto [original, cloned] :
             llvm::zip(definition->getResults(), clone->getResults()))
          replaceAllUsesInRegionWith(original, cloned, body);
        changed = true;
      }
    }
  });
  // The originals are dead now; erase them, users first.
  SmallVector<Operation *> hostOps;
  module.walk([&](Operation *op) {
    if (!op->getParentOfType<gpu::LaunchOp>() && isSinkable(op))
      hostOps.push_back(op);
  });
  for (Operation *op : llvm::reverse(hostOps))
    if (op->use_empty())
      op->erase();
}

/// Whatever still touches memory on the host would run against device
/// buffers: refuse it.
LogicalResult checkNoHostMemoryAccess(ModuleOp module, std::string &error) {
  WalkResult result = module.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (isa<gpu::LaunchOp, gpu::GPUModuleOp>(op))
      return WalkResult::skip();
    if (!isa<memref::LoadOp, memref::StoreOp>(op))
      return WalkResult::advance();
    error = "the GPU tail does not yet support memory accesses outside "
            "scf.parallel that cannot move into a kernel (they would run "
            "on the host): " +
            op->getName().getStringRef().str();
    return WalkResult::interrupt();
  });
  return failure(result.wasInterrupted());
}

/// Tiles every outermost scf.parallel so its innermost dimension becomes
/// kThreadsPerBlock threads; the tile loop maps to blocks. Bounds that do
/// not divide are guarded with scf.if (noMinMaxBounds), so the thread
/// count stays a constant.
void tileForThreads(ModuleOp module) {
  SmallVector<scf::ParallelOp> outermost;
  module.walk([&](scf::ParallelOp parallel) {
    if (!parallel->getParentOfType<scf::ParallelOp>())
      outermost.push_back(parallel);
  });
  for (scf::ParallelOp parallel : outermost) {
    SmallVector<int64_t> tileSizes(parallel.getNumLoops(), 1);
    tileSizes.back() = kThreadsPerBlock;
    scf::tileParallelLoop(parallel, tileSizes, /*noMinMaxBounds=*/true);
  }
}

/// gpu-kernel-outlining makes one gpu.module per kernel. The runtime loads
/// one PTX module per compiled spec, so move every kernel into the first
/// gpu.module (outlined names are unique: <function>_kernel[_N]) and point
/// the launches at it.
void mergeGpuModules(ModuleOp module) {
  SmallVector<gpu::GPUModuleOp> gpuModules(module.getOps<gpu::GPUModuleOp>());
  if (gpuModules.size() < 2)
    return;
  // Kernels outlined from one function share a name in different modules
  // (only the modules are renamed unique); give each kernel its module's
  // unique name before they share one symbol table.
  llvm::StringMap<std::string> kernelRenames; // "module::kernel" -> name
  for (gpu::GPUModuleOp gpuModule : gpuModules) {
    for (auto kernel : gpuModule.getOps<gpu::GPUFuncOp>()) {
      std::string key = (gpuModule.getName() + "::" + kernel.getName()).str();
      kernelRenames[key] = gpuModule.getName().str();
      SymbolTable::setSymbolName(kernel, gpuModule.getNameAttr());
    }
  }
  gpu::GPUModuleOp target = gpuModules.front();
  for (gpu::GPUModuleOp source : ArrayRef(gpuModules).drop_front()) {
    for (Operation &op :
         llvm::make_early_inc_range(source.getBody()->getOperations())) {
      // Outlining copies each device global into every kernel's module;
      // keep one, shared by all kernels.
      if (auto global = dyn_cast<memref::GlobalOp>(op))
        if (SymbolTable::lookupSymbolIn(target, global.getSymName()))
          continue;
      op.moveBefore(target.getBody(), target.getBody()->end());
    }
    source.erase();
  }
  module.walk([&](gpu::LaunchFuncOp launch) {
    std::string key = (launch.getKernelModuleName().getValue() +
                       "::" + launch.getKernelName().getValue())
                          .str();
    auto renamed = kernelRenames.find(key);
    StringRef kernelName = renamed != kernelRenames.end()
                               ? StringRef(renamed->second)
                               : launch.getKernelName().getValue();
    launch.setKernelAttr(SymbolRefAttr::get(
        target.getNameAttr(),
        {FlatSymbolRefAttr::get(module.getContext(), kernelName)}));
  });
}

/// convert-gpu-to-nvvm turns math.absf, math.copysign and math.roundeven
/// (and their LLVM intrinsics) into libdevice calls, which stay unresolved
/// externs when no CUDA toolkit is found at run time. All three are exact
/// in integer and f32 arithmetic, so they are expanded here:
///   absf:      clear the sign bit;
///   copysign:  magnitude of x, sign bit of y;
///   roundeven: (|x| + 2^23) - 2^23 rounds to an integer with ties to even
///              in the f32 adder for |x| < 2^23; larger values, inf and NaN
///              are integers (or NaN) already; the sign is put back so that
///              -0.3 gives -0.
void expandLibdeviceMathOps(ModuleOp module) {
  SmallVector<Operation *> mathOps;
  module.walk([&](Operation *op) {
    if (isa<math::AbsFOp, math::CopySignOp, math::RoundEvenOp>(op) &&
        getElementTypeOrSelf(op->getResult(0).getType()).isF32())
      mathOps.push_back(op);
  });
  for (Operation *op : mathOps) {
    ImplicitLocOpBuilder b(op->getLoc(), op);
    Type floatType = op->getResult(0).getType();
    Type bitsType = b.getI32Type();
    if (auto vectorType = dyn_cast<VectorType>(floatType))
      bitsType = VectorType::get(vectorType.getShape(), b.getI32Type());
    auto constant = [&](uint32_t value) -> Value {
      Attribute attr = b.getI32IntegerAttr(int32_t(value));
      if (auto vectorType = dyn_cast<VectorType>(bitsType))
        attr = DenseElementsAttr::get(vectorType, attr);
      return arith::ConstantOp::create(b, cast<TypedAttr>(attr));
    };
    auto toBits = [&](Value value) -> Value {
      return arith::BitcastOp::create(b, bitsType, value);
    };
    auto toFloat = [&](Value bits) -> Value {
      return arith::BitcastOp::create(b, floatType, bits);
    };
    Value bits = toBits(op->getOperand(0));
    Value magnitude = arith::AndIOp::create(b, bits, constant(0x7fffffffu));
    Value sign = arith::AndIOp::create(b, bits, constant(0x80000000u));
    Value result = magnitude;
    if (isa<math::CopySignOp>(op)) {
      result = arith::OrIOp::create(
          b, magnitude,
          arith::AndIOp::create(b, toBits(op->getOperand(1)),
                                constant(0x80000000u)));
    } else if (isa<math::RoundEvenOp>(op)) {
      Value twoTo23 = toFloat(constant(0x4b000000u));
      Value rounded = arith::SubFOp::create(
          b, arith::AddFOp::create(b, toFloat(magnitude), twoTo23), twoTo23);
      Value signedRounded = arith::OrIOp::create(b, toBits(rounded), sign);
      Value alreadyIntegral = arith::CmpIOp::create(
          b, arith::CmpIPredicate::uge, magnitude, constant(0x4b000000u));
      result = arith::SelectOp::create(b, alreadyIntegral, bits, signedRounded);
    }
    op->getResult(0).replaceAllUsesWith(toFloat(result));
    op->erase();
  }
}

/// The kernels' atomics only combine values within one launch (the next
/// kernel on the stream sees them through the launch boundary), so they
/// need neither ordering nor system scope: relaxed, device (.gpu) scope,
/// instead of LLVM's default acq_rel/seq_cst at system scope, which NVPTX
/// emits as atom.*.sys with a MEMBAR.SYS.
void relaxDeviceAtomics(ModuleOp module) {
  StringAttr device = StringAttr::get(module.getContext(), "device");
  module.walk([&](gpu::GPUModuleOp gpuModule) {
    gpuModule.walk([&](Operation *op) {
      if (auto rmw = dyn_cast<LLVM::AtomicRMWOp>(op)) {
        rmw.setSyncscopeAttr(device);
        rmw.setOrdering(LLVM::AtomicOrdering::monotonic);
      } else if (auto cmpxchg = dyn_cast<LLVM::AtomicCmpXchgOp>(op)) {
        cmpxchg.setSyncscopeAttr(device);
        cmpxchg.setSuccessOrdering(LLVM::AtomicOrdering::monotonic);
        cmpxchg.setFailureOrdering(LLVM::AtomicOrdering::monotonic);
      }
    });
  });
}

/// gpu-module-to-binary's NVPTX serializer, PTX only, with these
/// differences:
///  - libdevice (~2 ms to read and link) is linked only when the kernels
///    call one of its functions (an `__nv_` declaration is left after
///    translation). lowbit's kernels never do (expandLibdeviceMathOps and
///    convert-math-to-llvm keep math out of it), so today it never is.
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
                bool stockPipeline)
      : SerializeGPUModuleBase(module, target), stockPipeline(stockPipeline) {}

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

} // namespace

LogicalResult lowerToNvvm(ModuleOp module, const Target &target,
                          std::string &error, const PtxOptions &options) {
  if (!target.isNvidia()) {
    error = "the GPU tail needs an NVIDIA target, got '" + target.str() + "'";
    return failure();
  }
  // Before any codegen: LLVM aborts on a PTX version the chip rejects.
  if (!validateTarget(target, &error))
    return failure();
  if (options.optLevel && (*options.optLevel < 0 || *options.optLevel > 3)) {
    error = "the GPU tail's LLVM optimization level must be 0..3, got " +
            std::to_string(*options.optLevel);
    return failure();
  }

  MLIRContext *context = module.getContext();
  DiagnosticCollector diagnostics(context);
  // The steps below build ops of these dialects outside any pass (whose
  // dependent dialects the PassManager would load): contexts load dialects
  // on first use, and a hand-written gpu.module may have needed none yet.
  context->loadDialect<arith::ArithDialect, gpu::GPUDialect, LLVM::LLVMDialect,
                       memref::MemRefDialect, scf::SCFDialect>();

  // Chip-specific conversions, then the codecs for everything else.
  {
    PassManager pm(context);
    configureVerifier(pm);
    LowbitNativeConversionsOptions nativeOptions;
    nativeOptions.chip = target.chip;
    nativeOptions.ptxVersion = target.ptxVersion;
    pm.addPass(createLowbitNativeConversions(nativeOptions));
    pm.addPass(createLowbitExpandCodecs());
    if (failed(pm.run(module))) {
      error = diagnostics.failedIn("the conversions");
      return failure();
    }
  }
  if (failed(lowerReductionsToAtomics(module, error)))
    return failure();
  wrapHostStores(module);
  tileForThreads(module);
  expandLibdeviceMathOps(module);

  PassManager pm(context);
  configureVerifier(pm);
  pm.addNestedPass<func::FuncOp>(createGpuMapParallelLoopsPass());
  pm.addNestedPass<func::FuncOp>(createConvertParallelLoopToGpuPass());
  if (failed(pm.run(module))) {
    error = diagnostics.failedIn("mapping loops to the GPU");
    return failure();
  }
  sinkHostGlueIntoLaunches(module);
  if (failed(checkNoHostMemoryAccess(module, error)))
    return failure();

  pm.clear();
  pm.addPass(createGpuKernelOutliningPass());
  if (failed(pm.run(module))) {
    error = diagnostics.failedIn("kernel outlining");
    return failure();
  }
  mergeGpuModules(module);

  pm.clear();
  GpuNVVMAttachTargetOptions targetOptions;
  targetOptions.chip = target.chip;
  targetOptions.features = "+ptx" + std::to_string(target.ptxVersion);
  targetOptions.optLevel = options.optLevel.value_or(kPtxOptLevel);
  if (options.optLevel)
    for (auto gpuModule : module.getOps<gpu::GPUModuleOp>())
      gpuModule->setAttr(kStockPipelineAttr, UnitAttr::get(context));
  pm.addPass(createGpuNVVMAttachTarget(targetOptions));
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createLowerAffinePass());
  kernels.addPass(createSCFToControlFlowPass());
  // math.absf/ctlz/... become LLVM intrinsics that NVPTX selects directly;
  // left to convert-gpu-to-nvvm they would become libdevice calls, which
  // stay unresolved externs when no CUDA toolkit is found at run time.
  kernels.addPass(createConvertMathToLLVMPass());
  kernels.addPass(createConvertGpuOpsToNVVMOps());
  kernels.addPass(createReconcileUnrealizedCastsPass());
  if (failed(pm.run(module))) {
    error = diagnostics.failedIn("lowering kernels to NVVM");
    return failure();
  }
  relaxDeviceAtomics(module);
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
  // mergeGpuModules left one gpu.module, with its #nvvm.target.
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
    PtxSerializer serializer(*gpuModule, nvvmTarget,
                             gpuModule->hasAttr(kStockPipelineAttr));
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
