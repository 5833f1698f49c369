//===- GpuCompile.cpp - One GPU compile: module -> PTX, plan, workspace ---===//

#include "runtime/compiler/GpuCompile.h"

#include "runtime/compiler/Compiler.h"
#include "runtime/compiler/WorkspaceRowsOf.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <array>

namespace lowbit::compiler {

using namespace mlir;

namespace {

llvm::Error compileError(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

} // namespace

namespace {

/// The workspace argument's [fixed words, words per row, bits per element]
/// (target/Workspace.h): memref<1 x WORDS x i32>, or memref<1 x ? x i32>
/// with kRowsAttr.
std::array<int64_t, 3> workspaceSizeOf(ModuleOp module) {
  auto kernel = module.lookupSymbol<func::FuncOp>(kKernelName);
  if (!kernel || kernel.isExternal())
    return {0, 0, 0};
  for (BlockArgument argument : kernel.getArguments()) {
    unsigned position = argument.getArgNumber();
    if (!kernel.getArgAttr(position, workspace_abi::kArgumentAttr))
      continue;
    if (auto rows = kernel.getArgAttrOfType<DenseI64ArrayAttr>(
            position, workspace_abi::kRowsAttr);
        rows && rows.size() == 3)
      return {rows[0], rows[1], rows[2]};
    return {cast<MemRefType>(argument.getType()).getDimSize(1), 0, 0};
  }
  return {0, 0, 0};
}

} // namespace

int64_t workspaceWordsOf(ModuleOp module) { return workspaceSizeOf(module)[0]; }

workspace_abi::RowWords workspaceRowsOf(ModuleOp module) {
  std::array<int64_t, 3> size = workspaceSizeOf(module);
  return {size[1], size[2]};
}

llvm::Expected<GpuCompilation>
compileModuleForGpu(ModuleOp module, GpuLoopsLowering lowerToLoops,
                    const Target &target, const GpuCompileOptions &options) {
  if (!target.isNvidia())
    return compileError("the GPU compile needs an NVIDIA target, got '" +
                        target.str() + "'");
  std::string diagnostics;
  ScopedDiagnosticHandler handler(module.getContext(), [&](Diagnostic &diag) {
    if (!diagnostics.empty())
      diagnostics += "\n";
    diagnostics += diag.str();
    return success();
  });
  auto observe = [&](GpuStage stage) -> llvm::Error {
    return options.observe ? options.observe(stage, module)
                           : llvm::Error::success();
  };
  auto failedWith = [&](const std::string &error) {
    return compileError(error.empty() ? diagnostics : error);
  };

  GpuCompilation result;
  if (lowerToLoops)
    if (llvm::Error error = lowerToLoops(module))
      return error;
  // The lowering decided which kernels reduce through a workspace; it is
  // read here, once, for every consumer.
  result.workspaceWords = workspaceWordsOf(module);
  result.workspaceRows = workspaceRowsOf(module);
  if (llvm::Error error = observe(GpuStage::Loops))
    return error;
  if (options.last == GpuStage::Loops)
    return result;

  std::string error;
  if (failed(lowerToNvvm(module, target, error, options.ptx)))
    return failedWith(error);
  if (llvm::Error observed = observe(GpuStage::Nvvm))
    return observed;

  if (options.last != GpuStage::Nvvm) {
    FailureOr<PtxModule> ptx = serializeToPtx(module, error);
    if (failed(ptx))
      return failedWith(error);
    result.ptx = std::move(ptx->ptx);
    result.kernelNames = std::move(ptx->kernelNames);
    result.optLevel = ptx->optLevel;
    if (llvm::Error observed = observe(GpuStage::Ptx))
      return observed;
    if (options.last == GpuStage::Ptx)
      return result;
  }
  result.plan = describeGpuLaunches(module);
  if (llvm::Error observed = observe(GpuStage::Plan))
    return observed;
  return result;
}

} // namespace lowbit::compiler
