//===- Compiler.cpp - Kernel spec -> MLIR -> loops -> host code -----------===//

#include "runtime/compiler/Compiler.h"

#include "dialect/LowbitOps.h"
#include "lowering/CpuTail.h"
#include "lowering/GpuTailWarmup.h"
#include "lowering/LowbitFusion.h"
#include "lowering/LowbitFusionBody.h"
#include "lowering/PassVerification.h"
#include "lowering/Passes.h"
#include "lowering/ScaleMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/raw_ostream.h"

#include <mutex>

using namespace mlir;
namespace ld = lowbit::dialect;

namespace lowbit::compiler {
namespace {

llvm::Error makeError(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Collects the context's diagnostics while alive, so that verifier and
/// pass errors become error values instead of stderr output.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(MLIRContext &context)
      : handler(&context, [this](Diagnostic &diag) {
          if (!text.empty())
            text += "\n";
          text += diag.str();
          return success();
        }) {}
  const std::string &message() const { return text; }

private:
  std::string text;
  ScopedDiagnosticHandler handler;
};

int64_t toMlirDim(int64_t dim) {
  return dim == kDynamic ? ShapedType::kDynamic : dim;
}

Type valueElementType(Builder &b, ValueType type) {
  switch (type) {
  case ValueType::F32:
    return b.getF32Type();
  case ValueType::F16:
    return b.getF16Type();
  case ValueType::BF16:
    return b.getBF16Type();
  }
  return {};
}

std::string typeName(Type type) {
  std::string text;
  llvm::raw_string_ostream stream(text);
  type.print(stream);
  return text;
}

/// One parameter: its role, its element type and its [rows, cols].
struct ParamInfo {
  KernelParam::Role role;
  bool isResult;
  Type elementType;
  Shape2D shape;
  std::string side; ///< KernelParam::side
};

std::vector<ParamInfo> paramInfos(Builder &b, const KernelSpec &spec) {
  std::vector<ParamInfo> params;
  for (const KernelAbiParam &param : kernelAbi(spec)) {
    Type elementType;
    switch (param.element) {
    case KernelParamElement::Value:
      elementType = valueElementType(b, spec.valueType);
      break;
    case KernelParamElement::Scale:
      elementType = storedScaleTypeOf(b, spec.scheme.scale.type);
      break;
    case KernelParamElement::Byte:
      elementType = b.getI8Type();
      break;
    case KernelParamElement::F32:
      elementType = b.getF32Type();
      break;
    }
    params.push_back(
        {param.role, param.isResult, elementType, param.shape, param.side});
  }
  return params;
}

} // namespace

void registerCompilerDialects(DialectRegistry &registry) {
  registry
      .insert<ld::LowbitDialect, arith::ArithDialect,
              bufferization::BufferizationDialect, func::FuncDialect,
              linalg::LinalgDialect, math::MathDialect, memref::MemRefDialect,
              scf::SCFDialect, tensor::TensorDialect>();
  // Not the fusion's bufferization models: tensor's loads linalg whenever
  // tensor loads (and bufferization loads tensor), 1.4M instructions in
  // every context's first compile. lowbit-fusion-to-loops, the one pass
  // that bufferizes, adds them to the context when it runs.
  registerCpuTailDialects(registry);
  registerGpuTailDependencies(registry);
}

namespace {

const DialectRegistry &compilerRegistry() {
  static const DialectRegistry *registry = [] {
    auto *built = new DialectRegistry();
    registerCompilerDialects(*built);
    return built;
  }();
  return *registry;
}

/// Idle contexts, most recently returned last. Never destroyed: a lease
/// may still be out while the process exits, and the exit need not pay
/// for tearing the contexts down.
struct ContextPool {
  /// More idle contexts than this are not worth their memory.
  static constexpr size_t kMaxIdle = 8;
  std::mutex mutex;
  std::vector<std::pair<std::unique_ptr<MLIRContext>, unsigned>> idle;

