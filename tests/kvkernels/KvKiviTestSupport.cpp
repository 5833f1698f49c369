//===- KvKiviTestSupport.cpp - KIVI kernels against kv/KvKivi.h -----------===//

#include "KvKiviTestSupport.h"

#include "KvKernelTestSupport.h"

#include "format/Codec.h"
#include "kv/KvKivi.h"
#include "kv/KvPaged.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <numeric>

namespace lowbit::kvtest {

namespace {

constexpr int64_t kBatch = 2, kHeads = 2;
constexpr uint8_t kCodeSentinel = 0x5A;
constexpr float kScaleSentinel = -7.0f, kZeroSentinel = -5.0f;
/// A NaN in every ring slot: a kernel that reads a slot it never wrote
/// makes a NaN the reference does not have.
constexpr uint16_t kRingSentinel = 0x7E01;

int64_t ceilDiv(int64_t value, int64_t divisor) {
  return (value + divisor - 1) / divisor;
}

uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

/// The cache buffers of one side, in the kernel ABI, and the reference
/// streams fed the same tokens.
class KiviCache {
public:
  KiviCache(const KiviCaseConfig &config, int64_t maxTokens)
      : config(config), side(config.side), headDim(config.headDim),
        codeWidth(side.codeWidth(headDim)),
        paramWidth(side.paramWidth(headDim)) {
    bool paged = config.layout == kv::KvLayout::Paged;
    if (paged) {
      maxBlocks = ceilDiv(maxTokens, kv::kPageTokens);
      // One page more than the sequences use: page 0 is never mapped.
      pages = kBatch * maxBlocks + 1;
      for (int64_t seq = 0; seq < kBatch; ++seq)
        for (int64_t block = 0; block < maxBlocks; ++block)
          table.push_back(int32_t(pages - 1 - (block * kBatch + seq)));
      if (config.holes)
        table[2] = -1; // sequence 0's tokens [32, 48) have no page
      codeShape = {pages, kHeads, kv::kPageTokens, codeWidth};
      paramShape = {pages, kHeads,
                    side.perChannel ? side.pageParamRows() : kv::kPageTokens,
                    paramWidth};
    } else {
      capacity = maxTokens - (config.holes ? 20 : 0);
      codeShape = {kBatch, kHeads, capacity, codeWidth};
      paramShape = {kBatch, kHeads,
                    side.perChannel ? ceilDiv(capacity, side.groupSize)
                                    : capacity,
                    paramWidth};
    }
    ringShape = {kBatch, kHeads, side.residualSlots(), headDim};
    codes.assign(product(codeShape), kCodeSentinel);
    scales.assign(product(paramShape), floatBits(kScaleSentinel));
    zeros.assign(product(paramShape), floatBits(kZeroSentinel));
    ring.assign(product(ringShape), kRingSentinel);
    lengths.assign(kBatch, 0);
    std::string error;
    for (int64_t stream = 0; stream < kBatch * kHeads; ++stream)
      streams.push_back(
          *kv::KiviStream::create(side.options(), headDim, &error));
  }

  kv::KiviKernelSpec spec(kv::KvKernelOp op) const {
    kv::KiviKernelSpec result;
    result.op = op;
    result.side = side;
    result.residualType = config.type;
    result.layout = config.layout;
    result.heads = kHeads;
    result.headDim = headDim;
    return result;
  }

  /// Appends `tokens` new tokens to sequence `only` (-1: every sequence)
  /// through the kernel and the reference.
  void append(const KiviRunner &run, int64_t tokens, int64_t only) {
    int64_t batch = only < 0 ? kBatch : 1;
    std::vector<uint16_t> input;
    for (int64_t seq = 0; seq < batch; ++seq)
      for (int64_t head = 0; head < kHeads; ++head)
        for (int64_t token = 0; token < tokens; ++token)
          for (int64_t channel = 0; channel < headDim; ++channel)
            input.push_back(valueAt(
                only < 0 ? seq : only, head,
                lengths[size_t(only < 0 ? seq : only)] + token, channel));
    std::vector<compiler::KvBuffer> buffers = {
        {input.data(), {batch, kHeads, tokens, headDim}}};
    appendCacheBuffers(buffers, only);
    INFO(kv::formatKiviKernelSpec(spec(kv::KvKernelOp::Append)));
    REQUIRE(run(spec(kv::KvKernelOp::Append), buffers) == "");
    // The reference: the same tokens, widened exactly, as keys and values.
    for (int64_t seq = 0; seq < batch; ++seq) {
      int64_t sequence = only < 0 ? seq : only;
      for (int64_t head = 0; head < kHeads; ++head) {
        std::vector<float> values;
        size_t begin = size_t((seq * kHeads + head) * tokens * headDim);
        for (size_t index = 0; index < size_t(tokens * headDim); ++index)
          values.push_back(widen(input[begin + index]));
        std::string error;
        REQUIRE(stream(sequence, head).append(values, values, tokens, &error));
      }
      lengths[size_t(sequence)] += int32_t(tokens);
    }
  }

