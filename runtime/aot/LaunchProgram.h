//===- LaunchProgram.h - GPU launch sizes and operands, MLIR-free -*- C++
//-*-===//
//
// The one launch-expression module of lowbit. The GPU tail leaves a host
// function whose gpu.launch_func ops compute each kernel's grid, block and
// scalar operands from the memref parameters' sizes. That arithmetic is
// recorded as text (a LaunchPlan: one LaunchStep per kernel, in launch
// order) by runtime/jit (describeGpuLaunches); the JIT's cache payload and
// the AOT bundle's manifest both store that text, and both load it here:
//
//   LaunchPlan (text) --compileLaunchPlan (once: get(), manifest read)-->
//   LaunchProgram --resolveStep (per launch: no allocation, no parsing)-->
//   grid/block/shared + cuLaunchKernel's parameter array
//
// Expression syntax (postfix, space-separated tokens; integers are i64):
//   an integer | dim:P:D (size D of parameter P) | add sub mul divs divu
//   ceildivs ceildivu floordivs rems remu maxs mins maxu minu (pop 2, push
//   1) | cmp:N (arith.cmpi predicate N: eq ne slt sle sgt sge ult ule ugt
//   uge) | sel (pop c a b, push c ? a : b)
// Step text, one line per launch:
//   launch NAME|GRIDX|GRIDY|GRIDZ|BLOCKX|BLOCKY|BLOCKZ|SHARED|ARG...
// where ARG is `m:P` (parameter P as MLIR's expanded rank-2 memref
// descriptor, 7 x 64-bit kernel parameters) or `sW:EXPR` (a W-bit scalar,
// W = 32 or 64, passed in an 8-byte slot whose low bytes the driver reads).
//
// Workspace (docs/runtime.md): a kernel that needs WORDS > 0 words of
// scratch gets one extra trailing kernel parameter on every launch, the
// descriptor of a [1, WORDS] i32 row-major buffer that the caller owns per
// stream (zero before the first launch, left zero by the kernels).
//
// Plain C++20 (lowbit/Expected.h only): the AOT runner compiles it with a
// plain compiler on a machine without MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_AOT_LAUNCHPROGRAM_H
#define LOWBIT_RUNTIME_AOT_LAUNCHPROGRAM_H

#include "lowbit/Expected.h"

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lowbit::launch {

/// A parameter's [rows, cols].
using Shape = std::array<int64_t, 2>;

/// One kernel launch as text (see the file comment).
struct LaunchStep {
  std::string kernelName;
  /// grid x y z, block x y z, dynamic shared bytes.
  std::array<std::string, 7> sizes;
  std::vector<std::string> arguments;
};

/// A host function's launches, in order.
struct LaunchPlan {
  std::vector<LaunchStep> steps;
  /// Non-empty: the plan could not be derived (why).
  std::string unsupported;

  std::string serialize() const;
  static Expected<LaunchPlan> parse(std::string_view text);
};

/// A compiled expression: the postfix tokens as opcodes, checked once
/// (every dim names an existing parameter, the stack never underflows and
/// ends with one value), so evaluation cannot fail except on arithmetic
/// (division by zero, INT64_MIN / -1).
class Expression {
public:
  static Expected<Expression> compile(std::string_view text, size_t paramCount);
  Expected<int64_t> evaluate(std::span<const Shape> shapes) const;
  /// The text it was compiled from.
  const std::string &text() const { return source; }

  enum class Op : uint8_t;
  struct Instruction {
    Op op;
    int64_t operand;
  };

private:
  std::vector<Instruction> code;
  size_t maxDepth = 0;
  std::string source;
};

/// One argument of a step: a memref parameter or a scalar.
struct Argument {
  /// Workspace: `m:P` with P == the ABI's parameter count, the kernel
  /// function's trailing workspace (docs/kernel-abi.md), bound per launch
  /// to the stream's buffer.
  enum class Kind : uint8_t { Memref, Scalar32, Scalar64, Workspace };
  Kind kind = Kind::Memref;
  size_t param = 0; ///< Memref
  Expression value; ///< Scalar32/64
};

/// The kernel parameters one launch can pass (cuLaunchKernel's array).
inline constexpr size_t kMaxLaunchSlots = 256;

struct CompiledStep {
  std::string kernelName;
  std::array<Expression, 7> sizes;
  std::vector<Argument> arguments;
  /// Kernel parameters, the workspace descriptor included.
  size_t slotCount = 0;
};

/// A plan compiled for `paramCount` ABI parameters and a workspace of
/// `workspaceWords` i32 words (0: none).
struct LaunchProgram {
  std::vector<CompiledStep> steps;
  size_t paramCount = 0;
  int64_t workspaceWords = 0;
};

/// Compiles and checks the whole plan: Unsupported for an `unsupported`
/// plan, InvalidArgument (naming the step and the expression) for text
/// that does not compile.
Expected<LaunchProgram> compileLaunchPlan(const LaunchPlan &plan,
                                          size_t paramCount,
                                          int64_t workspaceWords);
Expected<CompiledStep> compileStep(const LaunchStep &step, size_t paramCount,
                                   int64_t workspaceWords);

/// One launch for one call: sizes and cuLaunchKernel's parameter array.
/// Fixed storage, so resolving allocates nothing. Not copyable once
/// resolved (pointers point into slots); resolve into the object you launch
/// from.
struct ResolvedStep {
  /// grid x y z, block x y z, dynamic shared bytes.
  std::array<int64_t, 7> sizes{};
  std::array<uint64_t, kMaxLaunchSlots> slots{};
  std::array<void *, kMaxLaunchSlots> pointers{};
  size_t slotCount = 0;
  /// An empty grid: nothing to launch (an empty tensor).
  bool empty() const { return sizes[0] <= 0 || sizes[1] <= 0 || sizes[2] <= 0; }
};

/// Why seven launch sizes (grid x3, block x3, dynamic shared bytes)
/// cannot be launched, or "" when they can: grid and shared bytes in
/// [0, 2^31 - 1], block in [1, 1024]. The one bounds check of resolveStep
/// (for a grid that is not empty) and of aot::RankedLaunch::resolve.
std::string launchSizesProblem(const std::string &kernel,
                               std::span<const int64_t, 7> sizes);

/// Writes MLIR's expanded descriptor of a compact row-major memref of
/// `dims` at `address` (allocated and aligned pointers, offset 0, sizes,
/// strides: 3 + 2 * rank slots) into `slots` from `slot`, and returns the
/// slot after it. The one packing of resolveStep and
/// aot::RankedLaunch::resolve; the caller has checked the slot count.
size_t packRowMajorDescriptor(uint64_t address, std::span<const int64_t> dims,
                              std::span<uint64_t> slots, size_t slot);

/// Evaluates `step` for parameter shapes `shapes` and device addresses
/// `addresses` (one per ABI parameter); `workspace` is the address of the
/// stream's workspace (used when the step was compiled with words > 0).
/// Checks that the launch sizes are launchable: grid in [0, 2^31 - 1] (0:
/// empty), block in [1, 1024], shared in [0, 2^31 - 1].
Status resolveStep(const CompiledStep &step, std::span<const Shape> shapes,
                   std::span<const uint64_t> addresses, uint64_t workspace,
                   int64_t workspaceWords, ResolvedStep &out);

} // namespace lowbit::launch

#endif // LOWBIT_RUNTIME_AOT_LAUNCHPROGRAM_H
