//===- LaunchPlan.h - How to launch a spec's GPU kernels ---------*- C++ -*-===//
//
// lowerToPtx leaves the host function holding the gpu.launch_func ops, in
// launch order, with grid/block sizes computed from the memref sizes
// (memref.dim of the kernel's parameters) and the kernel operands. The JIT
// records that as a LaunchPlan, a small text form stored next to the
// PTX/cubin in the cache, and evaluates it on every launch: no MLIR on the
// launch path.
//
// Text form, one launch per line:
//   launch NAME|GRIDX|GRIDY|GRIDZ|BLOCKX|BLOCKY|BLOCKZ|SHARED|ARG...
// where each size is a postfix expression of space-separated tokens
// (an integer, `dim:P:D` = size D of ABI parameter P, or an operator:
// add sub mul divs divu ceildivs ceildivu floordivs rems remu maxs mins
// maxu minu, `cmp:N` with arith.cmpi predicate N, `sel`), and each ARG is
// `m:P` (ABI parameter P as an expanded memref descriptor, 7 x 64 bits) or
// `sW:EXPR` (a W-bit integer scalar).
//
// A host function the JIT cannot describe this way gives a plan that is
// `unsupported: REASON`; launch() then returns that reason (Unsupported).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_JIT_LAUNCHPLAN_H
#define LOWBIT_RUNTIME_JIT_LAUNCHPLAN_H

#include "lowbit/Expected.h"
#include "lowering/Target.h"
#include "runtime/spec/KernelSpec.h"

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mlir {
class ModuleOp;
} // namespace mlir

namespace lowbit::jit {

/// The sizes of the ABI parameters ([rows, cols] each), in order.
using ParamShapes = std::vector<std::array<int64_t, 2>>;

struct LaunchStep {
  std::string kernelName;
  /// grid x y z, block x y z, dynamic shared bytes.
  std::array<std::string, 7> sizes;
  std::vector<std::string> arguments;
};

struct LaunchPlan {
  std::vector<LaunchStep> steps;
  /// Non-empty: the plan could not be derived (why).
  std::string unsupported;

  std::string serialize() const;
  static Expected<LaunchPlan> parse(std::string_view text);
};

/// Evaluates a postfix size expression for the given parameter shapes.
Expected<int64_t> evaluateSize(std::string_view expression,
                               const ParamShapes &shapes);

/// One step evaluated for a call: grid x y z, block x y z, dynamic shared
/// bytes, and the kernel parameters packed as cuLaunchKernel reads them (a
/// memref is its expanded descriptor {allocated, aligned, offset, sizes[2],
/// strides[2]}; a 32-bit scalar is the low half of its slot). The CUDA
/// launch and the GPU emulator both use it.
struct ResolvedLaunch {
  std::array<int64_t, 7> sizes{};
  std::vector<uint64_t> values;
  /// An empty grid: nothing to launch.
  bool empty() const { return sizes[0] <= 0 || sizes[1] <= 0 || sizes[2] <= 0; }
};
Expected<ResolvedLaunch> resolveLaunch(const LaunchStep &step,
                                       const ParamShapes &shapes,
                                       std::span<const uint64_t> buffers);

/// The plan of a module after the GPU tail (lowerToNvvm or lowerToPtx):
/// lower-affine on its host function, then its gpu.launch_func ops. The JIT
/// and the GPU emulator both derive their plans here. MLIR inside.
LaunchPlan describeGpuLaunches(mlir::ModuleOp module);

/// PTX for `spec` on `target` plus its launch plan. MLIR inside.
struct GpuBuild {
  std::string ptx;
  std::vector<std::string> kernelNames;
  LaunchPlan plan;
};
Expected<GpuBuild> buildGpuKernel(const KernelSpec &spec, const Target &target);

} // namespace lowbit::jit

#endif // LOWBIT_RUNTIME_JIT_LAUNCHPLAN_H
