//===- GpuTailWarmup.h - The GPU tail's one-time setup, beside a compile -===//
//
// The first compile of a process pays, on the thread that compiles, for
// what later compiles find done: the GPU, NVVM and LLVM dialects' first
// load, the first run of the NVVM conversions, LLVM's NVPTX target setup
// and the first touch of LLVM's optimizer and code generator (page faults,
// lazy symbol binding, static tables). startGpuTailWarmup runs that setup
// on a background thread, on a small kernel of its own, while the caller's
// compile builds its module and runs lowbit's passes (the first ~5-15 ms),
// so that its GPU tail finds the code warm, and an NVPTX TargetMachine for
// the chip in the pool (NvptxCodegen.h) that its serializer borrows
// instead of making one. It pays in wall time, which a
// caller waits for; in CPU time the warm-up is extra work (~10-20 ms on
// another core), which lowbit-bench-latency's process CPU clock counts.
// The compile waits for it before returning, never exit.
// docs/pipeline.md has the measurements.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_GPUTAILWARMUP_H
#define LOWBIT_LOWERING_GPUTAILWARMUP_H

#include "target/Target.h"

namespace lowbit {

/// Starts, once per process, a thread that lowers a small gpu.module to PTX
/// for `target` in a context of its own (the NVVM conversions and
/// serializeToPtx, as lowerToPtx's last steps do). Off by default: only
/// LOWBIT_TAIL_WARMUP=1 (any value but 0) starts it. Later calls and a
/// CPU or invalid target do nothing. The caller must
/// waitForGpuTailWarmup before it returns (GpuTailWarmupScope does): the
/// thread creates MLIR's and LLVM's function-local statics, whose
/// destructors exit would run under it, so it must never outlive the
/// compile that started it.
void startGpuTailWarmup(const Target &target);

/// Blocks until a started warm-up has finished. True if one ran and made
/// PTX; false if none was started or it failed (a failure costs nothing
/// but the warm-up: the compile that follows reports its own errors).
bool waitForGpuTailWarmup();

/// Starts the warm-up for a compile and waits for it when the compile
/// returns, on every path: by then it has long finished, unless the
/// compile failed early (then the wait is the rest of the warm-up, once
/// per process).
class GpuTailWarmupScope {
public:
  explicit GpuTailWarmupScope(const Target &target) {
    startGpuTailWarmup(target);
  }
  ~GpuTailWarmupScope() { (void)waitForGpuTailWarmup(); }
  GpuTailWarmupScope(const GpuTailWarmupScope &) = delete;
  GpuTailWarmupScope &operator=(const GpuTailWarmupScope &) = delete;
};

} // namespace lowbit

#endif // LOWBIT_LOWERING_GPUTAILWARMUP_H
