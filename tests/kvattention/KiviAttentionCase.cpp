//===- KiviAttentionCase.cpp - One KIVI decode-attention test case --------===//

#include "tests/kvattention/KiviAttentionCase.h"

#include "format/Codec.h"
#include "kv/KiviDecodeOrder.h"
#include "kv/KvKivi.h"
#include "runtime/compiler/KiviAttentionCompiler.h"
#include "runtime/compiler/KiviCompiler.h"
#include "tests/reference/TestHelpers.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

namespace lowbit::testing {

namespace {

constexpr int8_t kPoisonCode = 0x5A;
constexpr uint16_t kNanHalf = 0x7E00, kNanBFloat16 = 0x7FC0;

int64_t product(const std::vector<int64_t> &shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t(1),
                         std::multiplies<>());
}

/// The side's buffers for `rows` code rows per storage unit (the capacity,
/// or 16 per page) and `units` units (sequences or pages), poisoned.
KiviAttentionCase::Side makeSide(const kv::KiviAttentionSpec &spec,
                                 const kv::KiviSide &side, int64_t units,
                                 int64_t rows, int64_t batch) {
  KiviAttentionCase::Side result;
  int64_t heads = spec.kvHeads, dim = spec.headDim;
  result.codeShape = {units, heads, rows, side.codeWidth(dim)};
  int64_t paramRows = !side.perChannel ? rows
                      : spec.paged()
                          ? side.pageParamRows()
                          : (rows + side.groupSize - 1) / side.groupSize;
  result.paramShape = {units, heads, paramRows, side.paramWidth(dim)};
  result.residualShape = {batch, heads, side.residualSlots(), dim};
  result.codes.assign(product(result.codeShape), kPoisonCode);
  result.scales.assign(product(result.paramShape), std::nanf(""));
  result.zeros.assign(product(result.paramShape), std::nanf(""));
  result.residual.assign(product(result.residualShape),
                         spec.cache == kv::KvValueType::BF16 ? kNanBFloat16
                                                             : kNanHalf);
  return result;
}

uint16_t narrow(kv::KvValueType type, float value) {
  return type == kv::KvValueType::BF16 ? floatToBFloat16(value)
                                       : floatToHalf(value);
}

float widen(kv::KvValueType type, uint16_t bits) {
  return type == kv::KvValueType::BF16 ? bfloat16ToFloat(bits)
                                       : halfToFloat(bits);
}

/// About N(0, 1): the sum of three uniforms, scaled.
float normal(test::Random &random) {
  return (random.uniform() + random.uniform() + random.uniform()) * 1.2f;
}

} // namespace

