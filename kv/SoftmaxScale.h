//===- SoftmaxScale.h - What a decode attention's softmax_scale may be ----===//
//
// The one rule every parser of a softmax_scale applies (the kv_attend and
// kivi_attend spec texts, so lowbit::Jit and `lowbit aot`, and the
// dialect's kv_decode_attention and kivi_decode_attention verifiers): a
// positive normal f32. The scale multiplies q.k before the softmax: 0 (or
// -0) makes every weight equal, a negative one ranks the keys backwards,
// a subnormal one flushes to zero on the GPU, NaN and infinity make no
// numbers. Header-only: the dialect uses it without linking kv/.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_KV_SOFTMAXSCALE_H
#define LOWBIT_KV_SOFTMAXSCALE_H

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <string>

namespace lowbit::kv {

/// Why `scale` is no softmax scale; empty when it is one.
inline std::string softmaxScaleRefusal(float scale) {
  if (std::isfinite(scale) && scale >= FLT_MIN)
    return {};
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", double(scale));
  return "softmax_scale must be a positive normal number (finite, at least "
         "2^-126), got " +
         std::string(text);
}

} // namespace lowbit::kv

#endif // LOWBIT_KV_SOFTMAXSCALE_H
