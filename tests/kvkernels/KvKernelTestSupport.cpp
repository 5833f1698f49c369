//===- KvKernelTestSupport.cpp - KV kernel test cases and references ------===//

#include "KvKernelTestSupport.h"

#include "format/Codec.h"
#include "kv/KvEval.h"
#include "kv/KvPaged.h"
#include "kv/KvQuantize.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>

namespace lowbit::kvtest {

namespace {

template <typename T> std::vector<uint8_t> toBytes(const std::vector<T> &v) {
  std::vector<uint8_t> bytes(v.size() * sizeof(T));
  std::memcpy(bytes.data(), v.data(), bytes.size());
  return bytes;
}

} // namespace

std::string errorText(llvm::Error error) {
  if (!error)
    return "";
  return llvm::toString(std::move(error));
}

std::string firstDifference(const std::vector<uint8_t> &actual,
                            const std::vector<uint8_t> &expected) {
  if (actual.size() != expected.size())
    return "sizes differ: " + std::to_string(actual.size()) + " vs " +
           std::to_string(expected.size());
  for (size_t index = 0; index < actual.size(); ++index)
    if (actual[index] != expected[index])
      return "byte " + std::to_string(index) + ": got " +
             std::to_string(actual[index]) + ", expected " +
             std::to_string(expected[index]);
  return "";
}

void canonicalizeNarrowNans(std::vector<uint8_t> &bytes, kv::KvValueType type) {
  if (type == kv::KvValueType::F32)
    return;
  bool bf16 = type == kv::KvValueType::BF16;
  uint16_t exponent = bf16 ? 0x7F80 : 0x7C00;
  uint16_t quietNan = bf16 ? 0x7FC0 : 0x7E00;
  for (size_t offset = 0; offset + 1 < bytes.size(); offset += 2) {
    uint16_t bits;
    std::memcpy(&bits, bytes.data() + offset, 2);
    if ((bits & 0x7FFF) > exponent)
      std::memcpy(bytes.data() + offset, &quietNan, 2);
  }
}

KvCase makeCase(const std::string &schemeText, bool paged, kv::KvValueType type,
                int64_t headDim) {
  std::string error;
  std::string text = "kv_append " + schemeText +
                     " from=" + std::string(kv::kvValueTypeName(type)) +
                     " layout=" + (paged ? "paged" : "contiguous") +
                     " heads=3 head_dim=" + std::to_string(headDim);
  std::optional<kv::KvKernelSpec> spec = kv::parseKvKernelSpec(text, &error);
  if (!spec)
    throw std::runtime_error(text + ": " + error);
  KvCase setup;
  setup.appendSpec = *spec;
  int64_t count = setup.batch * setup.heads * setup.tokens * headDim;
  std::vector<float> normal = kv::normalSamples(count, 0x6B76u + headDim);
  for (int64_t index = 0; index < count; ++index) {
    int64_t channel = index % headDim;
    int64_t token = (index / headDim) % setup.tokens;
    int64_t head = (index / headDim / setup.tokens) % setup.heads;
    int64_t sequence = index / headDim / setup.tokens / setup.heads;
    float value = normal[index];
    if (channel % 13 == 5)
      value *= 40.0f; // an outlier channel
    if (sequence == 0 && head == 0 && token == 1)
      value = 0.0f; // all-zero groups: the scale comes from eps
    if (sequence == 0 && head == 1 && token == 2)
      value *= 1e-7f; // tiny values, subnormal in f16
    if (sequence == 1 && head == 2 && token == 3 && channel == 2)
      value = std::numeric_limits<float>::quiet_NaN();
    if (sequence == 1 && head == 1 && token == 0 && channel == headDim - 1)
      value = std::numeric_limits<float>::infinity(); // the ragged group
    uint16_t bits = type == kv::KvValueType::BF16 ? floatToBFloat16(value)
                                                  : floatToHalf(value);
    setup.inputBits.push_back(bits);
    setup.inputValues.push_back(type == kv::KvValueType::BF16
                                    ? bfloat16ToFloat(bits)
                                    : halfToFloat(bits));
  }
  // Small static scales: the outliers overflow FP8 and saturate.
  if (!spec->scheme.isInt8())
    setup.fp8Scales = spec->scheme.perHead
                          ? std::vector<float>{0.01f, 0.37f, 0.005f}
                          : std::vector<float>{0.03f};
  return setup;
}

int64_t KvCase::rowOffset(int64_t sequence, int64_t head, int64_t token,
                          int64_t width) const {
  int64_t position = positions[sequence] + token;
  if (position < 0)
    return -1;
  if (!paged())
    return position < capacity
               ? ((sequence * heads + head) * capacity + position) * width
               : -1;
  int64_t block = position / kv::kPageTokens;
  if (block >= maxBlocks)
    return -1;
  int32_t page = blockTable[sequence * maxBlocks + block];
  if (page < 0 || page >= pages)
    return -1;
  return ((page * heads + head) * kv::kPageTokens +
          position % kv::kPageTokens) *
         width;
}

KvCacheBuffers KvCase::emptyCache() const {
  KvCacheBuffers cache;
  int64_t rows = paged() ? pages : batch;
  int64_t slots = paged() ? kv::kPageTokens : capacity;
  cache.codeShape = {rows, heads, slots, headDim()};
  cache.codes.assign(rows * heads * slots * headDim(), 0x5A);
  if (appendSpec.scheme.isInt8()) {
    int64_t width = appendSpec.scaleWidth();
    cache.scaleShape = {rows, heads, slots, width};
    cache.scales =
        toBytes(std::vector<float>(rows * heads * slots * width, -7.0f));
  } else {
    cache.scaleShape = {int64_t(fp8Scales.size())};
    cache.scales = toBytes(fp8Scales);
  }
  return cache;
}

namespace {
struct ReferenceTokens {
  std::vector<uint8_t> codes; ///< [batch, heads, tokens, head_dim]
  std::vector<float> scales;  ///< int8: [batch, heads, tokens, width]
  std::vector<float> dequantized;
};

ReferenceTokens reference(const KvCase &setup) {
  std::vector<int64_t> shape = {setup.batch, setup.heads, setup.tokens,
                                setup.headDim()};
  std::string error;
  ReferenceTokens result;
  const kv::KvSchemeParams &scheme = setup.appendSpec.scheme;
  if (scheme.isInt8()) {
    auto tensor =
        kv::quantizeInt8Groups(setup.inputValues, shape, scheme.int8, &error);
    if (!tensor)
      throw std::runtime_error(error);
    result.codes.assign(tensor->codes.begin(), tensor->codes.end());
    result.scales = tensor->scales;
    result.dequantized = kv::dequantizeInt8Groups(*tensor);
    return result;
  }
  auto tensor = kv::quantizeFp8Kv(
      setup.inputValues, shape,
      kv::Fp8KvOptions(scheme.fp8Format(), scheme.perHead ? 1 : -1),
      setup.fp8Scales, &error);
  if (!tensor)
    throw std::runtime_error(error);
  result.codes = tensor->codes;
  result.dequantized = kv::dequantizeFp8Kv(*tensor);
  return result;
}
} // namespace

KvCacheBuffers KvCase::expectedCache() const {
  KvCacheBuffers cache = emptyCache();
  ReferenceTokens tokensRef = reference(*this);
  int64_t width = appendSpec.scaleWidth();
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t t = 0; t < tokens; ++t) {
        int64_t row = (b * heads + h) * tokens + t;
        int64_t codeOffset = rowOffset(b, h, t, headDim());
        if (codeOffset < 0)
          continue;
        std::memcpy(cache.codes.data() + codeOffset,
                    tokensRef.codes.data() + row * headDim(), headDim());
        if (appendSpec.scheme.isInt8())
          std::memcpy(
              cache.scales.data() + rowOffset(b, h, t, width) * sizeof(float),
              tokensRef.scales.data() + row * width, width * sizeof(float));
      }
  return cache;
}

