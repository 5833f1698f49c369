//===- KiviDecodeOrder.h - KIVI decode attention's kernel order -*- C++ -*-===//
//
// lowbit.kivi_decode_attention's f32 arithmetic in the kernels' order, in
// plain C++: what the CPU tail and the GPU kernel (the generic mapping, one
// thread per unit) are compared against bit for bit (docs/decode-attention
// .md, KIVI). Per (sequence, kv head, split) and query head of the group:
// each logit is one fma chain over the channels in order from 0, times
// softmax_scale; m is the running max of the split's logits from -inf
// (x > m ? x : m), + 0; then per token in order w = exp(logit - m),
// acc[d] = fma(w, v[d], acc[d]) and l = l + w. The splits are merged as
// kv_decode_attention's second stage does (KvDecodeOrder.h). exp is
// lowbit's own (prologueExp).
//
// Keys and values are the dequantized cache (KiviStream::keys() /
// values(): the quantized prefix dequantized, the residual widened),
// contiguous [batch, kvHeads, maxTokens, headDim]; the query is widened
// to f32.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_KV_KIVIDECODEORDER_H
#define LOWBIT_KV_KIVIDECODEORDER_H

#include "kv/KvAttention.h"

namespace lowbit::kv {

std::vector<float> kiviDecodeAttentionOrder(
    const DecodeShape &shape, std::span<const float> query,
    std::span<const float> keys, std::span<const float> values,
    std::span<const int64_t> seqLens, float softmaxScale, int64_t splitTokens);

} // namespace lowbit::kv

#endif // LOWBIT_KV_KIVIDECODEORDER_H
