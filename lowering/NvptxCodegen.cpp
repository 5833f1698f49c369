//===- NvptxCodegen.cpp - LLVM IR -> PTX: pooled machines, lowbit's passes ===//

#include "lowering/NvptxCodegen.h"

#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/Error.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/Transforms/Scalar/LoopUnrollPass.h"

#include <map>
#include <mutex>
#include <vector>

namespace lowbit {

namespace {

/// At most this many idle machines per (chip, features): as many as
/// compiles ran at once, bounded (each holds a few hundred KB).
constexpr size_t kIdleMachinesPerKind = 4;

/// The name kPtxPassList gives O3's full unroller (registered below).
constexpr llvm::StringLiteral kFullUnrollAtO3 = "lowbit-loop-unroll-full-o3";

struct MachinePool {
  std::mutex mutex;
  std::map<std::string, std::vector<std::unique_ptr<llvm::TargetMachine>>> idle;

  /// Never destroyed: a lease still out at exit returns into it, and exit
  /// does not tear LLVM's machines down under a warm-up thread.
  static MachinePool &get() {
    static MachinePool *pool = new MachinePool;
    return *pool;
  }
};

} // namespace

// The passes of LLVM 22's `default<O3>` module pipeline (`opt -O3
// -print-pipeline-passes` for nvptx64, with O3's full unroller) left after
// removing, in O3's order, every pass whose removal kept the PTX of 119
// kernels byte-identical (the named kernels and the KV/attention modules
// on sm_90a and sm_100a; then checked on 193 with sm_80 and sm_89:
// docs/pipeline.md). Each pass left changed some kernel's PTX when tried.
const char *const kPtxPassList =
    "function<eager-inv>(early-cse<>),ipsccp,"
    "function<eager-inv>(instcombine<max-iterations=1;no-verify-fixpoint>),"
    "require<globals-aa>,"
    "cgscc(devirt<4>(function<eager-inv;no-rerun>(early-cse<memssa>,"
    "speculative-execution<only-if-divergent-target>,correlated-propagation,"
    "instcombine<max-iterations=1;no-verify-fixpoint>,"
    "simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;"
    "switch-range-to-icmp;no-switch-to-arithmetic;no-switch-to-lookup;"
    "keep-loops;no-hoist-common-insts;"
    "no-hoist-loads-stores-with-cond-faulting;no-sink-common-insts;"
    "speculate-blocks;simplify-cond-branch;no-speculate-unpredictables>,"
    "reassociate,loop-mssa(licm<no-allowspeculation>,"
    "loop-rotate<header-duplication;no-prepare-for-lto>,"
    "licm<allowspeculation>),"
    "instcombine<max-iterations=1;no-verify-fixpoint>,loop(indvars,"
    "loop-deletion,lowbit-loop-unroll-full-o3),vector-combine,gvn<>,"
    "correlated-propagation))),"
    "function<eager-inv>(loop-vectorize<no-interleave-forced-only;"
    "no-vectorize-forced-only;>,"
    "instcombine<max-iterations=1;no-verify-fixpoint>,"
    "simplifycfg<bonus-inst-threshold=1;forward-switch-cond;"
    "switch-range-to-icmp;switch-to-arithmetic;switch-to-lookup;"
    "no-keep-loops;hoist-common-insts;"
    "no-hoist-loads-stores-with-cond-faulting;sink-common-insts;"
    "speculate-blocks;simplify-cond-branch;no-speculate-unpredictables>,"
    "slp-vectorizer,loop-unroll<O3>,infer-alignment,"
    "instcombine<max-iterations=1;no-verify-fixpoint>,"
    "loop-mssa(licm<allowspeculation>),div-rem-pairs)";

NvptxMachineLease::NvptxMachineLease(
    std::string key, std::unique_ptr<llvm::TargetMachine> machine)
    : key(std::move(key)), machine(std::move(machine)) {}

NvptxMachineLease::NvptxMachineLease(NvptxMachineLease &&other) noexcept
    : key(std::move(other.key)), machine(std::move(other.machine)) {}

NvptxMachineLease::~NvptxMachineLease() {
  if (!machine)
    return;
  MachinePool &pool = MachinePool::get();
  std::lock_guard<std::mutex> lock(pool.mutex);
  auto &idle = pool.idle[key];
  if (idle.size() < kIdleMachinesPerKind)
    idle.push_back(std::move(machine));
}

std::optional<NvptxMachineLease> borrowNvptxMachine(llvm::StringRef chip,
                                                    llvm::StringRef features,
                                                    std::string &error) {
  std::string key = (chip + "|" + features).str();
  MachinePool &pool = MachinePool::get();
  {
    std::lock_guard<std::mutex> lock(pool.mutex);
    auto found = pool.idle.find(key);
    if (found != pool.idle.end() && !found->second.empty()) {
      std::unique_ptr<llvm::TargetMachine> machine =
          std::move(found->second.back());
      found->second.pop_back();
      return NvptxMachineLease(std::move(key), std::move(machine));
    }
  }
  // The machine gpu-module-to-binary makes (ModuleToObject::
  // getOrCreateTargetMachine), at kPtxCodegenLevel where its O=3 sets O3's.
  llvm::Triple triple("nvptx64-nvidia-cuda");
  std::string lookupError;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, lookupError);
  if (!target) {
    error = "no LLVM NVPTX target: " + lookupError;
    return std::nullopt;
  }
  std::unique_ptr<llvm::TargetMachine> machine(
      target->createTargetMachine(triple, chip, features, {}, {}));
  if (!machine) {
    error = "LLVM made no NVPTX target machine for " + chip.str();
    return std::nullopt;
  }
  machine->setOptLevel(static_cast<llvm::CodeGenOptLevel>(kPtxCodegenLevel));
  return NvptxMachineLease(std::move(key), std::move(machine));
}