std::vector<compiler::KvBuffer> KvCase::appendBuffers(KvCacheBuffers &cache) {
  std::vector<compiler::KvBuffer> buffers = {
      {inputBits.data(), {batch, heads, tokens, headDim()}},
      {cache.codes.data(), cache.codeShape},
      {cache.scales.data(), cache.scaleShape},
      {positions.data(), {batch}}};
  if (paged())
    buffers.push_back({blockTable.data(), {batch, maxBlocks}});
  return buffers;
}

kv::KvKernelSpec KvCase::dequantizeSpec(kv::KvValueType type) const {
  kv::KvKernelSpec spec = appendSpec;
  spec.op = kv::KvKernelOp::Dequantize;
  spec.valueType = type;
  return spec;
}

size_t KvCase::valueBytes(kv::KvValueType type) const {
  size_t elements = batch * heads * tokens * headDim();
  return elements * (type == kv::KvValueType::F32 ? 4 : 2);
}

std::vector<compiler::KvBuffer>
KvCase::dequantizeBuffers(KvCacheBuffers &cache, std::vector<uint8_t> &output) {
  std::vector<compiler::KvBuffer> buffers = {
      {cache.codes.data(), cache.codeShape},
      {cache.scales.data(), cache.scaleShape},
      {positions.data(), {batch}},
      {output.data(), {batch, heads, tokens, headDim()}}};
  if (paged())
    buffers.push_back({blockTable.data(), {batch, maxBlocks}});
  return buffers;
}

