//===- GpuTail.h - Loops-level module -> PTX, in process --------*- C++ -*-===//
//
// The only part of lowbit that knows NVIDIA (with NativeConversionTable and
// Target): takes the module lowbit-to-loops produced (functions over memrefs
// whose work is in scf.parallel nests with lowbit.encode/decode inside) and
// returns PTX for one target. buildGpuTailPipeline is its pass pipeline
// (registered as lowbit-gpu-tail, lowering/Pipelines.h):
//
//   lowbit-native-cvt{chip, ptx} -> lowbit-expand-codecs
//   -> lowbit-gpu-reductions-to-atomics -> lowbit-gpu-wrap-host-stores
//   -> lowbit-gpu-tile-for-threads (innermost dimension by kThreadsPerBlock)
//   -> lowbit-gpu-expand-libdevice-math (absf/copysign/roundeven to bits)
//   -> gpu-map-parallel-loops -> convert-parallel-loops-to-gpu
//   -> lowbit-gpu-sink-host-glue -> lowbit-gpu-check-no-host-memory
//   -> lowbit-gpu-outline-kernels (gpu-kernel-outlining; nvvm.minctasm)
//   -> lowbit-gpu-merge-modules
//   -> nvvm-attach-target{chip, +ptxNN, O=3 or PtxOptions::optLevel}
//   -> (in gpu.module) lower-affine, convert-scf-to-cf, convert-math-to-llvm,
//      convert-gpu-to-nvvm, reconcile-unrealized-casts
//   -> lowbit-gpu-relax-atomics
// then, outside the pass pipeline (serializeToPtx):
//   LLVM IR -> lowbit's LLVM pass list (O3's PTX; NvptxCodegen.h) on a
//   pooled NVPTX TargetMachine -> NVPTX codegen -> PTX (gpu-module-to-
//   binary's serializer, minus libdevice when nothing calls it; the
//   gpu.module stays in place).
// docs/gpu.md has the details and what is not done yet.
//
// Errors are values: the target is validated before any codegen (LLVM
// aborts the process on a PTX version too old for the chip, or on an
// instruction the chip lacks), and IR the tail cannot map yet (memory
// accesses that would stay on the host) is refused with a message instead
// of producing wrong code.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_GPUTAIL_H
#define LOWBIT_LOWERING_GPUTAIL_H

#include "target/Target.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir {
class DialectRegistry;
class OpPassManager;
} // namespace mlir

namespace lowbit {

/// Threads per block along the innermost parallel dimension.
constexpr int64_t kThreadsPerBlock = 128;

/// Registers the dialects, translations and external models the GPU tail
/// needs (NVVM target interface: without it gpu-module-to-binary crashes).
/// Call on the context's registry before parsing or building the module.
void registerGpuTailDependencies(mlir::DialectRegistry &registry);

/// The LLVM level whose PTX the GPU tail gives by default: O3's middle end.
/// It does not run O3's whole pipeline, but lowbit's pass list
/// (lowering/NvptxCodegen.h, kPtxPassList: the passes of O3's pipeline that
/// change lowbit's PTX) on a pooled TargetMachine at kPtxCodegenLevel
/// (NvptxCodegen.h).
/// tests/gpu/OptLevelTest.cpp checks every named scheme's kernels, the
/// KV/attention kernels and the matmul kernels against O3's whole pipeline
/// with that codegen level, byte for byte; docs/pipeline.md has the
/// measurement.
constexpr int kPtxOptLevel = 3;

/// Set on a gpu.module whose serialization runs LLVM's stock pipeline at
/// its #nvvm.target's O (and a TargetMachine of its own), as
/// gpu-module-to-binary does: PtxOptions::optLevel asks for it. An integer
/// value is the codegen level to use instead of O's
/// (PtxOptions::codegenLevel).
constexpr const char *kStockPipelineAttr = "lowbit.stock_llvm_pipeline";

struct PtxOptions {
  /// std::nullopt: lowbit's pass list (O3's PTX, above). A level (0..3):
  /// LLVM's whole default pipeline at that -O level, as
  /// gpu-module-to-binary runs it (the reference lowbit's list is checked
  /// against, and the bench's --levels).
  std::optional<int> optLevel;
  /// With optLevel: codegen at this level (0..3) instead of optLevel's, so
  /// that lowbit's list can be compared with O3's pipeline at the codegen
  /// level lowbit uses (kPtxCodegenLevel). Ignored without optLevel.
  std::optional<int> codegenLevel;
};

struct PtxModule {
  std::string ptx;
  /// The kernels in `ptx`, in launch order (gpu.launch_func order).
  std::vector<std::string> kernelNames;
  /// The LLVM level whose PTX `ptx` is (kPtxOptLevel for lowbit's list).
  int optLevel = kPtxOptLevel;
};

/// Adds the GPU tail's passes, loops level to NVVM (the list above), for an
/// NVIDIA `target` to `pm` (on builtin.module). lowerToNvvm validates the
/// target and runs them; lowbit-opt runs them as -lowbit-gpu-tail.
void buildGpuTailPipeline(mlir::OpPassManager &pm, const Target &target,
                          const PtxOptions &options = {});

/// Lowers `module` (modified in place) up to, not including, serialization:
/// afterwards its gpu.module holds the kernels as LLVM dialect with NVVM ops
/// (thread ids, barriers, shuffles, atomics, native cvt), and the host
/// functions hold the gpu.launch_func ops in launch order. This is the
/// module the GPU emulator executes and lowerToPtx serializes. Same error
/// rules as lowerToPtx.
mlir::LogicalResult lowerToNvvm(mlir::ModuleOp module, const Target &target,
                                std::string &error,
                                const PtxOptions &options = {});

/// Lowers `module` (modified in place) to PTX for `target`, which must be an
/// NVIDIA target. On failure returns failure() and a message in `error`;
/// never aborts for a bad target. The context must have
/// registerGpuTailDependencies' registry appended.
mlir::FailureOr<PtxModule> lowerToPtx(mlir::ModuleOp module,
                                      const Target &target, std::string &error,
                                      const PtxOptions &options = {});

/// The second half of lowerToPtx: serializes the gpu.module lowerToNvvm
/// left (LLVM IR translation, LLVM's optimizer at the #nvvm.target's O,
/// NVPTX codegen) to PTX. Separate so that the phases can be timed
/// (lowbit-bench-latency --phases).
mlir::FailureOr<PtxModule> serializeToPtx(mlir::ModuleOp module,
                                          std::string &error);

} // namespace lowbit

#endif // LOWBIT_LOWERING_GPUTAIL_H
