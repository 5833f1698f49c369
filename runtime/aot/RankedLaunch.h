//===- RankedLaunch.h - A bundle launch over ranked buffers, compiled -*- C++
//-*-===//
//
// The KV kernels' launches (Jit::getKv's KvKernel::launch) take buffers of
// rank 1 to 8: each `dim:P:D` of a launch expression is size D of
// parameter P's full shape, and each memref operand is its rank-N
// descriptor {allocated, aligned, offset, sizes[N], strides[N]}. A
// RankedLaunch is one such launch compiled once for the parameters' ranks:
// every dim checked and its expressions compiled, the kernel parameter
// count known, so that resolving it for a call parses nothing and
// allocates nothing. It is the one implementation of ranked sizes and
// descriptors: the JIT compiles one per KV kernel launch, the AOT runner
// and the manifest reader one per resolveLaunchFor (Bundle.h) call.
//
// How a ranked dim reaches the launch module's rank-2 evaluator: parameter
// P's dims are laid out as kPairsPerParam [rows, cols] pairs, so `dim:P:D`
// compiles as `dim:(P * 4 + D / 2):(D % 2)`.
//
// MLIR-free (plain C++20).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_AOT_RANKEDLAUNCH_H
#define LOWBIT_RUNTIME_AOT_RANKEDLAUNCH_H

#include "runtime/aot/Bundle.h"
#include "runtime/aot/LaunchProgram.h"
#include "target/WorkspaceRows.h"

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace lowbit::aot {

/// The largest rank of a ranked parameter (a manifest's `dims` too), and
/// the most parameters.
inline constexpr size_t kMaxRankedRank = kMaxRank;
inline constexpr size_t kMaxRankedParams = 32;

/// One parameter's shape for one call: its first `rank` sizes.
struct RankedShape {
  size_t rank = 0;
  std::array<int64_t, kMaxRankedRank> dims{};
};

class RankedLaunch {
public:
  /// Compiles `launch` for parameters of ranks `ranks` (at most
  /// kMaxRankedParams, each 1 to kMaxRankedRank) and a trailing workspace
  /// of `workspaceWords` words (0: none), plus `workspaceRows` per row of
  /// X (parameter 0, of rank 2) at each call (target/WorkspaceRows.h).
  /// CorruptEntry for an expression or operand that names no parameter's
  /// dimension or does not compile, for more kernel parameters than a
  /// launch passes, or for a growing workspace whose parameter 0 is not
  /// of rank 2.
  static Expected<RankedLaunch>
  compile(const Launch &launch, std::span<const size_t> ranks,
          int64_t workspaceWords, workspace_abi::RowWords workspaceRows = {});

  /// The workspace words a call with these shapes takes
  /// (workspace_abi::wordsFor of parameter 0's [rows, cols]; the fixed
  /// count when it does not grow); InvalidArgument when that is over
  /// kMaxWords.
  Expected<int64_t>
  workspaceWordsFor(std::span<const RankedShape> shapes) const;

  /// Sizes and cuLaunchKernel's parameter array for one call: `shapes`
  /// and `addresses` hold one entry per parameter, each shape of its
  /// compiled rank (the caller checked them); `workspace` holds at least
  /// workspaceWordsFor(shapes) words. InvalidArgument when the
  /// sizes are not launchable (grid in [0, 2^31 - 1], block in [1, 1024],
  /// shared in [0, 2^31 - 1]) or an expression fails (division by zero).
  /// Allocates only for an error's message.
  Status resolve(std::span<const RankedShape> shapes,
                 std::span<const uint64_t> addresses, uint64_t workspace,
                 launch::ResolvedStep &out) const;

  const std::string &entry() const { return name; }

private:
  enum class Kind : uint8_t { Memref, Scalar32, Scalar64, Workspace };
  struct Operand {
    Kind kind = Kind::Memref;
    size_t param = 0;
    launch::Expression value;
  };
  std::string name;
  std::array<launch::Expression, 7> sizes;
  std::vector<Operand> operands;
  std::vector<size_t> ranks;
  int64_t workspaceWords = 0;
  workspace_abi::RowWords workspaceRows = {};
  size_t slotCount = 0;
};

} // namespace lowbit::aot

#endif // LOWBIT_RUNTIME_AOT_RANKEDLAUNCH_H
