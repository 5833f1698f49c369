//===- KvAttentionSpec.h - A decode-attention kernel, as text ---*- C++ -*-===//
//
// The MLIR-free description of one lowbit.kv_decode_attention kernel, and
// its one-line text form (docs/decode-attention.md):
//
//   kv_attend SCHEME [scale=per_tensor|per_head]
//             [convention=multiplier|divisor] [q=f32|f16|bf16]
//             [layout=contiguous|paged] q_heads=N kv_heads=N head_dim=N
//             [split=N] [softmax_scale=X]
//
// SCHEME is kv_int8_g<G> (or kv_int8, G = 64), kv_fp8_e4m3 or kv_fp8_e5m2
// (kv/KvCache.h's names). Batch, tokens and pages are the kernel's dynamic
// sizes. Errors name the offending token.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_KV_KVATTENTIONSPEC_H
#define LOWBIT_KV_KVATTENTIONSPEC_H

#include "kv/KvCache.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lowbit::kv {

enum class QueryDtype : uint8_t { F32, F16, BF16 };

/// Tokens per split when the spec names none: a sequence of 32k tokens
/// makes 128 splits per kv head, so one sequence with 8 kv heads gives
/// 1024 blocks (about 8 per SM on 132 SMs) and even one kv head fills
/// nearly every SM (docs/decode-attention.md).
constexpr int64_t kDefaultSplitTokens = 256;

struct KvAttentionSpec {
  KvScheme scheme = KvScheme::Int8Groups;
  int64_t groupSize = 64;
  ScaleConvention convention = ScaleConvention::Multiplier;
  /// FP8 only: one scale per kv head (true) or one for the tensor.
  bool perHead = false;
  QueryDtype query = QueryDtype::F32;
  bool paged = false;
  int64_t qHeads = 1, kvHeads = 1, headDim = 1;
  int64_t splitTokens = kDefaultSplitTokens;
  /// 1 / sqrt(head_dim) when the text names none.
  float softmaxScale = 1.0f;

  bool isFp8() const { return scheme != KvScheme::Int8Groups; }
  int64_t groupHeads() const { return qHeads / kvHeads; }
  /// Scale entries per cache row for int8 groups (ceil(head_dim / G)).
  int64_t scaleWidth() const { return (headDim + groupSize - 1) / groupSize; }
};

std::string_view queryDtypeName(QueryDtype dtype);

/// Parses the text form; nullopt and a message naming the offending token.
std::optional<KvAttentionSpec> parseKvAttentionSpec(std::string_view text,
                                                    std::string *error);
/// The canonical text (every field written; parses back to the same spec).
std::string printKvAttentionSpec(const KvAttentionSpec &spec);

} // namespace lowbit::kv

#endif // LOWBIT_KV_KVATTENTIONSPEC_H
