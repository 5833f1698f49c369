//===- KiviCompiler.cpp - KIVI kernel spec -> MLIR -> loops -> CPU | PTX --===//

#include "runtime/compiler/KiviCompiler.h"

#include "dialect/LowbitKiviOps.h"
#include "lowering/CpuTail.h"
#include "lowering/PassVerification.h"
#include "lowering/Passes.h"
#include "runtime/compiler/Compiler.h"
#include "runtime/compiler/KernelCompileSupport.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

using namespace mlir;
namespace ld = lowbit::dialect;

namespace lowbit::compiler {

std::vector<std::vector<int64_t>>
kiviParamShapes(const kv::KiviKernelSpec &spec) {
  const int64_t dynamic = ShapedType::kDynamic;
  const kv::KiviSide &side = spec.side;
  bool paged = spec.layout == kv::KvLayout::Paged;
  int64_t rows = paged ? kv::kPageTokens : dynamic;
  std::vector<int64_t> tokens = {dynamic, spec.heads, dynamic, spec.headDim};
  std::vector<int64_t> codes = {dynamic, spec.heads, rows,
                                side.codeWidth(spec.headDim)};
  int64_t paramRows = !side.perChannel ? rows
                      : paged          ? side.pageParamRows()
                                       : dynamic;
  std::vector<int64_t> params = {dynamic, spec.heads, paramRows,
                                 side.paramWidth(spec.headDim)};
  std::vector<int64_t> residual = {dynamic, spec.heads, side.residualSlots(),
                                   spec.headDim};
  std::vector<int64_t> perSequence = {dynamic};
  std::vector<std::vector<int64_t>> shapes;
  if (spec.op == kv::KvKernelOp::Append)
    shapes = {tokens, codes, params, params, residual, perSequence};
  else
    shapes = {codes,       params,      params, residual,
              perSequence, perSequence, tokens};
  if (paged)
    shapes.push_back({dynamic, dynamic});
  return shapes;
}

llvm::Expected<OwningOpRef<ModuleOp>>
buildKiviModule(MLIRContext &context, const kv::KiviKernelSpec &spec) {
  std::string error;
  if (!kv::validateKiviKernelSpec(spec, &error))
    return compileError(error);
  context.loadDialect<ld::LowbitDialect, func::FuncDialect>();
  DiagnosticText diagnostics(context);
  OpBuilder b(&context);
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());

  bool append = spec.op == kv::KvKernelOp::Append;
  Type residualType = kvElementType(b, spec.residualType);
  // The element type of each parameter, in ABI order.
  SmallVector<Type> elements;
  if (append)
    elements = {residualType,  b.getI8Type(), b.getF32Type(),
                b.getI8Type(), residualType,  b.getI32Type()};
  else
    elements = {b.getI8Type(),
                b.getF32Type(),
                b.getI8Type(),
                residualType,
                b.getI32Type(),
                b.getI32Type(),
                kvElementType(b, spec.outputType)};
  if (spec.layout == kv::KvLayout::Paged)
    elements.push_back(b.getI32Type());
  SmallVector<Type> argTypes;
  std::vector<std::vector<int64_t>> shapes = kiviParamShapes(spec);
  for (size_t index = 0; index < shapes.size(); ++index)
    argTypes.push_back(MemRefType::get(shapes[index], elements[index]));
  auto func = func::FuncOp::create(b, loc, kKernelName,
                                   b.getFunctionType(argTypes, {}));
  func->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  Block *body = func.addEntryBlock();
  b.setInsertionPointToStart(body);

  const kv::KiviSide &side = spec.side;
  StringAttr scheme = b.getStringAttr(kv::kiviSchemeName(side.bits));
  IntegerAttr groupSize = b.getI64IntegerAttr(side.groupSize);
  IntegerAttr window = b.getI64IntegerAttr(side.residual);
  UnitAttr perChannel = side.perChannel ? b.getUnitAttr() : UnitAttr();
  auto args = body->getArguments();
  if (append)
    ld::KiviAppendOp::create(
        b, loc, args[0], args[1], args[2], args[3], args[4], args[5],
        spec.layout == kv::KvLayout::Paged ? args[6] : Value(), scheme,
        groupSize, window, perChannel);
  else
    ld::KiviDequantizeOp::create(
        b, loc, args[0], args[1], args[2], args[3], args[4], args[5], args[6],
        spec.layout == kv::KvLayout::Paged ? args[7] : Value(), scheme,
        groupSize, window, perChannel);
  func::ReturnOp::create(b, loc);
  if (failed(verify(*module)))
    return compileError("the KIVI kernel module does not verify: " +
                        diagnostics.str());
  return module;
}

llvm::Error lowerKiviToLoops(ModuleOp module) {
  return runLoweringPasses(module, {createLowbitKiviToLoops},
                           "lowbit-kivi-to-loops");
}

namespace {

/// buildKiviModule, then lowerKiviToLoops: where both tails start.
llvm::Expected<OwningOpRef<ModuleOp>>
buildKiviLoops(MLIRContext &context, const kv::KiviKernelSpec &spec) {
  auto module = buildKiviModule(context, spec);
  if (!module)
    return module.takeError();
  if (llvm::Error error = lowerKiviToLoops(**module))
    return std::move(error);
  return module;
}

} // namespace

llvm::Expected<PtxModule>
compileKiviToPtx(const kv::KiviKernelSpec &spec, const Target &target,
                 const PtxOptions &options,
                 llvm::function_ref<void(ModuleOp)> lowered) {
  if (!target.isNvidia())
    return compileError("compileKiviToPtx needs an NVIDIA target, got '" +
                        target.str() + "'");
  ContextLease context = borrowContext();
  auto module = buildKiviLoops(*context, spec);
  if (!module)
    return module.takeError();
  auto ptx = gpuModuleToPtx(**module, target, options);
  if (ptx && lowered)
    lowered(**module);
  return ptx;
}

KiviCpuKernel::KiviCpuKernel(kv::KiviKernelSpec spec,
                             std::unique_ptr<HostExecutable> executable)
    : kernelSpec(std::move(spec)), executable(std::move(executable)) {}

KiviCpuKernel::~KiviCpuKernel() = default;

llvm::Error KiviCpuKernel::run(const std::vector<KvBuffer> &buffers) {
  return runKvHostKernel(*executable, kiviParamShapes(kernelSpec), buffers);
}

llvm::Expected<std::unique_ptr<KiviCpuKernel>>
compileKiviForCpu(const kv::KiviKernelSpec &spec) {
  ContextLease context = borrowContext();
  auto module = buildKiviLoops(*context, spec);
  if (!module)
    return module.takeError();
  auto executable = loopsModuleToHost(**module);
  if (!executable)
    return executable.takeError();
  return std::unique_ptr<KiviCpuKernel>(
      new KiviCpuKernel(spec, std::move(*executable)));
}

} // namespace lowbit::compiler
