//===- KvAttention.cpp - Decode attention, the reference ------------------===//

#include "kv/KvAttention.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace lowbit::kv {

namespace {

void setError(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
}

/// Offsets of one (sequence, query head)'s query and of its kv head's rows.
struct HeadView {
  int64_t query, cache;
};

HeadView headView(const DecodeShape &shape, int64_t batch, int64_t head) {
  int64_t group = shape.qHeads / shape.kvHeads;
  int64_t kvHead = head / group;
  return {(batch * shape.qHeads + head) * shape.headDim,
          (batch * shape.kvHeads + kvHead) * shape.maxTokens * shape.headDim};
}

} // namespace

bool validateDecode(const DecodeShape &shape, std::span<const int64_t> seqLens,
                    size_t querySize, size_t keySize, size_t valueSize,
                    std::string *error) {
  const int64_t limit = int64_t(1) << 30;
  for (int64_t dim : {shape.batch, shape.qHeads, shape.kvHeads, shape.headDim,
                      shape.maxTokens})
    if (dim < 1 || dim > limit) {
      setError(error, "every decode dimension must be in [1, 2^30]");
      return false;
    }
  if (shape.qHeads % shape.kvHeads != 0) {
    setError(error, "query heads (" + std::to_string(shape.qHeads) +
                        ") must be a multiple of kv heads (" +
                        std::to_string(shape.kvHeads) + ")");
    return false;
  }
  if (int64_t(seqLens.size()) != shape.batch) {
    setError(error, "got " + std::to_string(seqLens.size()) +
                        " sequence lengths for a batch of " +
                        std::to_string(shape.batch));
    return false;
  }
  for (size_t b = 0; b < seqLens.size(); ++b)
    if (seqLens[b] < 0 || seqLens[b] > shape.maxTokens) {
      setError(error, "sequence " + std::to_string(b) + " has length " +
                          std::to_string(seqLens[b]) + "; the cache holds " +
                          std::to_string(shape.maxTokens) + " tokens");
      return false;
    }
  size_t queryElements = size_t(shape.batch * shape.qHeads * shape.headDim);
  size_t cacheElements =
      size_t(shape.batch * shape.kvHeads * shape.maxTokens * shape.headDim);
  if (querySize != queryElements || keySize != cacheElements ||
      valueSize != cacheElements) {
    setError(error, "query, keys or values do not match the decode shape");
    return false;
  }
  return true;
}

std::vector<double>
decodeAttentionF64(const DecodeShape &shape, std::span<const float> query,
                   std::span<const float> keys, std::span<const float> values,
                   std::span<const int64_t> seqLens, float softmaxScale) {
  int64_t dim = shape.headDim;
  std::vector<double> output(shape.batch * shape.qHeads * dim, 0.0);
  for (int64_t b = 0; b < shape.batch; ++b)
    for (int64_t h = 0; h < shape.qHeads; ++h) {
      int64_t tokens = seqLens[b];
      if (tokens == 0)
        continue;
      HeadView view = headView(shape, b, h);
      std::vector<double> logits(tokens);
      double maxLogit = -std::numeric_limits<double>::infinity();
      for (int64_t t = 0; t < tokens; ++t) {
        double dot = 0;
        for (int64_t d = 0; d < dim; ++d)
          dot += double(query[view.query + d]) *
                 double(keys[view.cache + t * dim + d]);
        logits[t] = dot * double(softmaxScale);
        maxLogit = std::max(maxLogit, logits[t]);
      }
      double sum = 0;
      for (int64_t t = 0; t < tokens; ++t) {
        logits[t] = std::exp(logits[t] - maxLogit);
        sum += logits[t];
      }
      for (int64_t t = 0; t < tokens; ++t)
        for (int64_t d = 0; d < dim; ++d)
          output[view.query + d] +=
              logits[t] / sum * double(values[view.cache + t * dim + d]);
    }
  return output;
}

std::vector<float> decodeAttentionSplitK(
    const DecodeShape &shape, std::span<const float> query,
    std::span<const float> keys, std::span<const float> values,
    std::span<const int64_t> seqLens, float softmaxScale, int64_t splitTokens) {
  int64_t dim = shape.headDim;
  splitTokens = std::max<int64_t>(splitTokens, 1);
  std::vector<float> output(shape.batch * shape.qHeads * dim, 0.0f);
  std::vector<float> acc(dim), total(dim);
  for (int64_t b = 0; b < shape.batch; ++b)
    for (int64_t h = 0; h < shape.qHeads; ++h) {
      int64_t tokens = seqLens[b];
      if (tokens == 0)
        continue;
      HeadView view = headView(shape, b, h);
      // Splits' (m, l, acc), merged in order as they are produced: the
      // running (M, L, total) is rescaled when a split raises M.
      float runningMax = -std::numeric_limits<float>::infinity();
      float runningSum = 0;
      std::fill(total.begin(), total.end(), 0.0f);
      for (int64_t begin = 0; begin < tokens; begin += splitTokens) {
        int64_t end = std::min(tokens, begin + splitTokens);
        std::vector<float> logits(end - begin);
        float splitMax = -std::numeric_limits<float>::infinity();
        for (int64_t t = begin; t < end; ++t) {
          float dot = 0;
          for (int64_t d = 0; d < dim; ++d)
            dot = std::fma(query[view.query + d],
                           keys[view.cache + t * dim + d], dot);
          logits[t - begin] = dot * softmaxScale;
          splitMax = std::max(splitMax, logits[t - begin]);
        }
        float splitSum = 0;
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int64_t t = begin; t < end; ++t) {
          float weight = std::exp(logits[t - begin] - splitMax);
          splitSum += weight;
          for (int64_t d = 0; d < dim; ++d)
            acc[d] = std::fma(weight, values[view.cache + t * dim + d], acc[d]);
        }
        float merged = std::max(runningMax, splitMax);
        float oldFactor = std::exp(runningMax - merged);
        float newFactor = std::exp(splitMax - merged);
        runningSum = runningSum * oldFactor + splitSum * newFactor;
        for (int64_t d = 0; d < dim; ++d)
          total[d] = total[d] * oldFactor + acc[d] * newFactor;
        runningMax = merged;
      }
      for (int64_t d = 0; d < dim; ++d)
        output[view.query + d] = total[d] / runningSum;
    }
  return output;
}

double relativeError(std::span<const double> exact,
                     std::span<const float> approx) {
  double difference = 0, norm = 0;
  for (size_t index = 0; index < exact.size(); ++index) {
    double delta = double(approx[index]) - exact[index];
    difference += delta * delta;
    norm += exact[index] * exact[index];
  }
  if (norm == 0)
    return difference == 0 ? 0 : std::numeric_limits<double>::infinity();
  return std::sqrt(difference / norm);
}

} // namespace lowbit::kv