  static ContextPool &global() {
    static ContextPool *pool = new ContextPool();
    return *pool;
  }
};

} // namespace

std::unique_ptr<MLIRContext> makeContext() {
  // Single-threaded: the passes run over one small module, where a thread
  // pool per context would cost more than it saves. The dialects load on
  // first use (a pass's dependent dialects, the parser), so a CPU compile
  // never loads NVVM, GPU or vector.
  return std::make_unique<MLIRContext>(compilerRegistry(),
                                       MLIRContext::Threading::DISABLED);
}

ContextLease borrowContext() {
  ContextPool &pool = ContextPool::global();
  {
    std::lock_guard<std::mutex> lock(pool.mutex);
    if (!pool.idle.empty()) {
      auto [context, uses] = std::move(pool.idle.back());
      pool.idle.pop_back();
      return ContextLease(std::move(context), uses + 1);
    }
  }
  return ContextLease(makeContext(), 1);
}

ContextLease::ContextLease(ContextLease &&other) noexcept
    : context(std::move(other.context)), uses(other.uses) {}

ContextLease::~ContextLease() {
  if (!context || uses >= kContextUses)
    return;
  ContextPool &pool = ContextPool::global();
  std::unique_lock<std::mutex> lock(pool.mutex);
  if (pool.idle.size() < ContextPool::kMaxIdle)
    pool.idle.emplace_back(std::move(context), uses);
  lock.unlock();
  // Destroyed here, outside the lock, when the pool is full or it retired.
  context.reset();
}

namespace {

/// kernelParams and bufferShapes need only a few builtin types: one small
/// context serves them, instead of a context per call (or a pooled one
/// while the caller's compile holds another).
template <typename Fn> auto withBuiltinTypes(Fn fn) {
  static std::mutex mutex;
  static MLIRContext *context =
      new MLIRContext(MLIRContext::Threading::DISABLED);
  std::lock_guard<std::mutex> lock(mutex);
  Builder b(context);
  return fn(b);
}

} // namespace

std::vector<KernelParam> kernelParams(const KernelSpec &spec) {
  return withBuiltinTypes([&](Builder &b) {
    std::vector<KernelParam> params;
    for (const ParamInfo &info : paramInfos(b, spec))
      params.push_back(
          {info.role, info.isResult, typeName(info.elementType), info.side});
    return params;
  });
}

std::vector<Shape2D> bufferShapes(const KernelSpec &spec, int64_t rows,
                                  int64_t cols) {
  KernelSpec sized = spec;
  sized.rows = rows;
  sized.cols = cols;
  return withBuiltinTypes([&](Builder &b) {
    std::vector<Shape2D> shapes;
    for (const ParamInfo &info : paramInfos(b, sized))
      shapes.push_back(info.shape);
    return shapes;
  });
}

llvm::Expected<OwningOpRef<ModuleOp>>
buildKernelModule(MLIRContext &context, const KernelSpec &spec) {
  std::string error;
  if (!validateKernelSpec(spec, &error))
    return makeError(error);
  DiagnosticCollector diagnostics(context);
  context.loadDialect<ld::LowbitDialect, func::FuncDialect,
                      bufferization::BufferizationDialect>();
  if (!spec.prologues.empty())
    context.loadDialect<arith::ArithDialect, math::MathDialect,
                        linalg::LinalgDialect, tensor::TensorDialect>();
  FailureOr<ld::SchemeAttr> schemeAttr =
      ld::toSchemeAttr(&context, spec.scheme, &error);
  if (failed(schemeAttr))
    return makeError("scheme: " + error);

  OpBuilder b(&context);
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());

  std::vector<ParamInfo> params = paramInfos(b, spec);
  SmallVector<Type> argTypes;
  for (const ParamInfo &param : params)
    argTypes.push_back(MemRefType::get(
        {toMlirDim(param.shape.rows), toMlirDim(param.shape.cols)},
        param.elementType));
  auto func = func::FuncOp::create(b, loc, kKernelName,
                                   b.getFunctionType(argTypes, {}));
  func->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  Block *body = func.addEntryBlock();
  b.setInsertionPointToStart(body);

  auto tensorTypeOf = [](Value memref) {
    auto type = cast<MemRefType>(memref.getType());
    return RankedTensorType::get(type.getShape(), type.getElementType());
  };
  auto readTensor = [&](Value memref) -> Value {
    return bufferization::ToTensorOp::create(b, loc, tensorTypeOf(memref),
                                             memref, /*restrict=*/true);
  };
  using Role = KernelParam::Role;
  Value operands[6] = {};                       // by Role, read-only parameters
  Value results[6] = {};                        // by Role, written parameters
  SmallVector<Value> sideOperands, sideResults; // a fused kernel's
  for (auto [index, param] : llvm::enumerate(params)) {
    if (!param.side.empty()) {
      (param.isResult ? sideResults : sideOperands)
          .push_back(body->getArgument(index));
      continue;
    }
    (param.isResult ? results : operands)[int(param.role)] =
        body->getArgument(index);
  }
  auto tensorOrNull = [&](Value memref) {
    return memref ? readTensor(memref) : Value();
  };
  auto typeOrNull = [&](Value memref) {
    return memref ? Type(tensorTypeOf(memref)) : Type();
  };

