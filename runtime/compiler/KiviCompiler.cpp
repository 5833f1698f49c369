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

llvm::Expected<OwningOpRef<ModuleOp>> buildMemrefKernelModule(
    MLIRContext &context, const std::vector<std::vector<int64_t>> &shapes,
    llvm::function_ref<SmallVector<Type>(Builder &)> elements,
    llvm::function_ref<void(OpBuilder &, Location, ValueRange)> body,
    const std::string &what) {
  context.loadDialect<ld::LowbitDialect, func::FuncDialect>();
  DiagnosticText diagnostics(context);
  OpBuilder b(&context);
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  SmallVector<Type> types = elements(b);
  SmallVector<Type> argTypes;
  for (size_t index = 0; index < shapes.size(); ++index)
    argTypes.push_back(MemRefType::get(shapes[index], types[index]));
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
buildKiviModule(MLIRContext &context, const kv::KiviKernelSpec &spec) {
  std::string error;
  if (!kv::validateKiviKernelSpec(spec, &error))
    return compileError(error);
  bool append = spec.op == kv::KvKernelOp::Append;
  bool paged = spec.layout == kv::KvLayout::Paged;
  // The element type of each parameter, in ABI order.
  auto elements = [&](Builder &b) {
    Type residualType = kvElementType(b, spec.residualType);
    SmallVector<Type> types;
    if (append)
      types = {residualType,  b.getI8Type(), b.getF32Type(),
               b.getI8Type(), residualType,  b.getI32Type()};
    else
      types = {b.getI8Type(),
               b.getF32Type(),
               b.getI8Type(),
               residualType,
               b.getI32Type(),
               b.getI32Type(),
               kvElementType(b, spec.outputType)};
    if (paged)
      types.push_back(b.getI32Type());
    return types;
  };
  auto body = [&](OpBuilder &b, Location loc, ValueRange args) {
    const kv::KiviSide &side = spec.side;
    StringAttr scheme = b.getStringAttr(kv::kiviSchemeName(side.bits));
    IntegerAttr groupSize = b.getI64IntegerAttr(side.groupSize);
    IntegerAttr window = b.getI64IntegerAttr(side.residual);
    UnitAttr perChannel = side.perChannel ? b.getUnitAttr() : UnitAttr();
    if (append)
      ld::KiviAppendOp::create(b, loc, args[0], args[1], args[2], args[3],
                               args[4], args[5], paged ? args[6] : Value(),
                               scheme, groupSize, window, perChannel);
    else
      ld::KiviDequantizeOp::create(
          b, loc, args[0], args[1], args[2], args[3], args[4], args[5], args[6],
          paged ? args[7] : Value(), scheme, groupSize, window, perChannel);
  };
  return buildMemrefKernelModule(context, kiviParamShapes(spec), elements, body,
                                 "KIVI kernel");
}

llvm::Error lowerKiviToLoops(ModuleOp module) {
  return runLoweringPasses(module, {createLowbitKiviToLoops},
                           "lowbit-kivi-to-loops");
}

llvm::Expected<OwningOpRef<ModuleOp>>
buildKiviLoops(MLIRContext &context, const kv::KiviKernelSpec &spec) {
  auto module = buildKiviModule(context, spec);
  if (!module)
    return module.takeError();
  if (llvm::Error error = lowerKiviToLoops(**module))
    return std::move(error);
  return module;
}

llvm::Expected<std::unique_ptr<HostExecutable>>
loopsToHost(LoopsModuleBuilder build) {
  ContextLease context = borrowContext();
  auto module = build(*context);
  if (!module)
    return module.takeError();
  return loopsModuleToHost(**module);
}

llvm::Expected<PtxModule>
loopsToPtx(LoopsModuleBuilder build, const Target &target,
           const PtxOptions &options, const std::string &entry,
           llvm::function_ref<void(ModuleOp)> lowered) {
  if (!target.isNvidia())
    return compileError(entry + " needs an NVIDIA target, got '" +
                        target.str() + "'");
  ContextLease context = borrowContext();
  auto module = build(*context);
  if (!module)
    return module.takeError();
  auto ptx = gpuModuleToPtx(**module, target, options);
  if (ptx && lowered)
    lowered(**module);
  return ptx;
}

llvm::Expected<PtxModule>
compileKiviToPtx(const kv::KiviKernelSpec &spec, const Target &target,
                 const PtxOptions &options,
                 llvm::function_ref<void(ModuleOp)> lowered) {
  return loopsToPtx(
      [&](MLIRContext &context) { return buildKiviLoops(context, spec); },
      target, options, "compileKiviToPtx", lowered);
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
  auto executable = loopsToHost(
      [&](MLIRContext &context) { return buildKiviLoops(context, spec); });
  if (!executable)
    return executable.takeError();
  return std::unique_ptr<KiviCpuKernel>(
      new KiviCpuKernel(spec, std::move(*executable)));
}

} // namespace lowbit::compiler
