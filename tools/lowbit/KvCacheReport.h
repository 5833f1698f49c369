//===- KvCacheReport.h - lowbit report rows of the KV-cache kernels -------===//
//
// `lowbit report 'kv_append kv_int8_g64 from=bf16 heads=8 head_dim=128'`:
// the KV kernel spec's launch (lowering/GpuKvAppend.h) through the same
// analysis as every spec (runtime/report, docs/gpu-report.md), at batch 64
// for a decode step (1 new token per sequence) and a prefill chunk (256).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TOOLS_LOWBIT_KVCACHEREPORT_H
#define LOWBIT_TOOLS_LOWBIT_KVCACHEREPORT_H

#include "kv/KvKernelSpec.h"
#include "lowering/GpuTail.h"
#include "runtime/compiler/GpuCompile.h"
#include "runtime/driver/NvJitLink.h"
#include "runtime/jit/LaunchPlan.h"
#include "runtime/report/GpuReport.h"
#include "target/Target.h"

#include "llvm/Support/Error.h"

#include <array>

namespace lowbit::cli {

/// Sequences of a KV-cache report.
constexpr int64_t kKvCacheReportBatch = 64;
/// New tokens per sequence: a decode step and a prefill chunk.
constexpr std::array<int64_t, 2> kKvCacheReportTokens = {1, 256};

/// `spec`'s kernel at kKvCacheReportBatch sequences of `tokens` tokens
/// each. An element is one value (read by kv_append, written by
/// kv_dequantize); the minimum is every byte the op must move: the values,
/// the codes and int8 scales of the rows it touches, the static FP8
/// scales, the positions and the block-table entries of those rows, once.
/// The cubin a KV report row (cache or attention) reads registers and
/// spills from: the compile's PTX linked for `target`. Refused when the
/// compile failed or its plan has a launch it cannot describe.
Expected<runtime::Cubin>
linkKvReportPtx(llvm::Expected<compiler::GpuCompilation> &compiled,
                const Target &target);

Expected<report::SpecReport> reportKvCache(const kv::KvKernelSpec &spec,
                                           int64_t tokens, const Target &target,
                                           const report::ChipModel &chip);

/// One step of a KV-family launch plan at the ABI buffers' N-D `shapes`:
/// grid, block, and which buffer each .param slot points into; the grid
/// strides when it does not double with `doubled` (twice the batch).
Expected<report::KernelLaunch>
kvLaunch(const jit::LaunchStep &step,
         const std::vector<std::vector<int64_t>> &shapes,
         const std::vector<std::vector<int64_t>> &doubled);

} // namespace lowbit::cli

#endif // LOWBIT_TOOLS_LOWBIT_KVCACHEREPORT_H
