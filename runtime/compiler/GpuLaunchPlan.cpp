//===- GpuLaunchPlan.cpp - The launch plan of a module after the GPU tail -===//
//
// The GPU tail leaves the host function holding the gpu.launch_func ops, in
// launch order, with grid/block sizes computed from the memref sizes
// (memref.dim of the kernel's parameters). They are written down here as a
// launch::LaunchPlan, postfix expressions over the parameters' sizes,
// which the JIT caches, `lowbit aot` writes into manifests and the GPU
// emulator evaluates per call (runtime/aot/LaunchProgram.h).
//
//===----------------------------------------------------------------------===//

#include "runtime/compiler/GpuCompile.h"

#include "lowering/PassVerification.h"
#include "runtime/compiler/Compiler.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/StringMap.h"

namespace lowbit::compiler {

using namespace mlir;

namespace {

/// arith ops whose value the plan evaluates, by operation name.
const llvm::StringMap<std::string_view> &binaryOperators() {
  static const llvm::StringMap<std::string_view> table = {
      {"arith.addi", "add"},           {"arith.subi", "sub"},
      {"arith.muli", "mul"},           {"arith.divsi", "divs"},
      {"arith.divui", "divu"},         {"arith.ceildivsi", "ceildivs"},
      {"arith.ceildivui", "ceildivu"}, {"arith.floordivsi", "floordivs"},
      {"arith.remsi", "rems"},         {"arith.remui", "remu"},
      {"arith.maxsi", "maxs"},         {"arith.minsi", "mins"},
      {"arith.maxui", "maxu"},         {"arith.minui", "minu"},
  };
  return table;
}

/// Appends the postfix form of `value` to `out`, or returns false with a
/// reason.
bool describeValue(Value value, func::FuncOp function, std::string &out,
                   std::string &reason, int depth = 0) {
  if (depth > 64) {
    reason = "size expression too deep";
    return false;
  }
  auto token = [&](const std::string &text) {
    if (!out.empty())
      out += ' ';
    out += text;
  };
  Operation *op = value.getDefiningOp();
  if (!op) {
    reason = "a launch size is a block argument";
    return false;
  }
  if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
    auto integer = dyn_cast<IntegerAttr>(constant.getValue());
    if (!integer) {
      reason = "a non-integer constant in a launch size";
      return false;
    }
    token(std::to_string(integer.getValue().getSExtValue()));
    return true;
  }
  if (auto dim = dyn_cast<memref::DimOp>(op)) {
    auto argument = dyn_cast<BlockArgument>(dim.getSource());
    std::optional<int64_t> index = dim.getConstantIndex();
    if (!argument || argument.getOwner() != &function.getBody().front() ||
        !index) {
      reason = "memref.dim of something other than a kernel parameter";
      return false;
    }
    token("dim:" + std::to_string(argument.getArgNumber()) + ":" +
          std::to_string(*index));
    return true;
  }
  llvm::StringRef name = op->getName().getStringRef();
  if (name == "arith.index_cast" || name == "arith.index_castui" ||
      name == "arith.extsi" || name == "arith.extui" || name == "arith.trunci")
    return describeValue(op->getOperand(0), function, out, reason, depth + 1);
  if (auto found = binaryOperators().find(name);
      found != binaryOperators().end()) {
    if (!describeValue(op->getOperand(0), function, out, reason, depth + 1) ||
        !describeValue(op->getOperand(1), function, out, reason, depth + 1))
      return false;
    token(std::string(found->second));
    return true;
  }
  if (auto compare = dyn_cast<arith::CmpIOp>(op)) {
    if (!describeValue(compare.getLhs(), function, out, reason, depth + 1) ||
        !describeValue(compare.getRhs(), function, out, reason, depth + 1))
      return false;
    token("cmp:" + std::to_string(int(compare.getPredicate())));
    return true;
  }
  if (auto select = dyn_cast<arith::SelectOp>(op)) {
    for (Value operand : select->getOperands())
      if (!describeValue(operand, function, out, reason, depth + 1))
        return false;
    token("sel");
    return true;
  }
  reason = "a launch size computed by '" + name.str() + "'";
  return false;
}

launch::LaunchPlan describeLaunches(ModuleOp module) {
  launch::LaunchPlan plan;
  func::FuncOp function = module.lookupSymbol<func::FuncOp>(kKernelName);
  if (!function) {
    plan.unsupported = "no host function @kernel after the GPU tail";
    return plan;
  }
  std::string reason;
  function.walk([&](gpu::LaunchFuncOp launch) {
    if (!reason.empty())
      return;
    if (launch->getParentOp() != function.getOperation()) {
      reason = "a kernel launch inside host control flow";
      return;
    }
    launch::LaunchStep step;
    step.kernelName = launch.getKernelName().str();
    gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
    gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
    Value sizes[6] = {grid.x, grid.y, grid.z, block.x, block.y, block.z};
    for (int i = 0; i < 6; ++i)
      if (!describeValue(sizes[i], function, step.sizes[i], reason))
        return;
    if (Value shared = launch.getDynamicSharedMemorySize()) {
      if (!describeValue(shared, function, step.sizes[6], reason))
        return;
    } else {
      step.sizes[6] = "0";
    }
    for (Value operand : launch.getKernelOperands()) {
      if (isa<MemRefType>(operand.getType())) {
        auto argument = dyn_cast<BlockArgument>(operand);
        if (!argument || argument.getOwner() != &function.getBody().front()) {
          reason = "a kernel operand is a memref that is not a parameter";
          return;
        }
        step.arguments.push_back("m:" +
                                 std::to_string(argument.getArgNumber()));
        continue;
      }
      unsigned width = operand.getType().isIndex()
                           ? 64
                           : operand.getType().getIntOrFloatBitWidth();
      if (!operand.getType().isIntOrIndex() || (width != 32 && width != 64)) {
        reason = "a kernel operand of an unsupported type";
        return;
      }
      std::string expression;
      if (!describeValue(operand, function, expression, reason))
        return;
      step.arguments.push_back("s" + std::to_string(width) + ":" + expression);
    }
    plan.steps.push_back(std::move(step));
  });
  if (!reason.empty()) {
    plan.steps.clear();
    plan.unsupported = reason;
  }
  return plan;
}

} // namespace

launch::LaunchPlan describeGpuLaunches(ModuleOp module) {
  std::string diagnostics;
  ScopedDiagnosticHandler handler(module.getContext(), [&](Diagnostic &diag) {
    diagnostics += diag.str() + "\n";
    return success();
  });
  // The host glue may still use affine.apply for tile counts.
  PassManager passes(module.getContext());
  configureVerifier(passes);
  passes.addNestedPass<func::FuncOp>(createLowerAffinePass());
  if (failed(passes.run(module))) {
    launch::LaunchPlan plan;
    plan.unsupported =
        "lower-affine failed on the host function: " + diagnostics;
    return plan;
  }
  return describeLaunches(module);
}

} // namespace lowbit::compiler
