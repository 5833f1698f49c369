//===- KvAttention.h - Decode attention, the reference ----------*- C++ -*-===//
//
// One query token per sequence against its cache: out[b, h] =
// softmax(scale * q[b, h] . K[b, h / (Hq / Hkv)]^T) V[b, h / (Hq / Hkv)],
// over the first seqLens[b] tokens. Grouped-query heads share their kv
// head. Two references:
//   - decodeAttentionF64: every step in double, the accuracy yardstick;
//   - decodeAttentionSplitK: the f32 arithmetic, in the order the decode
//     kernel uses (docs/kv-cache.md): the tokens cut into splits of
//     `splitTokens`; per split the max logit m, l = sum exp(s - m) and
//     acc = sum exp(s - m) v in token order; the splits merged in order
//     with M = max m_i, out = sum(acc_i e^(m_i - M)) / sum(l_i e^(m_i - M)).
// A sequence of length 0 gives zeros.
//
// Layouts (C order): q and out [batch, qHeads, headDim]; keys and values
// [batch, kvHeads, maxTokens, headDim] (contiguous; KvPaged.h gathers a
// paged cache into this form).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_KV_KVATTENTION_H
#define LOWBIT_KV_KVATTENTION_H

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace lowbit::kv {

struct DecodeShape {
  int64_t batch = 1, qHeads = 1, kvHeads = 1, headDim = 1, maxTokens = 1;
};

/// Checks the shape (qHeads a multiple of kvHeads, sizes >= 1), one
/// sequence length per batch entry in [0, maxTokens], and buffer sizes.
bool validateDecode(const DecodeShape &shape, std::span<const int64_t> seqLens,
                    size_t querySize, size_t keySize, size_t valueSize,
                    std::string *error);

std::vector<double>
decodeAttentionF64(const DecodeShape &shape, std::span<const float> query,
                   std::span<const float> keys, std::span<const float> values,
                   std::span<const int64_t> seqLens, float softmaxScale);

std::vector<float> decodeAttentionSplitK(
    const DecodeShape &shape, std::span<const float> query,
    std::span<const float> keys, std::span<const float> values,
    std::span<const int64_t> seqLens, float softmaxScale, int64_t splitTokens);

/// ||approx - exact|| / ||exact|| (2-norms, in double); 0 when both are 0.
double relativeError(std::span<const double> exact,
                     std::span<const float> approx);

} // namespace lowbit::kv

#endif // LOWBIT_KV_KVATTENTION_H