KiviAttentionCase KiviAttentionCase::make(const std::string &specText,
                                          std::vector<int64_t> lengths,
                                          uint64_t seed) {
  KiviAttentionCase data;
  std::string error;
  std::optional<kv::KiviAttentionSpec> parsed =
      kv::parseKiviAttentionSpec(specText, &error);
  INFO(error);
  REQUIRE(parsed);
  data.spec = *parsed;
  const kv::KiviAttentionSpec &spec = data.spec;
  const int64_t batch = int64_t(lengths.size());
  const int64_t heads = spec.kvHeads, dim = spec.headDim;
  const int64_t longest = *std::max_element(lengths.begin(), lengths.end());
  data.lengths = lengths;
  for (int64_t length : lengths)
    data.seqLens.push_back(int32_t(length));

  // Storage: a capacity 3 tokens past the longest sequence, or pages
  // handed out in reverse order with one spare and a block of -1 past
  // every sequence's last.
  int64_t units = batch, rows = longest + 3;
  if (spec.paged()) {
    data.maxBlocks = (longest + 15) / 16 + 1;
    for (int64_t length : lengths)
      data.pages += (length + 15) / 16;
    data.pages += 1;
    data.blockTable.assign(batch * data.maxBlocks, -1);
    int64_t next = data.pages - 1;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t block = 0; block < (lengths[b] + 15) / 16; ++block)
        data.blockTable[b * data.maxBlocks + block] = int32_t(--next);
    units = data.pages;
    rows = kv::kPageTokens;
  }
  const int64_t maxTokens =
      spec.paged() ? kv::kPageTokens * data.maxBlocks : rows;
  data.shape = {batch, spec.qHeads, heads, dim, maxTokens};
  data.keys = makeSide(spec, spec.keys, units, rows, batch);
  data.values = makeSide(spec, spec.valueSide(), units, rows, batch);

  // Query and tokens: keys with an outlier channel of consistent sign
  // (KIVI's observation), values with a per-channel mean.
  test::Random random(seed);
  for (int64_t i = 0; i < batch * spec.qHeads * dim; ++i) {
    float value = normal(random);
    if (spec.query != kv::KvValueType::F32)
      value = widen(spec.query, narrow(spec.query, value));
    data.queryF32.push_back(value);
  }
  if (spec.query == kv::KvValueType::F32) {
    data.query.resize(data.queryF32.size() * 4);
    std::memcpy(data.query.data(), data.queryF32.data(), data.query.size());
  } else {
    for (float value : data.queryF32) {
      uint16_t bits = narrow(spec.query, value);
      data.query.push_back(uint8_t(bits));
      data.query.push_back(uint8_t(bits >> 8));
    }
  }
  std::vector<float> channelMean(dim);
  for (float &mean : channelMean)
    mean = random.uniform();

  data.keysF32.assign(batch * heads * maxTokens * dim, 0.0f);
  data.valuesF32.assign(data.keysF32.size(), 0.0f);
  // One append per sequence through batch-1 views, keys then values.
  for (int sideIndex = 0; sideIndex < 2; ++sideIndex) {
    bool isKeys = sideIndex == 0;
    kv::KiviSide side = isKeys ? spec.keys : spec.valueSide();
    Side &storage = isKeys ? data.keys : data.values;
    kv::KiviKernelSpec append;
    append.op = kv::KvKernelOp::Append;
    append.side = side;
    append.residualType = spec.cache;
    append.layout = spec.layout;
    append.heads = heads;
    append.headDim = dim;
    auto kernel = compiler::compileKiviForCpu(append);
    if (!kernel)
      FAIL(llvm::toString(kernel.takeError()));
    for (int64_t b = 0; b < batch; ++b) {
      int64_t length = lengths[b];
      if (length == 0)
        continue;
      std::vector<uint16_t> input(heads * length * dim);
      std::vector<float> tokens(input.size());
      for (size_t i = 0; i < input.size(); ++i) {
        int64_t channel = int64_t(i) % dim;
        float value = isKeys ? normal(random) + (channel == 1 ? 8.0f : 0.0f)
                             : normal(random) + channelMean[channel];
        input[i] = narrow(spec.cache, value);
        tokens[i] = widen(spec.cache, input[i]);
      }
      auto view = [&](auto &vector, const std::vector<int64_t> &shape) {
        if (spec.paged())
          return compiler::KvBuffer{vector.data(), shape};
        std::vector<int64_t> one = shape;
        one[0] = 1;
        return compiler::KvBuffer{vector.data() + b * product(one), one};
      };
      int32_t held = 0;
      std::vector<compiler::KvBuffer> args = {
          {input.data(), {1, heads, length, dim}},
          view(storage.codes, storage.codeShape),
          view(storage.scales, storage.paramShape),
          view(storage.zeros, storage.paramShape),
          {storage.residual.data() + b * heads * side.residualSlots() * dim,
           {1, heads, side.residualSlots(), dim}},
          {&held, {1}}};
      if (spec.paged())
        args.push_back(
            {data.blockTable.data() + b * data.maxBlocks, {1, data.maxBlocks}});
      if (llvm::Error failure = (*kernel)->run(args))
        FAIL(llvm::toString(std::move(failure)));
      // The reference, fed the same (widened) tokens per head.
      for (int64_t h = 0; h < heads; ++h) {
        auto stream = kv::KiviStream::create(side.options(), dim, &error);
        REQUIRE(stream);
        std::span<const float> head(tokens.data() + h * length * dim,
                                    length * dim);
        // KiviStream takes keys and values together; this side's tokens
        // go to the side read back.
        REQUIRE(stream->append(head, head, length, &error));
        std::vector<float> read = isKeys ? stream->keys() : stream->values();
        std::copy(read.begin(), read.end(),
                  (isKeys ? data.keysF32 : data.valuesF32).begin() +
                      ((b * heads + h) * maxTokens) * dim);
      }
    }
  }
  return data;
}

size_t KiviAttentionCase::outputSize() const {
  return shape.batch * shape.qHeads * shape.headDim;
}

size_t KiviAttentionCase::partialsSize() const {
  int64_t splits = (shape.maxTokens + spec.splitTokens - 1) / spec.splitTokens;
  return shape.batch * shape.kvHeads * splits * spec.groupHeads() *
         (shape.headDim + 2);
}

std::vector<compiler::KvBuffer> KiviAttentionCase::buffers(float *output,
                                                           float *partials) {
  int64_t splits = (shape.maxTokens + spec.splitTokens - 1) / spec.splitTokens;
  std::vector<int64_t> heads = {shape.batch, shape.qHeads, shape.headDim};
  std::vector<compiler::KvBuffer> result = {{query.data(), heads}};
  for (Side *side : {&keys, &values}) {
    result.push_back({side->codes.data(), side->codeShape});
    result.push_back({side->scales.data(), side->paramShape});
    result.push_back({side->zeros.data(), side->paramShape});
    result.push_back({side->residual.data(), side->residualShape});
  }
  result.push_back({seqLens.data(), {shape.batch}});
  result.push_back({output, heads});
  result.push_back({partials,
                    {shape.batch, shape.kvHeads, splits, spec.groupHeads(),
                     shape.headDim + 2}});
  if (spec.paged())
    result.push_back({blockTable.data(), {shape.batch, maxBlocks}});
  return result;
}

std::vector<std::pair<size_t, bool>> KiviAttentionCase::paramBytes() const {
  size_t queryBytes = spec.query == kv::KvValueType::F32 ? 4 : 2;
  std::vector<std::pair<size_t, bool>> params = {{queryBytes, false}};
  for (int side = 0; side < 2; ++side)
    params.insert(params.end(),
                  {{1, false}, {4, false}, {4, false}, {2, false}});
  params.insert(params.end(), {{4, false}, {4, true}, {4, true}});
  if (spec.paged())
    params.push_back({4, false});
  return params;
}

std::vector<float> KiviAttentionCase::kernelOrderReference() const {
  return kv::kiviDecodeAttentionOrder(shape, queryF32, keysF32, valuesF32,
                                      lengths, spec.softmaxScale,
                                      spec.splitTokens);
}

std::vector<double> KiviAttentionCase::float64Reference() const {
  return kv::decodeAttentionF64(shape, queryF32, keysF32, valuesF32, lengths,
                                spec.softmaxScale);
}

} // namespace lowbit::testing