  /// Every byte of codes, scales and zeros equals the sentinel cache with
  /// the reference's quantized groups written at their rows.
  void checkQuantized() const {
    std::vector<uint8_t> expectedCodes(codes.size(), kCodeSentinel);
    std::vector<uint32_t> expectedScales(scales.size(),
                                         floatBits(kScaleSentinel));
    std::vector<uint32_t> expectedZeros(zeros.size(), floatBits(kZeroSentinel));
    int64_t group = side.groupSize;
    for (int64_t seq = 0; seq < kBatch; ++seq)
      for (int64_t head = 0; head < kHeads; ++head) {
        const kv::KiviStream &reference = streamAt(seq, head);
        REQUIRE(reference.quantizedTokenCount() ==
                side.quantizedPrefix(lengths[size_t(seq)]));
        const std::vector<kv::KiviTile> &tiles =
            side.perChannel ? reference.keyGroups() : reference.valueGroups();
        for (size_t index = 0; index < tiles.size(); ++index) {
          const kv::KiviTile &tile = tiles[index];
          int64_t start = int64_t(index) * group;
          REQUIRE(tile.codes.size() == size_t(group * codeWidth));
          for (int64_t token = 0; token < group; ++token) {
            int64_t row = tokenRow(seq, head, start + token);
            if (row < 0)
              continue;
            std::copy_n(tile.codes.begin() + token * codeWidth, codeWidth,
                        expectedCodes.begin() + row * codeWidth);
            if (side.perChannel)
              continue;
            for (int64_t column = 0; column < paramWidth; ++column) {
              expectedScales[size_t(row * paramWidth + column)] =
                  floatBits(tile.scales[size_t(token * paramWidth + column)]);
              expectedZeros[size_t(row * paramWidth + column)] =
                  floatBits(tile.zeros[size_t(token * paramWidth + column)]);
            }
          }
          if (side.perChannel) {
            int64_t row = groupRow(seq, head, start);
            for (int64_t channel = 0; channel < headDim && row >= 0;
                 ++channel) {
              expectedScales[size_t(row * headDim + channel)] =
                  floatBits(tile.scales[size_t(channel)]);
              expectedZeros[size_t(row * headDim + channel)] =
                  floatBits(tile.zeros[size_t(channel)]);
            }
          }
        }
      }
    CHECK(firstDifference(codes, expectedCodes) == "");
    CHECK(firstDifference(asBytes(scales), asBytes(expectedScales)) == "");
    CHECK(firstDifference(asBytes(zeros), asBytes(expectedZeros)) == "");
  }

  /// Dequantize of tokens [start[b], start[b] + count) to f32 equals the
  /// reference's keys()/values() (0 outside [0, length)); to f16 and bf16
  /// its round-to-nearest-even narrowing.
  void checkDequantize(const KiviRunner &run, std::vector<int32_t> start,
                       int64_t count, kv::KvValueType outputType) {
    kv::KiviKernelSpec readSpec = spec(kv::KvKernelOp::Dequantize);
    readSpec.outputType = outputType;
    size_t elements = size_t(kBatch * kHeads * count * headDim);
    std::vector<float> expected(elements, 0.0f);
    for (int64_t seq = 0; seq < kBatch; ++seq)
      for (int64_t head = 0; head < kHeads; ++head) {
        const kv::KiviStream &reference = streamAt(seq, head);
        std::vector<float> tokens =
            side.perChannel ? reference.keys() : reference.values();
        for (int64_t token = 0; token < count; ++token) {
          int64_t position = start[size_t(seq)] + token;
          if (position < 0 || position >= lengths[size_t(seq)])
            continue;
          // A quantized token without a row (or group row) reads 0.
          int64_t group = position / side.groupSize * side.groupSize;
          if (position < reference.quantizedTokenCount() &&
              (tokenRow(seq, head, position) < 0 ||
               (side.perChannel && groupRow(seq, head, group) < 0)))
            continue;
          std::copy_n(tokens.begin() + position * headDim, headDim,
                      expected.begin() +
                          ((seq * kHeads + head) * count + token) * headDim);
        }
      }
    std::vector<uint8_t> expectedBytes, output;
    if (outputType == kv::KvValueType::F32) {
      expectedBytes = asBytes(expected);
      output.assign(elements * 4, 0xEE);
    } else {
      std::vector<uint16_t> narrow;
      for (float value : expected)
        narrow.push_back(outputType == kv::KvValueType::BF16
                             ? floatToBFloat16(value)
                             : floatToHalf(value));
      expectedBytes = asBytes(narrow);
      output.assign(elements * 2, 0xEE);
    }
    std::vector<compiler::KvBuffer> buffers = {
        {codes.data(), codeShape},
        {scales.data(), paramShape},
        {zeros.data(), paramShape},
        {ring.data(), ringShape},
        {start.data(), {kBatch}},
        {lengths.data(), {kBatch}},
        {output.data(), {kBatch, kHeads, count, headDim}}};
    if (!table.empty())
      buffers.push_back({table.data(), {kBatch, maxBlocks}});
    INFO(kv::formatKiviKernelSpec(readSpec));
    REQUIRE(run(readSpec, buffers) == "");
    if (outputType != kv::KvValueType::F32) {
      canonicalizeNarrowNans(output, outputType);
      canonicalizeNarrowNans(expectedBytes, outputType);
    }
    CHECK(firstDifference(output, expectedBytes) == "");
  }

