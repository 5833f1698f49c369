//===- GpuTailWarmup.cpp - The GPU tail's one-time setup, beside a compile ===//

#include "lowering/GpuTailWarmup.h"

#include "lowering/GpuTail.h"

#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>

#include <pthread.h>

using namespace mlir;

namespace lowbit {
namespace {

/// The warm-up's state. Never destroyed: the thread may outlive main.
struct TailWarmup {
  std::mutex mutex;
  std::condition_variable finished;
  bool started = false;
  bool running = false;
  bool madePtx = false;

  static TailWarmup &get() {
    static TailWarmup *warmup = new TailWarmup();
    return *warmup;
  }
};

/// A kernel shaped like lowbit's (a guarded element per thread, a short
/// reduction loop, a division, float -> int with clamping, a byte store):
/// it goes through the same conversions and LLVM passes as theirs, so the
/// code it touches is the code a real compile runs next.
constexpr const char *kWarmupKernel = R"mlir(
module attributes {gpu.container_module} {
  gpu.module @lowbit_warmup {
    gpu.func @lowbit_warmup(%in: memref<?xf32>, %out: memref<?xi8>,
                            %n: index, %scale: f32) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %base = arith.muli %bid, %bdim : index
      %i = arith.addi %base, %tid : index
      %inside = arith.cmpi ult, %i, %n : index
      scf.if %inside {
        %zero = arith.constant 0.0 : f32
        %amax = scf.for %k = %c0 to %c4 step %c1 iter_args(%m = %zero) -> (f32) {
          %j = arith.addi %i, %k : index
          %y = memref.load %in[%j] : memref<?xf32>
          %bigger = arith.maximumf %m, %y : f32
          scf.yield %bigger : f32
        }
        %x = memref.load %in[%i] : memref<?xf32>
        %q = arith.divf %x, %amax : f32
        %s = arith.mulf %q, %scale : f32
        %r = arith.fptosi %s : f32 to i32
        %lo = arith.constant -128 : i32
        %hi = arith.constant 127 : i32
        %above = arith.maxsi %r, %lo : i32
        %clamped = arith.minsi %above, %hi : i32
        %b = arith.trunci %clamped : i32 to i8
        memref.store %b, %out[%i] : memref<?xi8>
      }
      gpu.return
    }
  }
}
)mlir";

/// The warm-up itself: parse, lower to NVVM as lowerToNvvm's last pass
/// pipeline does, serialize with serializeToPtx. True if PTX came out.
bool warmUpTail(const Target &target) {
  DialectRegistry registry;
  registerGpuTailDependencies(registry);
  MLIRContext context(registry, MLIRContext::Threading::DISABLED);
  // Its diagnostics are nobody's business: a failure only means no
  // warm-up.
  ScopedDiagnosticHandler quiet(&context,
                                [](Diagnostic &) { return success(); });
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(kWarmupKernel, &context);
  if (!module)
    return false;
  PassManager pm(&context);
  GpuNVVMAttachTargetOptions targetOptions;
  targetOptions.chip = target.chip;
  targetOptions.features = "+ptx" + std::to_string(target.ptxVersion);
  targetOptions.optLevel = kPtxOptLevel;
  pm.addPass(createGpuNVVMAttachTarget(targetOptions));
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createSCFToControlFlowPass());
  kernels.addPass(createConvertGpuOpsToNVVMOps());
  kernels.addPass(createReconcileUnrealizedCastsPass());
  if (failed(pm.run(*module)))
    return false;
  std::string error;
  FailureOr<PtxModule> ptx = serializeToPtx(*module, error);
  return succeeded(ptx) && !ptx->ptx.empty();
}

/// Off unless LOWBIT_TAIL_WARMUP is set to anything but 0: the warm-up is
/// a second compile, which pays only where a core is idle (docs/pipeline.md).
bool warmupEnabled() {
  const char *value = std::getenv("LOWBIT_TAIL_WARMUP");
  return value && *value && std::strcmp(value, "0") != 0;
}

} // namespace

void startGpuTailWarmup(const Target &target) {
  // Never codegen for a target LLVM would abort on.
  if (!warmupEnabled() || !target.isNvidia() ||
      !validateTarget(target, nullptr))
    return;
  TailWarmup &warmup = TailWarmup::get();
  {
    std::lock_guard<std::mutex> lock(warmup.mutex);
    if (warmup.started)
      return;
    warmup.started = true;
    warmup.running = true;
  }
  auto finish = [&warmup](bool madePtx) {
    std::lock_guard<std::mutex> lock(warmup.mutex);
    warmup.running = false;
    warmup.madePtx = madePtx;
    warmup.finished.notify_all();
  };
  // pthread_create, not std::thread: this library is built without
  // exceptions, and a failed std::thread would terminate the process.
  auto *job = new std::pair<Target, decltype(finish)>(target, finish);
  pthread_t thread;
  int created = pthread_create(
      &thread, nullptr,
      [](void *argument) -> void * {
        auto *job =
            static_cast<std::pair<Target, decltype(finish)> *>(argument);
        job->second(warmUpTail(job->first));
        delete job;
        return nullptr;
      },
      job);
  if (created != 0) {
    // No thread to be had: the compile pays the setup itself.
    delete job;
    finish(false);
    return;
  }
  pthread_detach(thread);
}

bool waitForGpuTailWarmup() {
  TailWarmup &warmup = TailWarmup::get();
  std::unique_lock<std::mutex> lock(warmup.mutex);
  warmup.finished.wait(lock, [&] { return !warmup.running; });
  return warmup.madePtx;
}

} // namespace lowbit