  SmallVector<std::pair<Value, Value>> materialize; // (tensor, memref)
  if (spec.op == KernelOp::Quantize && !spec.prologues.empty()) {
    SmallVector<Value> sideTensors;
    for (Value side : sideOperands)
      sideTensors.push_back(readTensor(side));
    FusedQuantizeSignature signature{tensorOrNull(operands[int(Role::Scales)]),
                                     tensorOrNull(operands[int(Role::Zeros)]),
                                     tensorOrNull(operands[int(Role::Global)]),
                                     typeOrNull(results[int(Role::Codes)]),
                                     typeOrNull(results[int(Role::Scales)]),
                                     typeOrNull(results[int(Role::Zeros)]),
                                     typeOrNull(results[int(Role::Global)]),
                                     *schemeAttr};
    ld::FusedOp fused = buildFusedQuantize(
        b, loc, spec.prologues, readTensor(operands[int(Role::Input)]),
        sideTensors, signature);
    SmallVector<Value> destinations;
    for (Role role : {Role::Codes, Role::Scales, Role::Zeros, Role::Global})
      if (results[int(role)])
        destinations.push_back(results[int(role)]);
    llvm::append_range(destinations, sideResults);
    for (auto [tensor, memref] : llvm::zip(fused.getResults(), destinations))
      materialize.push_back({tensor, memref});
  } else if (spec.op == KernelOp::Quantize) {
    Value input = readTensor(operands[int(Role::Input)]);
    Value staticScales = tensorOrNull(operands[int(Role::Scales)]);
    Value staticZeros = tensorOrNull(operands[int(Role::Zeros)]);
    Value staticGlobal = tensorOrNull(operands[int(Role::Global)]);
    auto quantize = ld::QuantizeOp::create(
        b, loc, typeOrNull(results[int(Role::Codes)]),
        typeOrNull(results[int(Role::Scales)]),
        typeOrNull(results[int(Role::Zeros)]),
        typeOrNull(results[int(Role::Global)]), input, staticScales,
        staticZeros, staticGlobal, *schemeAttr);
    materialize.push_back({quantize.getCodes(), results[int(Role::Codes)]});
    for (auto [tensor, role] : {std::pair{quantize.getScales(), Role::Scales},
                                std::pair{quantize.getZeros(), Role::Zeros},
                                std::pair{quantize.getGlobal(), Role::Global}})
      if (tensor)
        materialize.push_back({tensor, results[int(role)]});
  } else {
    auto dequantize = ld::DequantizeOp::create(
        b, loc, tensorTypeOf(results[int(Role::Output)]),
        readTensor(operands[int(Role::Codes)]),
        readTensor(operands[int(Role::Scales)]),
        tensorOrNull(operands[int(Role::Zeros)]),
        tensorOrNull(operands[int(Role::Global)]), *schemeAttr);
    materialize.push_back({dequantize.getResult(), results[int(Role::Output)]});
  }
  for (auto [tensor, memref] : materialize)
    bufferization::MaterializeInDestinationOp::create(
        b, loc, /*result=*/Type(), tensor, memref, /*restrict=*/true,
        /*writable=*/true);
  func::ReturnOp::create(b, loc);

  if (failed(verify(*module)))
    return makeError(diagnostics.message().empty() ? "the kernel module does "
                                                     "not verify"
                                                   : diagnostics.message());
  return module;
}

llvm::Error lowerToLoops(ModuleOp module) {
  DiagnosticCollector diagnostics(*module.getContext());
  PassManager pm(module.getContext());
  configureVerifier(pm);
  pm.addPass(createLowbitFlattenLeadingDims());
  pm.addPass(createLowbitFusionToLoops());
  pm.addPass(createLowbitToLoops());
  if (failed(pm.run(module)))
    return makeError("lowbit-to-loops failed: " + diagnostics.message());
  return llvm::Error::success();
}

