//===- Pipelines.h - lowbit's registered pass pipelines ---------*- C++ -*-===//
//
// The lowering as named pass pipelines, so that lowbit-opt runs what the
// compiler runs (docs/pipeline.md, "The pass pipelines"):
//
//   lowbit-to-loops-for-gpu  lowbit dialect -> gpu.launch + scf loops
//   lowbit-gpu-tail          loops -> NVVM (lowering/GpuTail.h)
//   lowbit-to-nvvm           the two above: lowbit dialect -> NVVM
//   lowbit-to-loops-for-cpu  lowbit dialect -> scf loops
//   lowbit-cpu-tail          loops -> LLVM dialect (lowering/CpuTail.h)
//   lowbit-to-llvm           the two above: lowbit dialect -> LLVM (CPU)
//
// The GPU pipelines take the target as an option, in the CLI's spelling:
// -lowbit-to-nvvm=target=sm_89+ptx81. PTX itself (LLVM IR, LLVM's
// optimizer, NVPTX codegen) is serializeToPtx's, outside the pass pipeline.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_PIPELINES_H
#define LOWBIT_LOWERING_PIPELINES_H

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace lowbit {

/// lowbit dialect -> the loops level the GPU tail takes: N-D ops made 2-D,
/// lowbit-to-gpu's bandwidth-shaped launches for the ops it covers, then
/// the loop lowerings of every kernel family for the rest.
void buildLowbitToLoopsForGpuPipeline(mlir::OpPassManager &pm);

/// lowbit dialect -> loops for the CPU tail: N-D ops made 2-D, fused
/// prologues inlined and bufferized, then the loop lowerings of every
/// kernel family.
void buildLowbitToLoopsForCpuPipeline(mlir::OpPassManager &pm);

/// Registers the pipelines above (lowbit-opt).
void registerLoweringPipelines();

} // namespace lowbit

#endif // LOWBIT_LOWERING_PIPELINES_H
