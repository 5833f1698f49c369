//===- KvCompiler.cpp - KV kernel spec -> MLIR -> loops -> CPU | PTX ------===//

#include "runtime/compiler/KvCompiler.h"

#include "dialect/LowbitKvOps.h"
#include "kv/KvPageTable.h"
#include "lowering/CpuTail.h"
#include "lowering/Passes.h"
#include "runtime/compiler/Compiler.h"
#include "runtime/compiler/KernelCompileSupport.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace mlir;
namespace ld = lowbit::dialect;

namespace lowbit::compiler {
llvm::Expected<OwningOpRef<ModuleOp>>
buildKvModule(MLIRContext &context, const kv::KvKernelSpec &spec) {
  // The spec's own text is its validation: what parses is buildable.
  std::string error;
  if (!kv::parseKvKernelSpec(kv::formatKvKernelSpec(spec), &error))
    return compileError(error);
  auto body = [&](OpBuilder &b, Location loc, ValueRange args) {
    const kv::KvSchemeParams &scheme = spec.scheme;
    StringAttr schemeName = b.getStringAttr(scheme.name());
    StringAttr convention =
        scheme.isInt8()
            ? b.getStringAttr(kv::scaleConventionName(scheme.int8.convention))
            : StringAttr();
    FloatAttr epsilon =
        scheme.isInt8() ? b.getF32FloatAttr(scheme.int8.epsilon) : FloatAttr();
    UnitAttr perHead = scheme.perHead ? b.getUnitAttr() : UnitAttr();
    Value table = spec.layout == kv::KvLayout::Paged ? args[4] : Value();
    if (spec.op == kv::KvKernelOp::Append)
      ld::KvAppendOp::create(b, loc, args[0], args[1], args[2], args[3], table,
                             schemeName, convention, epsilon, perHead);
    else
      ld::KvDequantizeOp::create(b, loc, args[0], args[1], args[2], args[3],
                                 table, schemeName, convention, epsilon,
                                 perHead);
  };
  return buildSignatureModule(context, kvKernelParams(spec), body, "KV kernel");
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
  auto module = stage == "mlir" ? buildKvModule(*context, spec)
                                : lowerModule(buildKvModule(*context, spec),
                                              lowerKvToLoops);
  if (!module)
    return module.takeError();
  if (stage == "llvm") {
    if (llvm::Error error = lowerLoopsToLlvm(**module))
      return error;
    return translateToLlvmIr(**module);
  }
  return moduleText(**module);
}

/// A paged kernel's block table names each page at most once (kv/KvPaged.h):
/// an append through a shared page would overwrite another sequence's
/// tokens. The pages are the first dimension of the paged storage.
static llvm::Error checkBlockTable(const std::vector<KvKernelParam> &params,
                                   const std::vector<KvBuffer> &buffers) {
  auto table = std::find_if(params.begin(), params.end(), [](auto &param) {
    return param.name == "block_table";
  });
  auto storage = std::find_if(params.begin(), params.end(), [](auto &param) {
    return !param.shape.empty() && param.shape.front() == kPages;
  });
  if (table == params.end() || storage == params.end())
    return llvm::Error::success();
  const KvBuffer &tableBuffer = buffers[table - params.begin()];
  if (!tableBuffer.data)
    return llvm::Error::success();
  int64_t pages = buffers[storage - params.begin()].shape.front();
  std::string error;
  if (!kv::checkPagesUnshared(
          {static_cast<const int32_t *>(tableBuffer.data),
           size_t(tableBuffer.shape[0] * tableBuffer.shape[1])},
          tableBuffer.shape[1], pages, &error))
    return compileError(error);
  return llvm::Error::success();
}

llvm::Error checkBufferShapes(const std::vector<KvKernelParam> &params,
                              const std::vector<KvBuffer> &buffers) {
  if (buffers.size() != params.size())
    return compileError("the kernel takes " + std::to_string(params.size()) +
                        " buffers, got " + std::to_string(buffers.size()));
  for (size_t index = 0; index < buffers.size(); ++index) {
    const std::vector<int64_t> &want = params[index].shape;
    const std::vector<int64_t> &shape = buffers[index].shape;
    if (shape.size() != want.size())
      return compileError("buffer " + std::to_string(index) + " has rank " +
                          std::to_string(shape.size()) + "; the kernel takes " +
                          std::to_string(want.size()));
    for (size_t axis = 0; axis < shape.size(); ++axis)
      if (shape[axis] < 1 ||
          (!isCallDim(want[axis]) && want[axis] != shape[axis]))
        return compileError(
            "buffer " + std::to_string(index) + " dimension " +
            std::to_string(axis) + " is " + std::to_string(shape[axis]) +
            (isCallDim(want[axis])
                 ? std::string("; it must be >= 1")
                 : "; the kernel takes " + std::to_string(want[axis])));
  }
  return checkBlockTable(params, buffers);
}

llvm::Expected<std::unique_ptr<KvCpuKernel>>
compileKvForCpu(const kv::KvKernelSpec &spec) {
  auto executable = loopsToHost([&](MLIRContext &context) {
    return lowerModule(buildKvModule(context, spec), lowerKvToLoops);
  });
  if (!executable)
    return executable.takeError();
  return std::make_unique<KvCpuKernel>(
      spec, std::move(*executable),
      [](const kv::KvKernelSpec &spec, const std::vector<KvBuffer> &buffers) {
        return checkBufferShapes(kvKernelParams(spec), buffers);
      });
}

} // namespace lowbit::compiler
