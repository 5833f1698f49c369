//===- LaunchPlan.h - How to launch a spec's GPU kernels ---------*- C++
//-*-===//
//
// The GPU tail leaves the host function holding the gpu.launch_func ops, in
// launch order, with grid/block sizes computed from the memref sizes
// (memref.dim of the kernel's parameters) and the kernel operands. The one
// GPU compile (runtime/compiler/GpuCompile.h) records that as a LaunchPlan,
// a small text form the JIT stores next to the PTX/cubin in the cache
// (and, in the same syntax, in AOT manifests).
//
// The text form, its compiled form and its evaluation live in the
// MLIR-free launch module (runtime/aot/LaunchProgram.h), which the JIT, the
// AOT runner and the GPU emulator share; this header adds the JIT's build
// and keeps the one-shot helpers the emulator and the report use.
//
// A host function the JIT cannot describe gives a plan that is
// `unsupported: REASON`; launch() then returns that reason (Unsupported).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_JIT_LAUNCHPLAN_H
#define LOWBIT_RUNTIME_JIT_LAUNCHPLAN_H

#include "lowbit/Expected.h"
#include "runtime/aot/LaunchProgram.h"
#include "runtime/spec/KernelSpec.h"
#include "target/Target.h"

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lowbit::compiler {
struct GpuCompilation;
} // namespace lowbit::compiler

namespace lowbit::jit {

/// The sizes of the ABI parameters ([rows, cols] each), in order.
using ParamShapes = std::vector<std::array<int64_t, 2>>;

using launch::LaunchPlan;
using launch::LaunchStep;

/// Compiles and evaluates one postfix size expression (launch module) for
/// the given parameter shapes. For one-off use (the report); launches use
/// a compiled launch::LaunchProgram.
Expected<int64_t> evaluateSize(std::string_view expression,
                               const ParamShapes &shapes);

/// One step evaluated for a call: grid x y z, block x y z, dynamic shared
/// bytes, and the kernel parameters packed as cuLaunchKernel reads them (a
/// memref is its expanded descriptor {allocated, aligned, offset, sizes[2],
/// strides[2]}; a 32-bit scalar is the low half of its slot; with
/// workspaceWords > 0, the workspace's [1, words] descriptor last). The
/// GPU emulator uses it.
struct ResolvedLaunch {
  std::array<int64_t, 7> sizes{};
  std::vector<uint64_t> values;
  /// An empty grid: nothing to launch.
  bool empty() const { return sizes[0] <= 0 || sizes[1] <= 0 || sizes[2] <= 0; }
};
Expected<ResolvedLaunch> resolveLaunch(const LaunchStep &step,
                                       const ParamShapes &shapes,
                                       std::span<const uint64_t> buffers,
                                       uint64_t workspace = 0,
                                       int64_t workspaceWords = 0);

/// PTX for `spec` on `target` plus its launch plan and workspace words:
/// the one GPU compile's result (runtime/compiler/GpuCompile.h, which its
/// users include: it needs MLIR, this header does not).
using GpuBuild = compiler::GpuCompilation;
/// Milliseconds of buildGpuKernel's phases, in order, for
/// lowbit-bench-latency --phases: "context" (borrowing a pooled context, or
/// making one), "module" (buildKernelModule), "gpu loops" (lowerForGpu),
/// "nvvm" (lowerToNvvm), "ptx" (serializeToPtx: LLVM IR, LLVM's optimizer,
/// NVPTX codegen), "plan" (describeGpuLaunches).
struct GpuBuildPhases {
  /// The clock, in milliseconds (wall, or the thread's CPU time).
  double (*now)() = nullptr;
  std::vector<std::pair<const char *, double>> millis;
};
/// `startLinker`: a cubin follows (unless LOWBIT_CUBIN=driver), so
/// nvJitLink's first use starts beside the lowering; false when only the
/// PTX is wanted (nvJitLink is then never loaded). `phases`, when given,
/// receives the phase times.
Expected<GpuBuild> buildGpuKernel(const KernelSpec &spec, const Target &target,
                                  bool startLinker = true,
                                  GpuBuildPhases *phases = nullptr);

} // namespace lowbit::jit

#endif // LOWBIT_RUNTIME_JIT_LAUNCHPLAN_H