llvm::Error lowerForGpu(ModuleOp module) {
  DiagnosticCollector diagnostics(*module.getContext());
  PassManager gpuPm(module.getContext());
  configureVerifier(gpuPm);
  gpuPm.addPass(createLowbitFlattenLeadingDims());
  gpuPm.addPass(createLowbitToGpu());
  if (failed(gpuPm.run(module)))
    return makeError("lowering for the GPU failed: " + diagnostics.message());
  // lowbit-to-gpu says why a fused kernel it leaves has no GPU lowering.
  if (module.walk([](ld::FusedOp) { return WalkResult::interrupt(); })
          .wasInterrupted())
    return makeError(diagnostics.message().empty()
                         ? "this fused kernel has no GPU lowering"
                         : diagnostics.message());
  PassManager pm(module.getContext());
  configureVerifier(pm);
  pm.addPass(createLowbitToLoops());
  if (failed(pm.run(module)))
    return makeError("lowering for the GPU failed: " + diagnostics.message());
  return llvm::Error::success();
}

std::optional<Stage> parseStage(std::string_view name) {
  if (name == "mlir")
    return Stage::Mlir;
  if (name == "loops")
    return Stage::Loops;
  if (name == "llvm")
    return Stage::Llvm;
  return std::nullopt;
}

llvm::Expected<std::string> emit(const KernelSpec &spec, Stage stage) {
  ContextLease context = borrowContext();
  auto module = buildKernelModule(*context, spec);
  if (!module)
    return module.takeError();
  auto print = [](ModuleOp op) {
    std::string text;
    llvm::raw_string_ostream stream(text);
    op.print(stream);
    return text;
  };
  if (stage == Stage::Mlir)
    return print(**module);
  if (llvm::Error error = lowerToLoops(**module))
    return error;
  if (stage == Stage::Loops)
    return print(**module);
  if (llvm::Error error = lowerLoopsToLlvm(**module))
    return error;
  return translateToLlvmIr(**module);
}

llvm::Expected<GpuCompilation> compileToPtx(const KernelSpec &spec,
                                            const Target &target,
                                            const PtxOptions &options) {
  if (!target.isNvidia())
    return makeError("compileToPtx needs an NVIDIA target, got '" +
                     target.str() + "'");
  // The first compile's GPU tail warm-up, beside its lowbit passes.
  GpuTailWarmupScope tailWarmup(target);
  ContextLease context = borrowContext();
  auto module = buildKernelModule(*context, spec);
  if (!module)
    return module.takeError();
  GpuCompileOptions compileOptions;
  compileOptions.ptx = options;
  return compileModuleForGpu(**module, lowerForGpu, target, compileOptions);
}

CpuKernel::~CpuKernel() = default;

namespace {

/// The memref descriptor of a rank-2 memref (MLIR's C interface).
struct Descriptor2D {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizes[2];
  int64_t strides[2];
};

class JitCpuKernel : public CpuKernel {
public:
  JitCpuKernel(KernelSpec spec, std::unique_ptr<HostExecutable> executable)
      : CpuKernel(std::move(spec)), executable(std::move(executable)),
        paramCount(kernelParams(kernelSpec).size()) {}

  llvm::Error run(const std::vector<HostBuffer> &buffers) override {
    size_t expected = paramCount;
    if (buffers.size() != expected)
      return makeError("the kernel takes " + std::to_string(expected) +
                       " buffers, got " + std::to_string(buffers.size()));
    std::vector<Descriptor2D> descriptors(buffers.size());
    std::vector<void *> descriptorPointers(buffers.size());
    std::vector<void *> args(buffers.size());
    for (size_t i = 0; i < buffers.size(); ++i) {
      const HostBuffer &buffer = buffers[i];
      descriptors[i] = {buffer.data,
                        buffer.data,
                        0,
                        {buffer.rows, buffer.cols},
                        {buffer.cols, 1}};
      descriptorPointers[i] = &descriptors[i];
      args[i] = &descriptorPointers[i];
    }
    return executable->invoke(kKernelName, args);
  }

private:
  std::unique_ptr<HostExecutable> executable;
  size_t paramCount;
};

} // namespace

llvm::Expected<std::unique_ptr<CpuKernel>>
compileForCpu(const KernelSpec &spec) {
  ContextLease context = borrowContext();
  auto module = buildKernelModule(*context, spec);
  if (!module)
    return module.takeError();
  if (llvm::Error error = lowerToLoops(**module))
    return error;
  if (llvm::Error error = lowerLoopsToLlvm(**module))
    return error;
  auto executable = makeHostExecutable(**module);
  if (!executable)
    return executable.takeError();
  return std::make_unique<JitCpuKernel>(spec, std::move(*executable));
}

} // namespace lowbit::compiler
