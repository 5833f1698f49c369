//===- KiviCompiler.cpp - KIVI kernel spec -> MLIR -> loops -> CPU | PTX --===//

#include "runtime/compiler/KiviCompiler.h"

#include "dialect/LowbitKiviOps.h"
#include "lowering/CpuTail.h"
#include "lowering/Passes.h"
#include "runtime/compiler/Compiler.h"
#include "runtime/compiler/KernelCompileSupport.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"

using namespace mlir;
namespace ld = lowbit::dialect;

namespace lowbit::compiler {

llvm::Expected<OwningOpRef<ModuleOp>>
buildKiviModule(MLIRContext &context, const kv::KiviKernelSpec &spec) {
  std::string error;
  if (!kv::validateKiviKernelSpec(spec, &error))
    return compileError(error);
  bool append = spec.op == kv::KvKernelOp::Append;
  bool paged = spec.layout == kv::KvLayout::Paged;
  auto body = [&](OpBuilder &b, Location loc, ValueRange args) {
    const kv::KiviSide &side = spec.side;
    StringAttr scheme = b.getStringAttr(kv::kiviSchemeName(side.bits));
    IntegerAttr groupSize = b.getI64IntegerAttr(side.groupSize);
    IntegerAttr window = b.getI64IntegerAttr(side.residual);
    UnitAttr perChannel = side.perChannel ? b.getUnitAttr() : UnitAttr();
    UnitAttr integerZero =
        side.zero == kv::KiviZero::Integer ? b.getUnitAttr() : UnitAttr();
    if (append)
      ld::KiviAppendOp::create(b, loc, args[0], args[1], args[2], args[3],
                               args[4], args[5], paged ? args[6] : Value(),
                               scheme, groupSize, window, perChannel,
                               integerZero);
    else
      ld::KiviDequantizeOp::create(b, loc, args[0], args[1], args[2], args[3],
                                   args[4], args[5], args[6],
                                   paged ? args[7] : Value(), scheme, groupSize,
                                   window, perChannel, integerZero);
  };
  return buildSignatureModule(context, kiviKernelParams(spec), body,
                              "KIVI kernel");
}

llvm::Error lowerKiviToLoops(ModuleOp module) {
  return runLoweringPasses(module, {createLowbitKiviToLoops},
                           "lowbit-kivi-to-loops");
}

llvm::Expected<OwningOpRef<ModuleOp>>
buildKiviLoops(MLIRContext &context, const kv::KiviKernelSpec &spec) {
  return lowerModule(buildKiviModule(context, spec), lowerKiviToLoops);
}

llvm::Expected<std::unique_ptr<KiviCpuKernel>>
compileKiviForCpu(const kv::KiviKernelSpec &spec) {
  auto executable = loopsToHost(
      [&](MLIRContext &context) { return buildKiviLoops(context, spec); });
  if (!executable)
    return executable.takeError();
  return std::make_unique<KiviCpuKernel>(
      spec, std::move(*executable),
      [](const kv::KiviKernelSpec &spec, const std::vector<KvBuffer> &buffers) {
        return checkBufferShapes(kiviKernelParams(spec), buffers);
      });
}

} // namespace lowbit::compiler
