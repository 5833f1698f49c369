//===- KvAttentionCase.cpp - One decode-attention test case ---------------===//

#include "tests/kvattention/KvAttentionCase.h"

#include "format/Codec.h"
#include "kv/KvDecodeOrder.h"
#include "kv/KvPaged.h"
#include "kv/KvQuantize.h"
#include "runtime/compiler/KvAttentionCompiler.h"
#include "tests/reference/TestHelpers.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

namespace lowbit::testing {

namespace {

using test::Random;

struct Quantized {
  std::vector<int8_t> codes;
  std::vector<float> scales, dequantized;
  /// FP8: decode(code) per element, and the scale of each kv head.
  std::vector<float> decoded, headScales;
};

Quantized quantize(const kv::KvAttentionSpec &spec,
                   const std::vector<float> &input,
                   const std::vector<int64_t> &shape) {
  std::string error;
  Quantized result;
  if (!spec.isFp8()) {
    kv::Int8GroupOptions options;
    options.groupSize = spec.groupSize;
    options.convention = spec.convention;
    auto tensor = kv::quantizeInt8Groups(input, shape, options, &error);
    INFO(error);
    REQUIRE(tensor);
    result.codes = tensor->codes;
    result.scales = tensor->scales;
    result.dequantized = kv::dequantizeInt8Groups(*tensor);
    return result;
  }
  Format format =
      *lookupFormat(spec.scheme == kv::KvScheme::Fp8E4M3 ? "e4m3" : "e5m2");
  // Calibrated as engines do: the head's (or tensor's) amax at the format's
  // largest value.
  int64_t heads = spec.perHead ? shape[1] : 1;
  int64_t perHead = int64_t(input.size()) / (shape[0] * heads);
  std::vector<float> scales(heads, 0.0f);
  for (size_t i = 0; i < input.size(); ++i) {
    int64_t head = spec.perHead ? (int64_t(i) / perHead) % heads : 0;
    scales[head] = std::max(scales[head], std::fabs(input[i]));
  }
  for (float &scale : scales)
    scale = float(scale / format.maxValue());
  auto tensor = kv::quantizeFp8Kv(
      input, shape, kv::Fp8KvOptions(format, spec.perHead ? 1 : -1), scales,
      &error);
  INFO(error);
  REQUIRE(tensor);
  result.codes.assign(tensor->codes.begin(), tensor->codes.end());
  result.scales = scales;
  result.dequantized = kv::dequantizeFp8Kv(*tensor);
  for (int8_t code : result.codes)
    result.decoded.push_back(format.decodeToFloat(uint8_t(code)));
  for (int64_t head = 0; head < shape[1]; ++head)
    result.headScales.push_back(scales[spec.perHead ? head : 0]);
  return result;
}

} // namespace

AttentionCase AttentionCase::make(const std::string &specText,
                                  std::vector<int64_t> lengths, uint64_t seed,
                                  float queryScale) {
  std::string error;
  auto parsed = kv::parseKvAttentionSpec(specText, &error);
  INFO(specText << ": " << error);
  REQUIRE(parsed);
  AttentionCase data;
  data.spec = *parsed;
  const kv::KvAttentionSpec &spec = data.spec;
  const int64_t batch = int64_t(lengths.size()), dim = spec.headDim;
  const int64_t tokens = *std::max_element(lengths.begin(), lengths.end()) + 3;
  data.lengths = lengths;
  data.shape = {batch, spec.qHeads, spec.kvHeads, dim, tokens};
  Random random(seed);

  // K with one outlier channel, V, q: uniform, fixed seed.
  std::vector<int64_t> cacheShape = {batch, spec.kvHeads, tokens, dim};
  std::vector<float> keys(batch * spec.kvHeads * tokens * dim),
      values(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    keys[i] = 3.0f * random.uniform() + (i % dim == 5 ? 8.0f : 0.0f);
    values[i] = 2.0f * random.uniform();
  }
  Quantized k = quantize(spec, keys, cacheShape);
  Quantized v = quantize(spec, values, cacheShape);
  data.keys = k.dequantized;
  data.values = v.dequantized;
  data.decodedKeys = k.decoded, data.decodedValues = v.decoded;
  data.keyHeadScales = k.headScales, data.valueHeadScales = v.headScales;

  data.queryF32.resize(batch * spec.qHeads * dim);
  for (float &q : data.queryF32) {
    float value = 2.0f * random.uniform() * queryScale;
    uint16_t bits = 0;
    switch (spec.query) {
    case kv::QueryDtype::F32:
      data.query.resize(data.query.size() + 4);
      std::memcpy(data.query.data() + data.query.size() - 4, &value, 4);
      q = value;
      continue;
    case kv::QueryDtype::F16:
      bits = floatToHalf(value);
      q = halfToFloat(bits);
      break;
    case kv::QueryDtype::BF16:
      bits = floatToBFloat16(value);
      q = bfloat16ToFloat(bits);
      break;
    }
    data.query.resize(data.query.size() + 2);
    std::memcpy(data.query.data() + data.query.size() - 2, &bits, 2);
  }
  for (int64_t length : lengths)
    data.seqLens.push_back(int32_t(length));

  // Positions past a sequence's length are poisoned: NaN codes (0x7f in
  // e4m3 and e5m2) and, for int8, NaN scales. A kernel that reads one
  // returns NaN.
  const int64_t width = spec.isFp8() ? 0 : spec.scaleWidth();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (Quantized *side : {&k, &v})
    for (int64_t row = 0; row < batch * spec.kvHeads * tokens; ++row) {
      if (row % tokens < lengths[row / (spec.kvHeads * tokens)])
        continue;
      std::fill_n(side->codes.begin() + row * dim, dim, int8_t(0x7f));
      if (width)
        std::fill_n(side->scales.begin() + row * width, width, nan);
    }

  if (!spec.paged) {
    data.keyCodes = k.codes, data.valueCodes = v.codes;
    data.keyScales = k.scales, data.valueScales = v.scales;
    return data;
  }
  // Paged: pages in a shuffled order, two spare pages, -1 where a sequence
  // does not reach.
  data.maxBlocks = (tokens + kv::kPageTokens - 1) / kv::kPageTokens;
  data.pages = batch * data.maxBlocks + 2;
  std::vector<int32_t> order(data.pages);
  std::iota(order.begin(), order.end(), 0);
  for (size_t i = order.size(); i > 1; --i)
    std::swap(order[i - 1], order[random.next() % i]);
  kv::PagedLayout layout;
  layout.pages = data.pages;
  layout.kvHeads = spec.kvHeads;
  layout.batch = batch;
  layout.maxBlocks = data.maxBlocks;
  layout.blockTable.assign(batch * data.maxBlocks, -1);
  int64_t next = 0;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t block = 0; block * kv::kPageTokens < lengths[b]; ++block)
      layout.blockTable[b * data.maxBlocks + block] = order[next++];
  data.blockTable = layout.blockTable;
  auto page = [&](const Quantized &side, std::vector<int8_t> &codes,
                  std::vector<float> &scales) {
    codes.assign(data.pages * spec.kvHeads * kv::kPageTokens * dim,
                 int8_t(0x7f));
    layout.width = dim;
    kv::PagedLayout scaleLayout = layout;
    scaleLayout.width = width;
    scales = width ? std::vector<float>(scaleLayout.storageSize(), nan)
                   : side.scales;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t h = 0; h < spec.kvHeads; ++h)
        for (int64_t t = 0; t < lengths[b]; ++t) {
          int64_t row = (b * spec.kvHeads + h) * tokens + t;
          std::copy_n(side.codes.begin() + row * dim, dim,
                      codes.begin() + layout.offset(b, h, t));
          if (width)
            std::copy_n(side.scales.begin() + row * width, width,
                        scales.begin() + scaleLayout.offset(b, h, t));
        }
  };
  page(k, data.keyCodes, data.keyScales);
  page(v, data.valueCodes, data.valueScales);
  return data;
}

