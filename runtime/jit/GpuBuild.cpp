//===- GpuBuild.cpp - Spec -> PTX and the launch plan ---------------------===//
//
// The JIT's GPU build: compiler::compileModuleForGpu (the one GPU compile,
// runtime/compiler/GpuCompile.h) in a context borrowed from the compiler's
// pool, with nvJitLink's first-use setup started on a background thread
// while the lowering runs, and the phases timed for the latency bench.
//
//===----------------------------------------------------------------------===//

#include "runtime/jit/LaunchPlan.h"

#include "lowering/GpuTailWarmup.h"
#include "runtime/compiler/Compiler.h"
#include "runtime/compiler/GpuCompile.h"
#include "runtime/driver/NvJitLink.h"

#include "mlir/IR/MLIRContext.h"

namespace lowbit::jit {

using namespace mlir;

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
  auto module = compiler::buildKernelModule(*context, spec);
  if (!module)
    return fail(llvm::toString(module.takeError()));
  endPhase("module");
  compiler::GpuCompileOptions options;
  options.observe = [&](compiler::GpuStage stage, ModuleOp) {
    static constexpr const char *kPhaseNames[] = {"gpu loops", "nvvm", "ptx",
                                                  "plan"};
    endPhase(kPhaseNames[int(stage)]);
    return llvm::Error::success();
  };
  llvm::Expected<compiler::GpuCompilation> build =
      compiler::compileModuleForGpu(**module, compiler::lowerForGpu, target,
                                    options);
  if (!build)
    return fail(llvm::toString(build.takeError()));
  linkerWait.built = true;
  return std::move(*build);
}

} // namespace lowbit::jit