size_t idleNvptxMachines() {
  MachinePool &pool = MachinePool::get();
  std::lock_guard<std::mutex> lock(pool.mutex);
  size_t count = 0;
  for (auto &[key, machines] : pool.idle)
    count += machines.size();
  return count;
}

bool optimizeForPtx(llvm::Module &module, llvm::TargetMachine &machine,
                    std::string &error) {
  llvm::LoopAnalysisManager loopAnalyses;
  llvm::FunctionAnalysisManager functionAnalyses;
  llvm::CGSCCAnalysisManager sccAnalyses;
  llvm::ModuleAnalysisManager moduleAnalyses;
  // gpu-module-to-binary's tuning (makeOptimizingTransformer).
  llvm::PipelineTuningOptions tuning;
  tuning.LoopUnrolling = true;
  tuning.LoopInterleaving = true;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::PassBuilder builder(&machine, tuning);
  builder.registerModuleAnalyses(moduleAnalyses);
  builder.registerCGSCCAnalyses(sccAnalyses);
  builder.registerFunctionAnalyses(functionAnalyses);
  builder.registerLoopAnalyses(loopAnalyses);
  builder.crossRegisterProxies(loopAnalyses, functionAnalyses, sccAnalyses,
                               moduleAnalyses);
  // O3's full unroller has O3's threshold; the textual `loop-unroll-full`
  // is always O2's (LoopFullUnrollPass()), which unrolls less and changes
  // the PTX of some KV kernels.
  builder.registerPipelineParsingCallback(
      [](llvm::StringRef name, llvm::LoopPassManager &loopPasses,
         llvm::ArrayRef<llvm::PassBuilder::PipelineElement>) {
        if (name != kFullUnrollAtO3)
          return false;
        loopPasses.addPass(llvm::LoopFullUnrollPass(
            /*OptLevel=*/3, /*OnlyWhenForced=*/false,
            /*ForgetSCEV=*/false));
        return true;
      });
  llvm::ModulePassManager passes;
  if (llvm::Error parseError =
          builder.parsePassPipeline(passes, kPtxPassList)) {
    error = "LLVM rejected lowbit's pass list: " +
            llvm::toString(std::move(parseError));
    return false;
  }
  passes.run(module, moduleAnalyses);
  return true;
}

} // namespace lowbit
