//===- KvAttentionSpec.h - A decode-attention kernel, as text ---*- C++ -*-===//
//
// The MLIR-free description of one lowbit.kv_decode_attention kernel, and
// its one-line text form (docs/decode-attention.md):
//
//   kv_attend SCHEME [scale=per_tensor|per_head]
//             [convention=multiplier|divisor] [q=f32|f16|bf16]
//             [layout=contiguous|paged] q_heads=N kv_heads=N head_dim=N
//             [split=N] [softmax_scale=X] [dot=mma|fma]
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

/// How the GPU kernel forms q.K (docs/decode-attention.md, "Tensor-core
/// q.K"): per-lane fma chains in KvDecodeOrder's order (bit for bit equal
/// to the CPU tail), or mma.sync f16 x f16 -> f32 (within 1e-5 relative of
/// float64; tensor cores sum in an order and a rounding of their own). The
/// CPU tail always keeps KvDecodeOrder's order.
enum class DotKind : uint8_t { Fma, Mma };

/// The default split's rule (docs/decode-attention.md, "Split count"): the
/// largest power of two <= 256 tokens (and >= the stage-1 block's 16 token
/// slots) with which one sequence of 32768 tokens makes at least 2 blocks
/// per SM of H200's 132, kv_heads x ceil(32768 / split) >= 264: 64 for one
/// kv head, 128 for two, 256 from three up.
constexpr int64_t kMaxDefaultSplitTokens = 256;
constexpr int64_t kSplitRuleTokens = 32768;
constexpr int64_t kSplitRuleBlocks = 2 * 132;
constexpr int64_t defaultSplitTokens(int64_t kvHeads) {
  int64_t split = kMaxDefaultSplitTokens;
  while (split > 16 &&
         kvHeads * ((kSplitRuleTokens + split - 1) / split) < kSplitRuleBlocks)
    split /= 2;
  return split;
}

struct KvAttentionSpec {
  KvScheme scheme = KvScheme::Int8Groups;
  int64_t groupSize = 64;
  ScaleConvention convention = ScaleConvention::Multiplier;
  /// FP8 only: one scale per kv head (true) or one for the tensor.
  bool perHead = false;
  QueryDtype query = QueryDtype::F32;
  bool paged = false;
  int64_t qHeads = 1, kvHeads = 1, headDim = 1;
  /// defaultSplitTokens(kvHeads) when the text names none. Fixed per
  /// kernel: the partials' size [B Hkv S G, D + 2] depends on it.
  int64_t splitTokens = kMaxDefaultSplitTokens;
  /// 1 / sqrt(head_dim) when the text names none.
  float softmaxScale = 1.0f;
  /// mmaDotRefusal's default when the text names none: mma where it
  /// applies, else fma.
  DotKind dot = DotKind::Fma;

  bool isFp8() const {
    return scheme == KvScheme::Fp8E4M3 || scheme == KvScheme::Fp8E5M2;
  }
  int64_t groupHeads() const { return qHeads / kvHeads; }
  /// Scale entries per cache row for int8 groups (ceil(head_dim / G)).
  int64_t scaleWidth() const { return (headDim + groupSize - 1) / groupSize; }
};

std::string_view queryDtypeName(QueryDtype dtype);
std::string_view dotKindName(DotKind dot);

/// Why `spec` cannot take dot=mma (empty when it can): the tensor-core dot
/// multiplies f16 operands, so it needs FP8 codes (exact in f16), an f16 or
/// bf16 query (bf16 through a power-of-two rescale) and head_dim a multiple
/// of 16 (one mma k-step).
std::string mmaDotRefusal(const KvAttentionSpec &spec);

/// Parses the text form; nullopt and a message naming the offending token.
std::optional<KvAttentionSpec> parseKvAttentionSpec(std::string_view text,
                                                    std::string *error);
/// The canonical text (every field written; parses back to the same spec).
std::string printKvAttentionSpec(const KvAttentionSpec &spec);

} // namespace lowbit::kv

#endif // LOWBIT_KV_KVATTENTIONSPEC_H