  int32_t length(int64_t seq) const { return lengths[size_t(seq)]; }
  std::vector<uint8_t> cacheBytes() const {
    std::vector<uint8_t> bytes = codes;
    std::vector<uint8_t> scaleBytes = asBytes(scales);
    bytes.insert(bytes.end(), scaleBytes.begin(), scaleBytes.end());
    std::vector<uint8_t> zeroBytes = asBytes(zeros);
    bytes.insert(bytes.end(), zeroBytes.begin(), zeroBytes.end());
    return bytes;
  }

private:
  static size_t product(const std::vector<int64_t> &shape) {
    return size_t(std::accumulate(shape.begin(), shape.end(), int64_t(1),
                                  std::multiplies<int64_t>()));
  }
  template <typename T>
  static std::vector<uint8_t> asBytes(const std::vector<T> &values) {
    std::vector<uint8_t> bytes(values.size() * sizeof(T));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return bytes;
  }

  float widen(uint16_t bits) const {
    return config.type == kv::KvValueType::BF16 ? bfloat16ToFloat(bits)
                                                : halfToFloat(bits);
  }

  /// Token `position` of (seq, head), a function of where it is (so
  /// chunked and whole appends see the same tokens), with what matters: an
  /// outlier channel (KIVI's reason for per-channel keys), an all-zero
  /// channel, a positive-only channel, and now and then a NaN.
  uint16_t valueAt(int64_t seq, int64_t head, int64_t position,
                   int64_t channel) const {
    // splitmix64 of the coordinates.
    uint64_t state =
        uint64_t(((seq * kHeads + head) * 4096 + position) * 4096 + channel) +
        0x9E3779B97F4A7C15ull;
    state = (state ^ (state >> 30)) * 0xBF58476D1CE4E5B9ull;
    state = (state ^ (state >> 27)) * 0x94D049BB133111EBull;
    state ^= state >> 31;
    float unit = float(state >> 40) / float(1ull << 24); // [0, 1)
    float value = (unit - 0.5f) * 4.0f;
    if (channel == 1)
      value *= 40.0f;
    if (channel == 3)
      value = 0.0f;
    if (channel == 5)
      value = std::fabs(value) + 0.25f;
    if ((state & 0xFFFF) % 331 == 0)
      value = NAN;
    return config.type == kv::KvValueType::BF16 ? floatToBFloat16(value)
                                                : floatToHalf(value);
  }

  kv::KiviStream &stream(int64_t seq, int64_t head) {
    return streams[size_t(seq * kHeads + head)];
  }
  const kv::KiviStream &streamAt(int64_t seq, int64_t head) const {
    return streams[size_t(seq * kHeads + head)];
  }

  /// The flat row index (in rows of the codes' or per-token parameters'
  /// width) of token `position` of (seq, head); -1 outside the cache.
  int64_t tokenRow(int64_t seq, int64_t head, int64_t position) const {
    if (table.empty())
      return position >= capacity ? -1
                                  : (seq * kHeads + head) * capacity + position;
    int64_t page = table[size_t(seq * maxBlocks + position / kv::kPageTokens)];
    if (page < 0)
      return -1;
    return (page * kHeads + head) * kv::kPageTokens +
           position % kv::kPageTokens;
  }

  /// The flat per-channel parameter row of the group starting at `start`;
  /// -1 outside the cache.
  int64_t groupRow(int64_t seq, int64_t head, int64_t start) const {
    if (table.empty())
      return start / side.groupSize >= paramShape[2]
                 ? -1
                 : (seq * kHeads + head) * paramShape[2] +
                       start / side.groupSize;
    int64_t page = table[size_t(seq * maxBlocks + start / kv::kPageTokens)];
    if (page < 0)
      return -1;
    return (page * kHeads + head) * paramShape[2] +
           (start % kv::kPageTokens) / side.groupSize;
  }

