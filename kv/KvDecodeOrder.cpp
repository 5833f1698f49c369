//===- KvDecodeOrder.cpp - The decode-attention kernels' arithmetic -------===//
//
// Built with -ffp-contract=off: every fma here is written as std::fma, and
// every other multiply and add must round on its own, as in the kernels.
//
//===----------------------------------------------------------------------===//

#include "kv/KvDecodeOrder.h"

#include "format/Prologue.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace lowbit::kv {

namespace {

/// The kernels' max: x > m ? x : m (a NaN never wins).
float larger(float m, float x) { return x > m ? x : m; }

} // namespace

std::vector<float> decodeAttentionKernelOrder(
    const DecodeShape &shape, std::span<const float> query,
    std::span<const float> keys, std::span<const float> values,
    std::span<const int64_t> seqLens, float softmaxScale, int64_t splitTokens,
    std::span<const float> keyScales, std::span<const float> valueScales) {
  const int64_t dim = shape.headDim, group = shape.qHeads / shape.kvHeads;
  const int64_t splits = (shape.maxTokens + splitTokens - 1) / splitTokens;
  const float negativeInfinity = -std::numeric_limits<float>::infinity();
  // partials[b, kvh, s, g, :] = acc[0..dim), m, l.
  std::vector<float> partials(shape.batch * shape.kvHeads * splits * group *
                              (dim + 2));
  auto slot = [&](int64_t b, int64_t kvHead, int64_t split, int64_t member) {
    return partials.begin() +
           (((b * shape.kvHeads + kvHead) * splits + split) * group + member) *
               (dim + 2);
  };
  // The dot as the GPU kernel's 8 lanes form it: lane j's fma chain over
  // its 16-channel slices j, j + 8, ... (from 0; a lane past head_dim adds
  // +0), then the xor tree over offsets 4, 2, 1.
  auto logit = [&](int64_t b, int64_t head, int64_t kvHead, int64_t token) {
    const float *q = query.data() + (b * shape.qHeads + head) * dim;
    const float *k =
        keys.data() +
        ((b * shape.kvHeads + kvHead) * shape.maxTokens + token) * dim;
    float lanes[kDecodeLanes];
    for (int64_t lane = 0; lane < kDecodeLanes; ++lane) {
      float dot = 0.0f;
      for (int64_t start = lane * kDecodeLaneChannels; start < dim;
           start += kDecodeLanes * kDecodeLaneChannels)
        for (int64_t d = start; d < std::min(dim, start + kDecodeLaneChannels);
             ++d)
          dot = std::fma(q[d], k[d], dot);
      lanes[lane] = dot;
    }
    float tree = ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) +
                 ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]));
    if (!keyScales.empty())
      tree = tree * keyScales[size_t(kvHead)];
    return tree * softmaxScale;
  };

  // Stage 1: every (sequence, kv head, split), each query head of the group.
  for (int64_t b = 0; b < shape.batch; ++b)
    for (int64_t kvHead = 0; kvHead < shape.kvHeads; ++kvHead)
      for (int64_t split = 0; split < splits; ++split) {
        int64_t begin = split * splitTokens;
        int64_t end = std::min(seqLens[b], begin + splitTokens);
        for (int64_t member = 0; member < group; ++member) {
          int64_t head = kvHead * group + member;
          auto total = slot(b, kvHead, split, member);
          float splitMax = negativeInfinity;
          for (int64_t t = begin; t < end; ++t)
            splitMax = larger(splitMax, logit(b, head, kvHead, t));
          // + 0 makes a zero max +0 whatever order found it.
          splitMax = splitMax + 0.0f;
          // Token slot r takes tokens begin + r, begin + r + 16, ...; the
          // slots' sums are added in slot order.
          float sum = 0.0f;
          std::vector<float> acc(dim);
          for (int64_t tokenSlot = 0; tokenSlot < kDecodeSlots; ++tokenSlot) {
            std::fill(acc.begin(), acc.end(), 0.0f);
            float slotSum = 0.0f;
            for (int64_t t = begin + tokenSlot; t < end; t += kDecodeSlots) {
              float weight = prologueExp(logit(b, head, kvHead, t) - splitMax);
              const float *v =
                  values.data() +
                  ((b * shape.kvHeads + kvHead) * shape.maxTokens + t) * dim;
              for (int64_t d = 0; d < dim; ++d)
                acc[d] = std::fma(weight, v[d], acc[d]);
              slotSum = slotSum + weight;
            }
            for (int64_t d = 0; d < dim; ++d)
              total[d] = total[d] + acc[d];
            sum = sum + slotSum;
          }
          if (!valueScales.empty())
            for (int64_t d = 0; d < dim; ++d)
              total[d] = total[d] * valueScales[size_t(kvHead)];
          total[dim] = splitMax;
          total[dim + 1] = sum;
        }
      }

  return mergeDecodeSplits(shape, partials, seqLens, splitTokens);
}

std::vector<float> mergeDecodeSplits(const DecodeShape &shape,
                                     std::span<const float> partials,
                                     std::span<const int64_t> seqLens,
                                     int64_t splitTokens) {
  const int64_t dim = shape.headDim, group = shape.qHeads / shape.kvHeads;
  const int64_t splits = (shape.maxTokens + splitTokens - 1) / splitTokens;
  auto slot = [&](int64_t b, int64_t kvHead, int64_t split, int64_t member) {
    return partials.data() +
           (((b * shape.kvHeads + kvHead) * splits + split) * group + member) *
               (dim + 2);
  };
  std::vector<float> output(shape.batch * shape.qHeads * dim, 0.0f);
  for (int64_t b = 0; b < shape.batch; ++b)
    for (int64_t head = 0; head < shape.qHeads; ++head) {
      int64_t kvHead = head / group, member = head % group;
      int64_t used = (seqLens[b] + splitTokens - 1) / splitTokens;
      float globalMax = -std::numeric_limits<float>::infinity();
      for (int64_t split = 0; split < used; ++split)
        globalMax = larger(globalMax, slot(b, kvHead, split, member)[dim]);
      float *out = output.data() + (b * shape.qHeads + head) * dim;
      float sum = 0.0f;
      for (int64_t split = 0; split < used; ++split) {
        const float *acc = slot(b, kvHead, split, member);
        float factor = prologueExp(acc[dim] - globalMax);
        for (int64_t d = 0; d < dim; ++d)
          out[d] = std::fma(acc[d], factor, out[d]);
        sum = std::fma(acc[dim + 1], factor, sum);
      }
      if (seqLens[b] != 0)
        for (int64_t d = 0; d < dim; ++d)
          out[d] = out[d] / sum;
    }
  return output;
}

} // namespace lowbit::kv
