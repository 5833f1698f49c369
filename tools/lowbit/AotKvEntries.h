//===- AotKvEntries.h - lowbit aot: KV-cache and attention entries -*- C++
//-*-===//
//
// The bundle entries of the KV-cache kernels (kv_append, kv_dequantize of
// kv_int8_g<G> and kv_fp8_*; kivi_append, kivi_dequantize of
// kv_kivi_int4/int2; docs/kv-kernels.md) and of decode attention
// (kv_attend; docs/decode-attention.md), from the spec strings `lowbit
// report` and the compilers take. Each carries its launch plan (grids,
// blocks, shared memory, in launch order: attention's stage 1 then stage
// 2, the partials a written scratch parameter), ranked shapes for the KV
// kernels' 4-D buffers, and with --with-data deterministic inputs and the
// CPU tail's outputs (docs/aot.md, "KV and attention entries").
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TOOLS_LOWBIT_AOTKVENTRIES_H
#define LOWBIT_TOOLS_LOWBIT_AOTKVENTRIES_H

#include "kv/KvAttentionSpec.h"
#include "kv/KvKernelSpec.h"
#include "kv/KvKiviKernelSpec.h"
#include "runtime/jit/KvJitSpec.h"
#include "tools/lowbit/AotSupport.h"

#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace lowbit::cli {

/// A kv_append, kv_dequantize, kivi_append, kivi_dequantize or kv_attend
/// spec: lowbit::Jit's KV spec (kivi_attend has no bundle entry yet).
using KvAotSpec = jit::KvJitSpec;

/// Whether `text` is a KV or attention spec (its first word).
bool isKvAotSpecText(std::string_view text);

/// Parses and checks the spec; nullopt and the parser's message.
std::optional<KvAotSpec> parseKvAotSpec(std::string_view text,
                                        std::string &error);

/// Compiles `spec`, stages its images and (options.dataSize set) its data.
std::optional<aot::BundleEntry>
buildKvAotEntry(const KvAotSpec &spec, const AotOptions &options,
                std::set<std::string> &usedStems, runtime::StagedFiles &staged,
                std::string &error);

} // namespace lowbit::cli

#endif // LOWBIT_TOOLS_LOWBIT_AOTKVENTRIES_H
