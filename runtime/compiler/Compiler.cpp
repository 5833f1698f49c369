//===- Compiler.cpp - Kernel spec -> MLIR -> loops -> host code -----------===//

#include "runtime/compiler/Compiler.h"

#include "dialect/LowbitOps.h"
#include "lowering/CpuTail.h"
#include "lowering/LowbitFusion.h"
#include "lowering/LowbitFusionBody.h"
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

const char *sideName(PrologueOperand operand) {
  switch (operand) {
  case PrologueOperand::Weight:
    return "weight";
  case PrologueOperand::Residual:
    return "residual";
  case PrologueOperand::Smooth:
    return "smooth";
  }
  return "";
}

std::vector<ParamInfo> paramInfos(Builder &b, const KernelSpec &spec) {
  using Role = KernelParam::Role;
  const Scheme &scheme = spec.scheme;
  Shape2D values{spec.rows, spec.cols};
  Shape2D codes = codesShape(scheme, spec.rows, spec.cols);
  Shape2D scales = scaleShape(scheme, spec.rows, spec.cols);
  Shape2D one{1, 1};
  Type valueType = valueElementType(b, spec.valueType);
  Type scaleType = storedScaleTypeOf(b, scheme.scale.type);
  Type i8 = b.getI8Type(), f32 = b.getF32Type();
  bool zeros = scheme.scale.zeroPoint;
  std::vector<ParamInfo> params;
  if (spec.op == KernelOp::Dequantize) {
    params.push_back({Role::Codes, false, i8, codes});
    params.push_back({Role::Scales, false, scaleType, scales});
    if (zeros)
      params.push_back({Role::Zeros, false, i8, scales});
    if (spec.hasGlobal())
      params.push_back({Role::Global, false, f32, one});
    params.push_back({Role::Output, true, valueType, values});
    return params;
  }
  // Quantize: operands in the op's order, then results in the op's order.
  // A fused kernel's prologues add their side tensors after the input and
  // the updated residual last (docs/fusion.md).
  params.push_back(
      {Role::Input,
       false,
       valueType,
       {spec.rows, spec.cols == kDynamic
                       ? kDynamic
                       : prologueInputWidth(spec.prologues, spec.cols)}});
  bool writesResidual = false;
  for (const Prologue &prologue : spec.prologues) {
    writesResidual |= prologueWritesResidual(prologue.kind);
    for (PrologueOperand operand : prologueOperands(prologue.kind))
      params.push_back({Role::Input, false, valueType,
                        operand == PrologueOperand::Residual
                            ? values
                            : Shape2D{1, spec.cols},
                        sideName(operand)});
  }
  bool globalGiven =
      spec.hasGlobal() &&
      (spec.isStatic() || spec.globalSource == GlobalSource::Given);
  if (spec.isStatic()) {
    params.push_back({Role::Scales, false, scaleType, scales});
    if (zeros)
      params.push_back({Role::Zeros, false, i8, scales});
  }
  if (globalGiven)
    params.push_back({Role::Global, false, f32, one});
  params.push_back({Role::Codes, true, i8, codes});
  if (!spec.isStatic()) {
    params.push_back({Role::Scales, true, scaleType, scales});
    if (zeros)
      params.push_back({Role::Zeros, true, i8, scales});
  }
  if (spec.hasGlobal() && !globalGiven)
    params.push_back({Role::Global, true, f32, one});
  if (writesResidual)
    params.push_back({Role::Output, true, valueType, values, "residual"});
  return params;
}

} // namespace

void registerCompilerDialects(DialectRegistry &registry) {
  registry.insert<ld::LowbitDialect, arith::ArithDialect,
                  bufferization::BufferizationDialect, func::FuncDialect,
                  math::MathDialect, memref::MemRefDialect, scf::SCFDialect>();
  registerLowbitFusionDependencies(registry);
  registerCpuTailDialects(registry);
  registerGpuTailDependencies(registry);
}

std::unique_ptr<MLIRContext> makeContext() {
  DialectRegistry registry;
  registerCompilerDialects(registry);
  // One context per kernel; a thread pool per context would cost more
  // than the single-threaded passes over a one-function module.
  auto context =
      std::make_unique<MLIRContext>(registry, MLIRContext::Threading::DISABLED);
  context->loadAllAvailableDialects();
  return context;
}

std::vector<KernelParam> kernelParams(const KernelSpec &spec) {
  MLIRContext context(MLIRContext::Threading::DISABLED);
  Builder b(&context);
  std::vector<KernelParam> params;
  for (const ParamInfo &info : paramInfos(b, spec))
    params.push_back(
        {info.role, info.isResult, typeName(info.elementType), info.side});
  return params;
}

std::vector<Shape2D> bufferShapes(const KernelSpec &spec, int64_t rows,
                                  int64_t cols) {
  KernelSpec sized = spec;
  sized.rows = rows;
  sized.cols = cols;
  MLIRContext context(MLIRContext::Threading::DISABLED);
  Builder b(&context);
  std::vector<Shape2D> shapes;
  for (const ParamInfo &info : paramInfos(b, sized))
    shapes.push_back(info.shape);
  return shapes;
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
  pm.addPass(createLowbitFusionToLoops());
  pm.addPass(createLowbitToLoops());
  if (failed(pm.run(module)))
    return makeError("lowbit-to-loops failed: " + diagnostics.message());
  return llvm::Error::success();
}

llvm::Error lowerForGpu(ModuleOp module) {
  if (module.walk([](ld::FusedOp) { return WalkResult::interrupt(); })
          .wasInterrupted())
    return makeError("fused kernels (prologue | quantize) have no GPU "
                     "lowering yet; they run on the CPU target");
  DiagnosticCollector diagnostics(*module.getContext());
  PassManager pm(module.getContext());
  pm.addPass(createLowbitToGpu());
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
  std::unique_ptr<MLIRContext> context = makeContext();
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
    return std::move(error);
  if (stage == Stage::Loops)
    return print(**module);
  if (llvm::Error error = lowerLoopsToLlvm(**module))
    return std::move(error);
  return translateToLlvmIr(**module);
}

llvm::Expected<PtxModule> compileToPtx(const KernelSpec &spec,
                                       const Target &target) {
  if (!target.isNvidia())
    return makeError("compileToPtx needs an NVIDIA target, got '" +
                     target.str() + "'");
  std::unique_ptr<MLIRContext> context = makeContext();
  auto module = buildKernelModule(*context, spec);
  if (!module)
    return module.takeError();
  if (llvm::Error error = lowerForGpu(**module))
    return std::move(error);
  DiagnosticCollector diagnostics(*context);
  std::string error;
  FailureOr<PtxModule> ptx = lowerToPtx(**module, target, error);
  if (failed(ptx))
    return makeError(error.empty() ? diagnostics.message() : error);
  return std::move(*ptx);
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
  std::unique_ptr<MLIRContext> context = makeContext();
  auto module = buildKernelModule(*context, spec);
  if (!module)
    return module.takeError();
  if (llvm::Error error = lowerToLoops(**module))
    return std::move(error);
  if (llvm::Error error = lowerLoopsToLlvm(**module))
    return std::move(error);
  auto executable = makeHostExecutable(**module);
  if (!executable)
    return executable.takeError();
  return std::make_unique<JitCpuKernel>(spec, std::move(*executable));
}

} // namespace lowbit::compiler
