//===- KvCompiler.cpp - KV kernel spec -> MLIR -> loops -> CPU | PTX ------===//

#include "runtime/compiler/KvCompiler.h"

#include "dialect/LowbitKvOps.h"
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

#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace ld = lowbit::dialect;

namespace lowbit::compiler {
namespace {

/// The kernel's parameter types in ABI order (KvCompiler.h).
SmallVector<MemRefType> kvParamTypes(Builder &b, const kv::KvKernelSpec &spec) {
  const int64_t dynamic = ShapedType::kDynamic;
  bool paged = spec.layout == kv::KvLayout::Paged;
  int64_t slots = paged ? kv::kPageTokens : dynamic;
  auto cacheType = [&](int64_t width, Type element) {
    return MemRefType::get({dynamic, spec.heads, slots, width}, element);
  };
  MemRefType values =
      MemRefType::get({dynamic, spec.heads, dynamic, spec.headDim},
                      kvElementType(b, spec.valueType));
  MemRefType codes = cacheType(spec.headDim, b.getI8Type());
  MemRefType scales =
      spec.scheme.isInt8()
          ? cacheType(spec.scaleWidth(), b.getF32Type())
          : MemRefType::get({spec.scaleWidth()}, b.getF32Type());
  MemRefType positions = MemRefType::get({dynamic}, b.getI32Type());
  SmallVector<MemRefType> types;
  if (spec.op == kv::KvKernelOp::Append)
    types = {values, codes, scales, positions};
  else
    types = {codes, scales, positions, values};
  if (paged)
    types.push_back(MemRefType::get({dynamic, dynamic}, b.getI32Type()));
  return types;
}

} // namespace

llvm::Expected<OwningOpRef<ModuleOp>>
buildKvModule(MLIRContext &context, const kv::KvKernelSpec &spec) {
  // The spec's own text is its validation: what parses is buildable.
  std::string error;
  if (!kv::parseKvKernelSpec(kv::formatKvKernelSpec(spec), &error))
    return compileError(error);
  context.loadDialect<ld::LowbitDialect, func::FuncDialect>();
  DiagnosticText diagnostics(context);
  OpBuilder b(&context);
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  SmallVector<MemRefType> paramTypes = kvParamTypes(b, spec);
  SmallVector<Type> argTypes(paramTypes.begin(), paramTypes.end());
  auto func = func::FuncOp::create(b, loc, kKernelName,
                                   b.getFunctionType(argTypes, {}));
  func->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  Block *body = func.addEntryBlock();
  b.setInsertionPointToStart(body);

  const kv::KvSchemeParams &scheme = spec.scheme;
  StringAttr schemeName = b.getStringAttr(scheme.name());
  StringAttr convention =
      scheme.isInt8()
          ? b.getStringAttr(kv::scaleConventionName(scheme.int8.convention))
          : StringAttr();
  FloatAttr epsilon =
      scheme.isInt8() ? b.getF32FloatAttr(scheme.int8.epsilon) : FloatAttr();
  UnitAttr perHead = scheme.perHead ? b.getUnitAttr() : UnitAttr();
  auto args = body->getArguments();
  Value table = spec.layout == kv::KvLayout::Paged ? args[4] : Value();
  if (spec.op == kv::KvKernelOp::Append)
    ld::KvAppendOp::create(b, loc, args[0], args[1], args[2], args[3], table,
                           schemeName, convention, epsilon, perHead);
  else
    ld::KvDequantizeOp::create(b, loc, args[0], args[1], args[2], args[3],
                               table, schemeName, convention, epsilon, perHead);
  func::ReturnOp::create(b, loc);
  if (failed(verify(*module)))
    return compileError("the KV kernel module does not verify: " +
                        diagnostics.str());
  return module;
}

llvm::Error lowerKvToLoops(ModuleOp module) {
  return runLoweringPasses(module, {createLowbitKvToLoops},
                           "lowbit-kv-to-loops");
}

llvm::Error lowerKvForGpu(ModuleOp module) {
  return runLoweringPasses(module, {createLowbitToGpu, createLowbitKvToLoops},
                           "lowering for the GPU");
}

llvm::Expected<std::string> emitKv(const kv::KvKernelSpec &spec,
                                   std::string_view stage) {
  if (stage != "mlir" && stage != "loops" && stage != "llvm")
    return compileError("unknown stage '" + std::string(stage) +
                        "' (mlir, loops, llvm)");
  ContextLease context = borrowContext();
  auto module = buildKvModule(*context, spec);
  if (!module)
    return module.takeError();
  if (stage != "mlir")
    if (llvm::Error error = lowerKvToLoops(**module))
      return std::move(error);
  if (stage == "llvm") {
    if (llvm::Error error = lowerLoopsToLlvm(**module))
      return std::move(error);
    return translateToLlvmIr(**module);
  }
  std::string text;
  llvm::raw_string_ostream stream(text);
  (*module)->print(stream);
  return text;
}

llvm::Expected<PtxModule>
compileKvToPtx(const kv::KvKernelSpec &spec, const Target &target,
               const PtxOptions &options,
               llvm::function_ref<void(ModuleOp)> lowered) {
  if (!target.isNvidia())
    return compileError("compileKvToPtx needs an NVIDIA target, got '" +
                        target.str() + "'");
  ContextLease context = borrowContext();
  auto module = buildKvModule(*context, spec);
  if (!module)
    return module.takeError();
  if (llvm::Error error = lowerKvForGpu(**module))
    return std::move(error);
  auto ptx = gpuModuleToPtx(**module, target, options);
  if (ptx && lowered)
    lowered(**module);
  return ptx;
}

KvCpuKernel::~KvCpuKernel() = default;

llvm::Error
runKvHostKernel(HostExecutable &executable,
                const std::vector<std::vector<int64_t>> &paramShapes,
                const std::vector<KvBuffer> &buffers) {
  if (buffers.size() != paramShapes.size())
    return compileError("the kernel takes " +
                        std::to_string(paramShapes.size()) + " buffers, got " +
                        std::to_string(buffers.size()));
  // MLIR's ranked descriptor: allocated, aligned, offset, sizes[rank],
  // strides[rank], all 64-bit.
  std::vector<std::vector<int64_t>> descriptors(buffers.size());
  std::vector<void *> descriptorPointers(buffers.size());
  std::vector<void *> args(buffers.size());
  for (size_t index = 0; index < buffers.size(); ++index) {
    const std::vector<int64_t> &want = paramShapes[index];
    const std::vector<int64_t> &shape = buffers[index].shape;
    if (shape.size() != want.size())
      return compileError("buffer " + std::to_string(index) + " has rank " +
                          std::to_string(shape.size()) + "; the kernel takes " +
                          std::to_string(want.size()));
    for (size_t axis = 0; axis < shape.size(); ++axis)
      if (shape[axis] < 1 ||
          (!ShapedType::isDynamic(want[axis]) && want[axis] != shape[axis]))
        return compileError(
            "buffer " + std::to_string(index) + " dimension " +
            std::to_string(axis) + " is " + std::to_string(shape[axis]) +
            (ShapedType::isDynamic(want[axis])
                 ? std::string("; it must be >= 1")
                 : "; the kernel takes " + std::to_string(want[axis])));
    std::vector<int64_t> &descriptor = descriptors[index];
    auto address = reinterpret_cast<intptr_t>(buffers[index].data);
    descriptor = {address, address, 0};
    descriptor.insert(descriptor.end(), shape.begin(), shape.end());
    std::vector<int64_t> strides(shape.size(), 1);
    for (size_t axis = shape.size() - 1; axis > 0; --axis)
      strides[axis - 1] = strides[axis] * shape[axis];
    descriptor.insert(descriptor.end(), strides.begin(), strides.end());
    descriptorPointers[index] = descriptor.data();
    args[index] = &descriptorPointers[index];
  }
  return executable.invoke(kKernelName, args);
}

namespace {

class JitKvCpuKernel : public KvCpuKernel {
public:
  JitKvCpuKernel(kv::KvKernelSpec spec,
                 std::unique_ptr<HostExecutable> executable,
                 std::vector<std::vector<int64_t>> paramShapes)
      : KvCpuKernel(std::move(spec)), executable(std::move(executable)),
        paramShapes(std::move(paramShapes)) {}

  llvm::Error run(const std::vector<KvBuffer> &buffers) override {
    return runKvHostKernel(*executable, paramShapes, buffers);
  }

private:
  std::unique_ptr<HostExecutable> executable;
  std::vector<std::vector<int64_t>> paramShapes;
};

} // namespace

llvm::Expected<std::unique_ptr<KvCpuKernel>>
compileKvForCpu(const kv::KvKernelSpec &spec) {
  ContextLease context = borrowContext();
  auto module = buildKvModule(*context, spec);
  if (!module)
    return module.takeError();
  std::vector<std::vector<int64_t>> paramShapes;
  {
    Builder b(context.get());
    for (MemRefType type : kvParamTypes(b, spec))
      paramShapes.emplace_back(type.getShape().begin(), type.getShape().end());
  }
  if (llvm::Error error = lowerKvToLoops(**module))
    return std::move(error);
  auto executable = loopsModuleToHost(**module);
  if (!executable)
    return executable.takeError();
  return std::make_unique<JitKvCpuKernel>(spec, std::move(*executable),
                                          std::move(paramShapes));
}

} // namespace lowbit::compiler