size_t AttentionCase::outputSize() const {
  return shape.batch * shape.qHeads * shape.headDim;
}

size_t AttentionCase::partialsSize() const {
  std::vector<compiler::HostBuffer> buffers = hostBuffers(nullptr, nullptr);
  return buffers.back().rows * buffers.back().cols;
}

std::vector<compiler::HostBuffer>
AttentionCase::hostBuffers(float *output, float *partials) const {
  compiler::KvAttentionSizes sizes{shape.batch, shape.maxTokens, pages,
                                   maxBlocks};
  auto shapes = compiler::kvAttentionShapes(spec, sizes);
  std::vector<void *> data = {const_cast<uint8_t *>(query.data()),
                              const_cast<int8_t *>(keyCodes.data()),
                              const_cast<float *>(keyScales.data()),
                              const_cast<int8_t *>(valueCodes.data()),
                              const_cast<float *>(valueScales.data()),
                              const_cast<int32_t *>(seqLens.data())};
  if (spec.paged)
    data.push_back(const_cast<int32_t *>(blockTable.data()));
  data.push_back(output);
  data.push_back(partials);
  std::vector<compiler::HostBuffer> buffers;
  for (size_t i = 0; i < data.size(); ++i)
    buffers.push_back({data[i], shapes[i][0], shapes[i][1]});
  return buffers;
}