std::vector<uint8_t> KvCase::expectedDequantized(kv::KvValueType type) const {
  std::vector<float> values = reference(*this).dequantized;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t t = 0; t < tokens; ++t)
        if (rowOffset(b, h, t, 1) < 0)
          std::fill_n(values.begin() +
                          ((b * heads + h) * tokens + t) * headDim(),
                      headDim(), 0.0f);
  if (type == kv::KvValueType::F32)
    return toBytes(values);
  std::vector<uint16_t> narrow;
  for (float value : values)
    narrow.push_back(type == kv::KvValueType::BF16 ? floatToBFloat16(value)
                                                   : floatToHalf(value));
  return toBytes(narrow);
}

KvCacheBuffers appendAndCheck(const KvRunner &run, KvCase &setup) {
  KvCacheBuffers cache = setup.emptyCache();
  REQUIRE("" == run(setup.appendSpec, setup.appendBuffers(cache)));
  KvCacheBuffers expected = setup.expectedCache();
  CHECK(firstDifference(cache.codes, expected.codes) == "");
  CHECK(firstDifference(cache.scales, expected.scales) == "");
  return cache;
}

void checkAppendAndDequantize(const KvRunner &run,
                              const std::string &schemeText, bool paged,
                              kv::KvValueType type, int64_t headDim) {
  KvCase setup = makeCase(schemeText, paged, type, headDim);
  INFO(formatKvKernelSpec(setup.appendSpec));
  KvCacheBuffers cache = appendAndCheck(run, setup);
  for (kv::KvValueType outType :
       {kv::KvValueType::F32, kv::KvValueType::F16, kv::KvValueType::BF16}) {
    kv::KvKernelSpec readSpec = setup.dequantizeSpec(outType);
    INFO(formatKvKernelSpec(readSpec));
    std::vector<uint8_t> output(setup.valueBytes(outType), 0xEE);
    REQUIRE("" == run(readSpec, setup.dequantizeBuffers(cache, output)));
    std::vector<uint8_t> expectedOutput = setup.expectedDequantized(outType);
    canonicalizeNarrowNans(output, outType);
    canonicalizeNarrowNans(expectedOutput, outType);
    CHECK(firstDifference(output, expectedOutput) == "");
  }
}

void checkAppendSkipsOutsideTheCache(const KvRunner &run) {
  // Contiguous: sequence 1 starts 2 tokens before the end of its capacity;
  // paged: sequence 0 reaches a table entry of -1 and sequence 1 runs past
  // the table. Only the tokens that fit are written (expectedCache drops
  // the others), nothing else changes.
  for (bool paged : {false, true}) {
    INFO("paged=" << paged);
    KvCase setup = makeCase("kv_int8_g8 convention=divisor", paged,
                            kv::KvValueType::F16, 16);
    if (paged)
      setup.positions = {int32_t(kv::kPageTokens) - 2,
                         2 * int32_t(kv::kPageTokens) - 2};
    else
      setup.positions[1] = int32_t(setup.capacity) - 2;
    appendAndCheck(run, setup);
  }
}

void checkEveryLayoutAndType(const KvRunner &run, const std::string &schemeText,
                             int64_t headDim) {
  for (bool paged : {false, true})
    for (kv::KvValueType type : {kv::KvValueType::F16, kv::KvValueType::BF16}) {
      INFO(schemeText << " paged=" << paged << " head_dim=" << headDim);
      checkAppendAndDequantize(run, schemeText, paged, type, headDim);
    }
}

} // namespace lowbit::kvtest
