//===- GpuTail.h - Loops-level module -> PTX, in process --------*- C++ -*-===//
//
// The only part of lowbit that knows NVIDIA (with NativeConversionTable and
// Target): takes the module lowbit-to-loops produced (functions over memrefs
// whose work is in scf.parallel nests with lowbit.encode/decode inside) and
// returns PTX for one target.
//
//   validateTarget -> lowbit-native-cvt -> lowbit-expand-codecs
//   -> reductions to init + atomic kernels; host stores to 1-thread loops
//   -> tile each scf.parallel (innermost dimension by kThreadsPerBlock)
//   -> math.absf/copysign/roundeven to bit arithmetic (no libdevice)
//   -> gpu-map-parallel-loops -> convert-parallel-loops-to-gpu
//   -> sink host-side loads and arithmetic into the gpu.launch that uses them
//   -> gpu-kernel-outlining -> one gpu.module for all kernels
//   -> nvvm-attach-target{chip, +ptxNN, O=PtxOptions::optLevel}
//   -> (in gpu.module) lower-affine, convert-scf-to-cf, convert-math-to-llvm,
//      convert-gpu-to-nvvm, reconcile-unrealized-casts
//   -> LLVM IR -> LLVM's optimizer at optLevel -> NVPTX codegen -> PTX
//      (gpu-module-to-binary's serializer, minus libdevice when nothing
//      calls it; the gpu.module stays in place).
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

#include "lowering/Target.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace lowbit {

/// Threads per block along the innermost parallel dimension.
constexpr int64_t kThreadsPerBlock = 128;

/// Registers the dialects, translations and external models the GPU tail
/// needs (NVVM target interface: without it gpu-module-to-binary crashes).
/// Call on the context's registry before parsing or building the module.
void registerGpuTailDependencies(mlir::DialectRegistry &registry);

/// LLVM's optimization levels of the GPU tail, chosen per module: the
/// cheapest level whose PTX is byte-identical to O3's. Kernels without loops
/// (every lowbit-to-gpu kernel) get O2: O3's extra work (mostly more
/// aggressive unrolling) finds nothing to do there. Kernels with loops (the
/// generic mapping's per-thread loops, e.g. the per-tensor amax) get O3,
/// whose unrolling changes their PTX. tests/gpu/OptLevelTest.cpp checks
/// every named scheme's kernels on sm_90a and sm_100a against O3;
/// docs/pipeline.md has the measurement (O1 changes both kinds).
constexpr int kLoopFreePtxOptLevel = 2;
constexpr int kLoopPtxOptLevel = 3;

struct PtxOptions {
  /// LLVM's -O level for the kernels (0..3), the #nvvm.target's O;
  /// std::nullopt chooses as above.
  std::optional<int> optLevel;
};

struct PtxModule {
  std::string ptx;
  /// The kernels in `ptx`, in launch order (gpu.launch_func order).
  std::vector<std::string> kernelNames;
  /// The LLVM level the kernels were optimized at.
  int optLevel = kLoopPtxOptLevel;
};

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
