//===- KiviDecodeOrder.cpp - KIVI decode attention's kernel order ---------===//
//
// Built with -ffp-contract=off: every fma here is written as std::fma, and
// every other multiply and add must round on its own, as in the kernels.
//
//===----------------------------------------------------------------------===//

#include "kv/KiviDecodeOrder.h"
#include "kv/KvDecodeOrder.h"

#include "format/Prologue.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace lowbit::kv {

std::vector<float> kiviDecodeAttentionOrder(
    const DecodeShape &shape, std::span<const float> query,
    std::span<const float> keys, std::span<const float> values,
    std::span<const int64_t> seqLens, float softmaxScale, int64_t splitTokens) {
  const int64_t dim = shape.headDim, group = shape.qHeads / shape.kvHeads;
  const int64_t splits = (shape.maxTokens + splitTokens - 1) / splitTokens;
  const float negativeInfinity = -std::numeric_limits<float>::infinity();
  auto larger = [](float m, float x) { return x > m ? x : m; };
  auto row = [&](std::span<const float> cache, int64_t b, int64_t kvHead,
                 int64_t token) {
    return cache.data() +
           ((b * shape.kvHeads + kvHead) * shape.maxTokens + token) * dim;
  };
  // partials[b, kvh, s, g, :] = acc[0..dim), m, l.
  std::vector<float> partials(shape.batch * shape.kvHeads * splits * group *
                              (dim + 2));
  auto slot = [&](int64_t b, int64_t kvHead, int64_t split, int64_t member) {
    return partials.data() +
           (((b * shape.kvHeads + kvHead) * splits + split) * group + member) *
               (dim + 2);
  };

  for (int64_t b = 0; b < shape.batch; ++b)
    for (int64_t kvHead = 0; kvHead < shape.kvHeads; ++kvHead)
      for (int64_t split = 0; split < splits; ++split)
        for (int64_t member = 0; member < group; ++member) {
          const float *q =
              query.data() + (b * shape.qHeads + kvHead * group + member) * dim;
          auto logit = [&](int64_t token) {
            const float *k = row(keys, b, kvHead, token);
            float dot = 0.0f;
            for (int64_t d = 0; d < dim; ++d)
              dot = std::fma(q[d], k[d], dot);
            return dot * softmaxScale;
          };
          int64_t begin = split * splitTokens;
          int64_t end = std::min(seqLens[b], begin + splitTokens);
          float splitMax = negativeInfinity;
          for (int64_t t = begin; t < end; ++t)
            splitMax = larger(splitMax, logit(t));
          splitMax = splitMax + 0.0f;
          float *acc = slot(b, kvHead, split, member);
          float sum = 0.0f;
          for (int64_t t = begin; t < end; ++t) {
            float weight = prologueExp(logit(t) - splitMax);
            const float *v = row(values, b, kvHead, t);
            for (int64_t d = 0; d < dim; ++d)
              acc[d] = std::fma(weight, v[d], acc[d]);
            sum = sum + weight;
          }
          acc[dim] = splitMax;
          acc[dim + 1] = sum;
        }

  return mergeDecodeSplits(shape, partials, seqLens, splitTokens);
}

} // namespace lowbit::kv
