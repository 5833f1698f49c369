//===- KvDecodeOrder.h - The decode-attention kernels' arithmetic -*- C++
//-*-===//
//
// lowbit.kv_decode_attention's f32 arithmetic in the kernels' order, in
// plain C++: what the CPU tail and the GPU kernels are compared against bit
// for bit (docs/decode-attention.md). It differs from KvAttention.h's
// decodeAttentionSplitK in two ways on purpose: exp is lowbit's own
// (prologueExp, the same bits on every backend, where std::exp is not),
// and the splits are merged after all of them are known (M = max m_s,
// L = fma(l_s, e^(m_s - M), L), out = fma(acc_s, e^(m_s - M), out)), as
// the kernel's second stage does, instead of with a running rescale.
// Within a split it follows the FlashDecoding kernel's shape: the dot as 8
// lanes' fma chains joined by the xor-shuffle tree, the max + 0, and the
// weighted values summed per token slot, then the 16 slots in order.
//
// Keys and values are the dequantized cache, contiguous [batch, kvHeads,
// maxTokens, headDim] (the kernels dequantize each element where they read
// it, with the same bits as KvQuantize.h's dequantize functions).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_KV_KVDECODEORDER_H
#define LOWBIT_KV_KVDECODEORDER_H

#include "kv/KvAttention.h"

namespace lowbit::kv {

/// The stage-1 kernel's shape, which the order follows: 16 token slots of
/// 8 lanes, each lane holding 16 channels of a row (one 16-byte load of
/// FP8 or int8 codes); docs/decode-attention.md, "The arithmetic".
constexpr int64_t kDecodeSlots = 16;
constexpr int64_t kDecodeLanes = 8;
constexpr int64_t kDecodeLaneChannels = 16;

/// `keyScales` and `valueScales` are empty (int8: keys and values are the
/// dequantized cache), or one factor per kv head (FP8: keys and values are
/// the decoded codes, unscaled; a per-tensor scale repeated per head): the
/// dot is then `(tree * keyScale) * softmaxScale` and a split's summed
/// values `total[d] * valueScale`, once each, instead of a multiply per
/// code.
std::vector<float> decodeAttentionKernelOrder(
    const DecodeShape &shape, std::span<const float> query,
    std::span<const float> keys, std::span<const float> values,
    std::span<const int64_t> seqLens, float softmaxScale, int64_t splitTokens,
    std::span<const float> keyScales = {},
    std::span<const float> valueScales = {});

/// Stage 2 in the kernels' order, shared by every decode-attention order:
/// each (sequence, query head) merges its used splits of `partials`
/// ([batch, kvHeads, splits, qHeads / kvHeads, headDim + 2]: acc, m, l)
/// in split order (M = max m_s, then fma by e^(m_s - M)), and divides by
/// L unless the sequence is empty.
std::vector<float> mergeDecodeSplits(const DecodeShape &shape,
                                     std::span<const float> partials,
                                     std::span<const int64_t> seqLens,
                                     int64_t splitTokens);

} // namespace lowbit::kv

#endif // LOWBIT_KV_KVDECODEORDER_H
