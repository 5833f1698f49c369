//===- AotSupport.h - lowbit aot: what every entry kind shares --*- C++ -*-===//
//
// `lowbit aot` writes entries of three kinds (docs/aot.md): quantize /
// dequantize of a scheme (AotCommand.cpp), the KV-cache kernels and decode
// attention (AotKvEntries.cpp). They share the options, the check that each
// PTX entry takes exactly the parameters the manifest packs, and the staging
// of the PTX, the cubin (with ptxas's resource counts) and .npy files.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TOOLS_LOWBIT_AOTSUPPORT_H
#define LOWBIT_TOOLS_LOWBIT_AOTSUPPORT_H

#include "runtime/aot/Bundle.h"
#include "runtime/aot/LaunchProgram.h"
#include "runtime/core/AtomicFile.h"
#include "runtime/core/Npy.h"
#include "target/Target.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace lowbit::cli {

/// A BATCHxTOKENS size of the KV and attention entries.
struct KvAotSize {
  int64_t batch = 0, tokens = 0;
};

struct AotOptions {
  Target target;
  std::string outDirectory;
  bool cubin = true;
  /// --with-data: the scheme entries' ROWSxCOLS; the KV and attention
  /// entries get data at kvData / attentionData when it is set.
  std::optional<std::pair<int64_t, int64_t>> dataSize;
  /// The size the runner times the scheme kernels at: 8192 x 8192 f32 is
  /// 256 MiB of input, large enough that launch overhead and L2 (50 MiB on
  /// H200) do not count.
  int64_t benchRows = 8192, benchCols = 8192;
  /// KV append/dequantize data: 3 sequences of 40 new tokens (ragged
  /// positions). Attention data: 3 sequences, the longest 600 tokens (more
  /// than one split of 256, so stage 2 merges).
  KvAotSize kvData{3, 40}, attentionData{3, 600};
  /// The size the runner times the KV and attention kernels at.
  KvAotSize kvBench{1, 32768};
};

/// Kernel parameters per memref operand of a launch (7 for a rank-2
/// descriptor, 3 + 2N for rank N).
using MemrefSlots = std::function<size_t(int memref)>;

/// The PTX entry of `launch` has exactly the parameters its operands
/// expand to, of the right widths; else `error` says what differs.
bool checkPtxSignature(const std::string &ptx, const aot::Launch &launch,
                       const MemrefSlots &slotsOf, std::string &error);

/// The plan as manifest launches (aot::launchesFromPlan: refused when the
/// plan could not be derived), each checked against the PTX.
std::optional<std::vector<aot::Launch>>
checkedLaunchesFromPlan(const launch::LaunchPlan &plan, const std::string &ptx,
                        const MemrefSlots &slotsOf, std::string &error);

/// Sets `entry`'s key (xxh64 of spec text, target, lowbit version and PTX)
/// and name (`stem`, or `stem-<key8>` when the stem is taken or
/// `keyedStem`), stages the PTX and (unless --no-cubin) the cubin, whose
/// resource counts go into the launches. entry.spec and entry.launches must be
/// set.
bool stageKernelImages(aot::BundleEntry &entry, const std::string &stem,
                       bool keyedStem, const std::string &ptx,
                       const AotOptions &options,
                       std::set<std::string> &usedStems,
                       runtime::StagedFiles &staged, std::string &error);

/// The .npy dtype of a parameter's element: f32, f16, bf16 (as u16), i32,
/// and every byte type (codes) as u8.
npy::DType npyTypeFor(const std::string &element);

/// Stages `bytes` as DIR/file (.npy of `dtype`, `shape`).
bool stageNpy(const std::string &directory, const std::string &file,
              npy::DType dtype, std::vector<int64_t> shape,
              std::vector<uint8_t> bytes, runtime::StagedFiles &staged,
              std::string &error);

} // namespace lowbit::cli

#endif // LOWBIT_TOOLS_LOWBIT_AOTSUPPORT_H
