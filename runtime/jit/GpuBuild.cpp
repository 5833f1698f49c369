//===- GpuBuild.cpp - Spec -> PTX and the launch plan ---------------------===//
//
// The same steps as compiler::compileToPtx (build, lowbit-to-loops, GPU
// tail), keeping the lowered module long enough to read its host function:
// that is where the grid sizes and the kernel operands are. The context is
// borrowed from the compiler's pool, and nvJitLink's first-use setup is
// started on a background thread while the lowering runs.
//
//===----------------------------------------------------------------------===//

#include "runtime/jit/LaunchPlan.h"

#include "lowering/GpuTail.h"
#include "lowering/GpuTailWarmup.h"
#include "lowering/PassVerification.h"
#include "runtime/compiler/Compiler.h"
#include "runtime/driver/NvJitLink.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/StringMap.h"

namespace lowbit::jit {

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

LaunchPlan describeLaunches(ModuleOp module) {
  LaunchPlan plan;
  func::FuncOp function =
      module.lookupSymbol<func::FuncOp>(compiler::kKernelName);
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
    LaunchStep step;
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

LaunchPlan describeGpuLaunches(ModuleOp module) {
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
    LaunchPlan plan;
    plan.unsupported =
        "lower-affine failed on the host function: " + diagnostics;
    return plan;
  }
  return describeLaunches(module);
}

Expected<GpuBuild> buildGpuKernel(const KernelSpec &spec, const Target &target,
                                  bool startLinker, GpuBuildPhases *phases) {
  auto fail = [](std::string message) {
    return makeError(ErrorCode::CompileFailed, std::move(message));
  };
  if (!target.isNvidia())
    return fail("buildGpuKernel needs an NVIDIA target, got '" + target.str() +
                "'");
  double phaseStart = phases ? phases->now() : 0;
  auto endPhase = [&](const char *name) {
    if (!phases)
      return;
    double now = phases->now();
    phases->millis.emplace_back(name, now - phaseStart);
    phaseStart = now;
  };
  // The GPU tail's one-time setup (docs/pipeline.md) runs beside the
  // first compile's module building and lowbit passes.
  GpuTailWarmupScope tailWarmup(target);
  // The PTX built here goes to nvJitLink next (unless LOWBIT_CUBIN=driver
  // or only the PTX is wanted): its first use in a process (~70 ms) runs
  // beside the lowering.
  if (Expected<runtime::CubinMaker> maker =
          runtime::cubinMakerFromEnvironment();
      startLinker && maker && *maker == runtime::CubinMaker::NvJitLink)
    runtime::startNvJitLinkWarmup(target.chip);
  // A build that fails links nothing, so no linkPtx waits for that
  // thread; waiting here keeps it from running into exit, where
  // nvJitLink's own statics (made during its first link, so destroyed
  // before the at-exit wait runs) go away under it (heap corruption in a
  // process whose first compile was refused). Once per process at most.
  struct WaitForLinkerUnlessBuilt {
    bool built = false;
    ~WaitForLinkerUnlessBuilt() {
      if (!built)
        (void)runtime::waitForNvJitLinkWarmup();
    }
  } linkerWait;
  compiler::ContextLease context = compiler::borrowContext();
  endPhase("context");
  std::string diagnostics;
  ScopedDiagnosticHandler handler(context.get(), [&](Diagnostic &diag) {
    if (!diagnostics.empty())
      diagnostics += "\n";
    diagnostics += diag.str();
    return success();
  });
  auto module = compiler::buildKernelModule(*context, spec);
  if (!module)
    return fail(llvm::toString(module.takeError()));
  endPhase("module");
  if (llvm::Error error = compiler::lowerForGpu(**module))
    return fail(llvm::toString(std::move(error)));
  endPhase("gpu loops");
  // Read here, where compiler::workspaceWords would lower again.
  int64_t workspaceWords = compiler::workspaceWordsOf(**module);
  std::string error;
  if (failed(lowerToNvvm(**module, target, error)))
    return fail(error.empty() ? diagnostics : error);
  endPhase("nvvm");
  FailureOr<PtxModule> ptx = serializeToPtx(**module, error);
  if (failed(ptx))
    return fail(error.empty() ? diagnostics : error);
  endPhase("ptx");

  GpuBuild build;
  build.ptx = std::move(ptx->ptx);
  build.kernelNames = std::move(ptx->kernelNames);
  build.plan = describeGpuLaunches(**module);
  build.workspaceWords = workspaceWords;
  endPhase("plan");
  linkerWait.built = true;
  return build;
}

} // namespace lowbit::jit