  /// The cache buffers after the input: all sequences, or a batch-1 view
  /// of sequence `only` (its rows of the contiguous buffers, or its table
  /// row over the shared pages).
  void appendCacheBuffers(std::vector<compiler::KvBuffer> &buffers,
                          int64_t only) {
    bool one = only >= 0;
    int64_t seq = one ? only : 0, batch = one ? 1 : kBatch;
    auto view = [&](auto &storage, std::vector<int64_t> shape, bool shared) {
      size_t stride = product(shape) / size_t(shape[0]);
      if (!shared)
        shape[0] = batch;
      return compiler::KvBuffer{
          storage.data() + (shared ? 0 : size_t(seq) * stride), shape};
    };
    bool paged = !table.empty();
    buffers.push_back(view(codes, codeShape, paged));
    buffers.push_back(view(scales, paramShape, paged));
    buffers.push_back(view(zeros, paramShape, paged));
    buffers.push_back(view(ring, ringShape, false));
    buffers.push_back(view(lengths, {kBatch}, false));
    if (paged)
      buffers.push_back(view(table, {kBatch, maxBlocks}, false));
  }

  KiviCaseConfig config;
  kv::KiviSide side;
  int64_t headDim, codeWidth, paramWidth;
  int64_t capacity = 0, pages = 0, maxBlocks = 0;
  std::vector<int64_t> codeShape, paramShape, ringShape;
  std::vector<uint8_t> codes;
  std::vector<uint32_t> scales, zeros;
  std::vector<uint16_t> ring;
  std::vector<int32_t> lengths, table;
  std::vector<kv::KiviStream> streams;
};

} // namespace

std::vector<uint8_t> checkKiviAppends(const KiviRunner &run,
                                      const KiviCaseConfig &config) {
  int64_t total =
      std::accumulate(config.chunks.begin(), config.chunks.end(), int64_t(0));
  KiviCache cache(config, total + config.headStart);
  if (config.headStart > 0)
    cache.append(run, config.headStart, /*only=*/1);
  for (int64_t chunk : config.chunks) {
    cache.append(run, chunk, /*only=*/-1);
    cache.checkQuantized();
    int64_t longest = std::max(cache.length(0), cache.length(1));
    cache.checkDequantize(run, {0, 0}, longest + 2, kv::KvValueType::F32);
  }
  // A range that starts before the sequence and one in its middle.
  cache.checkDequantize(run, {-3, 5}, 20, kv::KvValueType::F32);
  cache.checkDequantize(run, {0, 0}, cache.length(1), kv::KvValueType::F16);
  cache.checkDequantize(run, {0, 0}, cache.length(1), kv::KvValueType::BF16);
  return cache.cacheBytes();
}

void checkKiviEverywhere(const KiviRunner &run, int bits, int64_t groupSize,
                         int64_t residual, int64_t headDim,
                         kv::KvValueType type,
                         const std::vector<int64_t> &chunks) {
  for (kv::KiviZero zero : {kv::KiviZero::Float, kv::KiviZero::Integer})
    for (bool perChannel : {true, false})
      for (kv::KvLayout layout :
           {kv::KvLayout::Contiguous, kv::KvLayout::Paged}) {
        KiviCaseConfig config;
        config.side.zero = zero;
        config.side.bits = bits;
        config.side.groupSize = groupSize;
        config.side.residual = residual;
        config.side.perChannel = perChannel;
        config.layout = layout;
        config.type = type;
        config.headDim = headDim;
        config.chunks = chunks;
        std::vector<uint8_t> chunked = checkKiviAppends(run, config);
        // The same tokens in one append give the same cache bytes.
        config.chunks = {
            std::accumulate(chunks.begin(), chunks.end(), int64_t(0))};
        std::vector<uint8_t> whole = checkKiviAppends(run, config);
        CHECK(firstDifference(chunked, whole) == "");
      }
}

void checkKiviSkipsOutsideTheCache(const KiviRunner &run) {
  for (kv::KiviZero zero : {kv::KiviZero::Float, kv::KiviZero::Integer})
    for (bool perChannel : {true, false})
      for (kv::KvLayout layout :
           {kv::KvLayout::Contiguous, kv::KvLayout::Paged}) {
        KiviCaseConfig config;
        config.side = {4, 5, 0, perChannel, zero};
        config.layout = layout;
        config.headDim = 13;
        config.chunks = {70, 1, 30, 3, 33};
        config.holes = true;
        checkKiviAppends(run, config);
      }
}

} // namespace lowbit::kvtest