std::vector<emulator::EmulatorBuffer>
AttentionCase::emulatorBuffers(float *output, float *partials) const {
  std::vector<compiler::KvKernelParam> params =
      compiler::kvAttentionParams(spec);
  std::vector<compiler::HostBuffer> host = hostBuffers(output, partials);
  std::vector<emulator::EmulatorBuffer> buffers;
  for (size_t i = 0; i < host.size(); ++i) {
    const std::string &type = params[i].elementType;
    size_t bytes = type == "i8" ? 1 : (type == "f16" || type == "bf16") ? 2 : 4;
    buffers.push_back({host[i].data, host[i].rows, host[i].cols, bytes,
                       params[i].isResult, params[i].name});
  }
  return buffers;
}

std::vector<float> AttentionCase::kernelOrderReference() const {
  if (spec.isFp8())
    return kv::decodeAttentionKernelOrder(
        shape, queryF32, decodedKeys, decodedValues, lengths, spec.softmaxScale,
        spec.splitTokens, keyHeadScales, valueHeadScales);
  return kv::decodeAttentionKernelOrder(shape, queryF32, keys, values, lengths,
                                        spec.softmaxScale, spec.splitTokens);
}

std::vector<double> AttentionCase::float64Reference() const {
  return kv::decodeAttentionF64(shape, queryF32, keys, values, lengths,
                                spec.softmaxScale);
}

std::vector<float> AttentionCase::runEmulator(const std::string &chip) const {
  std::string error;
  std::optional<Target> target = parseTarget(chip, &error);
  INFO(error);
  REQUIRE(target);
  auto gpu = compiler::kvAttentionGpuText(spec);
  if (!gpu)
    FAIL(llvm::toString(gpu.takeError()));
  auto program = emulator::EmulatedProgram::compileText(*gpu, *target);
  if (!program)
    FAIL(program.error().message);
  CHECK((*program)->plan().steps.size() == 2);
  std::vector<float> output(outputSize(), -1.0f),
      partials(partialsSize(), -1.0f);
  std::vector<emulator::EmulatorBuffer> buffers =
      emulatorBuffers(output.data(), partials.data());
  emulator::Device device;
  Status status = (*program)->run(device, buffers);
  if (!status)
    FAIL(status.error().message);
  return output;
}

std::vector<float> AttentionCase::runCpu() const {
  auto kernel = compiler::compileKvAttentionForCpu(spec);
  if (!kernel)
    FAIL(llvm::toString(kernel.takeError()));
  std::vector<float> output(outputSize(), -1.0f),
      partials(partialsSize(), -1.0f);
  llvm::Error error =
      (*kernel)->run(hostBuffers(output.data(), partials.data()));
  if (error)
    FAIL(llvm::toString(std::move(error)));
  return output;
}

} // namespace lowbit::testing
