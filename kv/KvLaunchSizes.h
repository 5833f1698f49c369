//===- KvLaunchSizes.h - KV kernels' launch sizes for given buffers -------===//
//
// The KV kernels (docs/kv-kernels.md) take 4-D memrefs, and the launch
// module's shapes are [rows, cols] pairs, so a launch-plan size of a KV
// kernel is evaluated after each `dim:P:D` in it is replaced by size D of
// buffer P. MLIR-free: the emulator tests and `lowbit report` share it.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_KV_KVLAUNCHSIZES_H
#define LOWBIT_KV_KVLAUNCHSIZES_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lowbit::kv {

/// `expression` (space-separated postfix tokens) with each `dim:P:D`
/// replaced by shapes[P][D]; nullopt and `error` when a dim names a buffer
/// or dimension that does not exist.
std::optional<std::string>
substituteKvLaunchDims(std::string_view expression,
                       const std::vector<std::vector<int64_t>> &shapes,
                       std::string *error);

} // namespace lowbit::kv

#endif // LOWBIT_KV_KVLAUNCHSIZES_H
