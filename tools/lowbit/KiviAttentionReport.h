//===- KiviAttentionReport.h - lowbit report rows of KIVI attention -------===//
//
// `lowbit report 'kivi_attend kv_kivi_int4 q=bf16 q_heads=32 kv_heads=8
// head_dim=128'`: the KIVI decode-attention kernels (docs/decode-attention.md,
// KIVI) through the same analysis as every spec (runtime/report), at the
// kv_attend row's shape: one sequence of 32768 tokens.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TOOLS_LOWBIT_KIVIATTENTIONREPORT_H
#define LOWBIT_TOOLS_LOWBIT_KIVIATTENTIONREPORT_H

#include "kv/KiviAttentionSpec.h"
#include "runtime/report/GpuReport.h"
#include "target/Target.h"

namespace lowbit::cli {

/// `spec`'s two launches (splits, merge) at batch 1 and `tokens` tokens,
/// all but the newest ones quantized (KIVI's prefix Q(T)). An element is
/// one K or V value; the minimum is every byte the computation must move:
/// both sides' codes, scales, zeros and rings, q, the lengths, the block
/// table, the output once and the partials written and read.
Expected<report::SpecReport>
reportKiviAttention(const kv::KiviAttentionSpec &spec, int64_t tokens,
                    const Target &target, const report::ChipModel &chip);

} // namespace lowbit::cli

#endif // LOWBIT_TOOLS_LOWBIT_KIVIATTENTIONREPORT_H
