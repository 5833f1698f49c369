//===- KiviAttentionSpec.h - KIVI decode attention, as text -----*- C++ -*-===//
//
// The MLIR-free description of one lowbit.kivi_decode_attention kernel
// (docs/decode-attention.md, KIVI) and its one-line text form:
//
//   kivi_attend kv_kivi_int4|kv_kivi_int2 [group=G] [residual=R]
//               [keys=per_channel|per_token] [zero=float|int]
//               [cache=f16|bf16] [q=f32|f16|bf16]
//               [layout=contiguous|paged] q_heads=N kv_heads=N
//               head_dim=N [split=N] [softmax_scale=X]
//
// Defaults as the cache's (G = 32, R = 128, keys per channel, KIVI's
// float zero, an f16 ring), an f32 query, contiguous, the split of
// kv_decode_attention's rule
// (defaultSplitTokens) and softmax_scale 1 / sqrt(head_dim). Errors name
// the offending token.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_KV_KIVIATTENTIONSPEC_H
#define LOWBIT_KV_KIVIATTENTIONSPEC_H

#include "kv/KvKiviKernelSpec.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lowbit::kv {

struct KiviAttentionSpec {
  /// The keys' side: bits, G, R and the keys' granularity (perChannel);
  /// the values' side is the same but per token (valueSide()).
  KiviSide keys{4, 32, 128, true};
  /// The residual rings' element type: f16 or bf16.
  KvValueType cache = KvValueType::F16;
  KvValueType query = KvValueType::F32;
  KvLayout layout = KvLayout::Contiguous;
  int64_t qHeads = 1, kvHeads = 1, headDim = 1;
  /// Fixed per kernel: the partials [B, Hkv, S, q_heads / kv_heads, D + 2]
  /// have S = ceil(max tokens / splitTokens).
  int64_t splitTokens = 256;
  float softmaxScale = 1.0f;

  KiviSide valueSide() const {
    KiviSide side = keys;
    side.perChannel = false;
    return side;
  }
  int64_t groupHeads() const { return qHeads / kvHeads; }
  bool paged() const { return layout == KvLayout::Paged; }
  bool operator==(const KiviAttentionSpec &other) const = default;
};

/// The spec's own checks (the side, an f16/bf16 cache, q_heads a multiple
/// of kv_heads, sizes in [1, 2^30], split >= 1, a finite softmax_scale).
bool validateKiviAttentionSpec(const KiviAttentionSpec &spec,
                               std::string *error);
/// Parses the text form; nullopt and a message naming the offending token.
std::optional<KiviAttentionSpec> parseKiviAttentionSpec(std::string_view text,
                                                        std::string *error);
/// The canonical text: every field written; parses back to the same spec.
std::string printKiviAttentionSpec(const KiviAttentionSpec &spec);

} // namespace lowbit::kv

#endif // LOWBIT_KV_KIVIATTENTIONSPEC_H
