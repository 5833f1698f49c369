//===- AotKvData.h - lowbit aot: KV, KIVI and attention data ----*- C++ -*-===//
//
// The sizes, index buffers, inputs and expected outputs of the KV-cache,
// KIVI and decode-attention bundle entries (docs/aot.md, "KV and
// attention entries"), shared by AotKvEntries.cpp (the entries and their
// bench sizes), AotKvData.cpp (KV and KIVI data) and AotAttentionData.cpp.
// Internal to lowbit aot.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TOOLS_LOWBIT_AOTKVDATA_H
#define LOWBIT_TOOLS_LOWBIT_AOTKVDATA_H

#include "runtime/compiler/KvAttentionCompiler.h"
#include "tools/lowbit/AotKvEntries.h"

#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace lowbit::cli::aotdata {

using Dims = std::vector<std::vector<int64_t>>;
using Bytes = std::vector<uint8_t>;

template <typename T> Bytes bytesOf(const std::vector<T> &values) {
  Bytes bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

/// Uniform in [0, 1) from the generator (its 24 high bits).
float unit(std::mt19937 &generator);
/// A value's bits in `element` (f32, f16 or bf16), appended to `bytes`;
/// returns the value the bits hold.
float appendValue(Bytes &bytes, const std::string &element, float value);
/// `count` page indices: a shuffle of [0, count) (data) or in order.
std::vector<int32_t> pageOrder(int64_t count, std::mt19937 *shuffle);
aot::SizeInstance sizeOf(int64_t rows, int64_t cols,
                         const std::vector<aot::Shape> &shapes);
/// [leading dimensions' product, last] of each ranked shape.
std::vector<aot::Shape> flatten(const Dims &dims);
int64_t elementsOf(const std::vector<int64_t> &shape);

/// A cache for `batch` sequences of `tokens` new tokens each. Data: the
/// sequences start at positions 0, 3, 6, ... (ragged) in a cache that
/// just holds the last, paged through shuffled pages with a spare one.
/// Bench: every sequence at 0, pages in order.
struct KvGeometry {
  int64_t batch = 0, tokens = 0, capacity = 0, pages = 0, maxBlocks = 0;
  /// KIVI per-channel parameter rows (contiguous): ceil(capacity / G).
  int64_t groupRows = 0;
  /// kivi_attend's splits: ceil(max tokens / split).
  int64_t splits = 0;
  std::vector<int32_t> positions = {}, table = {};
  /// KIVI: the tokens each sequence holds (before an append).
  std::vector<int32_t> lengths = {};
};

/// The pages of a cache of `capacity` tokens per sequence (a paged
/// `layout` only): shuffled with a spare page (`shuffle`) or in order.
void pageCache(KvGeometry &g, kv::KvLayout layout, std::mt19937 *shuffle);
/// An index buffer of `g` (positions, lengths, block_table) by its role;
/// empty for every other role.
Bytes indexBytes(const std::string &role, const KvGeometry &g);

/// The manifest's parameters of a kernel signature (KvKernelSignature.h).
std::vector<aot::ParamInfo>
paramsOf(const std::vector<compiler::KvKernelParam> &params);
/// Each parameter's shape in the cache `g`.
Dims dimsOf(const std::vector<compiler::KvKernelParam> &params,
            const KvGeometry &g);

/// kv_append / kv_dequantize: the cache of `size` (data: `shuffle` given).
KvGeometry kvGeometry(const kv::KvKernelSpec &spec, KvAotSize size,
                      std::mt19937 *shuffle);
/// kivi_append / kivi_dequantize: the same.
KvGeometry kiviGeometry(const kv::KiviKernelSpec &spec, KvAotSize size,
                        std::mt19937 *shuffle);

/// A KV or KIVI entry's data at options.kvData: inputs from a fixed seed,
/// an append's cache before it, the CPU tail's written buffers.
std::optional<aot::BundleData> cacheData(const KvAotSpec &spec,
                                         const aot::BundleEntry &entry,
                                         const AotOptions &options,
                                         runtime::StagedFiles &staged,
                                         std::string &error);

/// kv_attend: sequence lengths (data ragged: N, 2N/3, N/3 for 3
/// sequences; bench full), the sizes a call fixes, the block table.
std::vector<int64_t> attentionLengths(KvAotSize size, bool ragged);
compiler::KvAttentionSizes attentionSizes(const kv::KvAttentionSpec &spec,
                                          KvAotSize size, bool ragged);
std::vector<int32_t> attentionTable(const compiler::KvAttentionSizes &sizes,
                                    const std::vector<int64_t> &lengths,
                                    const std::vector<int32_t> &order);
/// A kv_attend entry's data at options.attentionData, with the float64
/// reference output.
std::optional<aot::BundleData> attentionData(const kv::KvAttentionSpec &spec,
                                             const aot::BundleEntry &entry,
                                             const AotOptions &options,
                                             runtime::StagedFiles &staged,
                                             std::string &error);

} // namespace lowbit::cli::aotdata

#endif // LOWBIT_TOOLS_LOWBIT_AOTKVDATA_H
