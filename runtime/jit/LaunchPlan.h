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
#include <string>
#include <string_view>
#include <vector>

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

/// PTX for `spec` on `target` plus its launch plan. MLIR inside.
struct GpuBuild {
  std::string ptx;
  std::vector<std::string> kernelNames;
  LaunchPlan plan;
};
Expected<GpuBuild> buildGpuKernel(const KernelSpec &spec, const Target &target);

} // namespace lowbit::jit

#endif // LOWBIT_RUNTIME_JIT_LAUNCHPLAN_H
