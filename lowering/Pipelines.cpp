//===- Pipelines.cpp - lowbit's registered pass pipelines -----------------===//

#include "lowering/Pipelines.h"

#include "lowering/CpuTail.h"
#include "lowering/GpuTail.h"
#include "lowering/Passes.h"
#include "target/Target.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

namespace lowbit {

namespace {

/// Every kernel family's loop lowering; each leaves the others' ops alone.
void addLoopLowerings(OpPassManager &pm) {
  pm.addPass(createLowbitKvToLoops());
  pm.addPass(createLowbitKiviToLoops());
  pm.addPass(createLowbitAttentionToLoops());
  pm.addPass(createLowbitToLoops());
}

} // namespace

void buildLowbitToLoopsForGpuPipeline(OpPassManager &pm) {
  pm.addPass(createLowbitFlattenLeadingDims());
  pm.addPass(createLowbitToGpu());
  addLoopLowerings(pm);
}

void buildLowbitToLoopsForCpuPipeline(OpPassManager &pm) {
  pm.addPass(createLowbitFlattenLeadingDims());
  // Before lowbit-fusion-to-loops, which lowers the fused prologue kernel
  // it adds for X, and lowbit-to-loops, which lowers the weights'
  // dequantize.
  pm.addPass(createLowbitMatmulToLoops());
  pm.addPass(createLowbitFusionToLoops());
  addLoopLowerings(pm);
}

namespace {

struct GpuPipelineOptions : public PassPipelineOptions<GpuPipelineOptions> {
  Option<std::string> target{
      *this, "target",
      llvm::cl::desc("NVIDIA target, as the CLI spells it: sm_90a, "
                     "sm_89+ptx81, ..."),
      llvm::cl::init("sm_90a")};
};

/// The target the option names. A name parseTarget refuses goes to
/// lowbit-native-cvt as the chip, which fails the pipeline with the
/// table's message before any pass that could abort on it.
Target targetOf(const GpuPipelineOptions &options) {
  if (std::optional<Target> parsed = parseTarget(options.target, nullptr);
      parsed && parsed->isNvidia())
    return *parsed;
  return Target{Target::Kind::Nvidia, options.target, 0};
}

} // namespace

void registerLoweringPipelines() {
  PassPipelineRegistration<> toLoopsForGpu(
      "lowbit-to-loops-for-gpu",
      "lowbit dialect -> gpu.launch and scf loops (the GPU tail's input)",
      buildLowbitToLoopsForGpuPipeline);
  PassPipelineRegistration<GpuPipelineOptions> gpuTail(
      "lowbit-gpu-tail", "scf loops -> NVVM for one NVIDIA target",
      [](OpPassManager &pm, const GpuPipelineOptions &options) {
        buildGpuTailPipeline(pm, targetOf(options));
      });
  PassPipelineRegistration<GpuPipelineOptions> toNvvm(
      "lowbit-to-nvvm", "lowbit dialect -> NVVM for one NVIDIA target",
      [](OpPassManager &pm, const GpuPipelineOptions &options) {
        buildLowbitToLoopsForGpuPipeline(pm);
        buildGpuTailPipeline(pm, targetOf(options));
      });
  PassPipelineRegistration<> toLoopsForCpu(
      "lowbit-to-loops-for-cpu", "lowbit dialect -> scf loops (CPU tail input)",
      buildLowbitToLoopsForCpuPipeline);
  PassPipelineRegistration<> cpuTail("lowbit-cpu-tail",
                                     "scf loops -> LLVM dialect (host CPU)",
                                     buildCpuTailPipeline);
  PassPipelineRegistration<> toLlvm("lowbit-to-llvm",
                                    "lowbit dialect -> LLVM dialect (host CPU)",
                                    [](OpPassManager &pm) {
                                      buildLowbitToLoopsForCpuPipeline(pm);
                                      buildCpuTailPipeline(pm);
                                    });
}

} // namespace lowbit
