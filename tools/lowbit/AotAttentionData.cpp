//===- AotAttentionData.cpp - lowbit aot: decode attention's data ---------===//
//
// Data (docs/aot.md, "KV and attention entries"): the cache is made by the
// kv/ reference quantizer from random K and V (fixed seed), every position
// a sequence does not reach is poisoned (NaN codes, int8 NaN scales), the
// expected output is the CPU tail's (compileKvAttentionForCpu), and the
// float64 reference (kv::decodeAttentionF64 of the dequantized cache) is
// shipped next to it; the CPU tail's output must be within 1e-3 of it
// before anything is written.
//
//===----------------------------------------------------------------------===//

#include "tools/lowbit/AotKvData.h"

#include "format/Format.h"
#include "kv/KvAttention.h"
#include "kv/KvPaged.h"
#include "kv/KvQuantize.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace lowbit::cli::aotdata {

namespace {

/// The largest relative error (2-norm) the CPU tail's attention output may
/// have against the float64 reference before the data is refused.
constexpr double kCpuTailTolerance = 1e-3;
/// What the runner allows the GPU's attention output against the CPU
/// tail's, per element.
constexpr double kAttentionTolerance = 1e-5;

struct QuantizedSide {
  std::vector<uint8_t> codes;  ///< [batch, kvHeads, maxTokens, dim]
  std::vector<float> scales;   ///< int8: per row; fp8: 1 or kvHeads
  std::vector<float> restored; ///< dequantized, for the float64 reference
};

std::optional<QuantizedSide> quantizeSide(const kv::KvAttentionSpec &spec,
                                          const std::vector<float> &input,
                                          const std::vector<int64_t> &shape,
                                          std::string &error) {
  QuantizedSide side;
  if (!spec.isFp8()) {
    kv::Int8GroupOptions options;
    options.groupSize = spec.groupSize;
    options.convention = spec.convention;
    auto tensor = kv::quantizeInt8Groups(input, shape, options, &error);
    if (!tensor)
      return std::nullopt;
    side.codes.assign(tensor->codes.begin(), tensor->codes.end());
    side.scales = tensor->scales;
    side.restored = kv::dequantizeInt8Groups(*tensor);
    return side;
  }
  Format format =
      *lookupFormat(spec.scheme == kv::KvScheme::Fp8E4M3 ? "e4m3" : "e5m2");
  // Calibrated as engines do: the head's (or tensor's) amax at the
  // format's largest value.
  int64_t heads = spec.perHead ? shape[1] : 1;
  int64_t perHead = int64_t(input.size()) / (shape[0] * heads);
  std::vector<float> scales(size_t(heads), 0.0f);
  for (size_t i = 0; i < input.size(); ++i) {
    int64_t head = spec.perHead ? (int64_t(i) / perHead) % heads : 0;
    scales[size_t(head)] = std::max(scales[size_t(head)], std::fabs(input[i]));
  }
  for (float &scale : scales)
    scale = float(scale / format.maxValue());
  auto tensor = kv::quantizeFp8Kv(
      input, shape, kv::Fp8KvOptions(format, spec.perHead ? 1 : -1), scales,
      &error);
  if (!tensor)
    return std::nullopt;
  side.codes = tensor->codes;
  side.scales = scales;
  side.restored = kv::dequantizeFp8Kv(*tensor);
  return side;
}

} // namespace

/// Sequence lengths: data ragged (T, 2T/3, T/3 for 3 sequences), bench
/// every sequence full.
std::vector<int64_t> attentionLengths(KvAotSize size, bool ragged) {
  std::vector<int64_t> lengths;
  for (int64_t b = 0; b < size.batch; ++b)
    lengths.push_back(ragged ? size.tokens * (size.batch - b) / size.batch
                             : size.tokens);
  return lengths;
}

compiler::KvAttentionSizes attentionSizes(const kv::KvAttentionSpec &spec,
                                          KvAotSize size, bool ragged) {
  compiler::KvAttentionSizes sizes;
  sizes.batch = size.batch;
  sizes.maxTokens = size.tokens;
  if (spec.paged) {
    sizes.maxBlocks = (size.tokens + kv::kPageTokens - 1) / kv::kPageTokens;
    sizes.pages = size.batch * sizes.maxBlocks + (ragged ? 2 : 0);
  }
  return sizes;
}

/// The block table: sequence b's blocks that its length reaches, in pages
/// of `order`; -1 past them.
std::vector<int32_t> attentionTable(const compiler::KvAttentionSizes &sizes,
                                    const std::vector<int64_t> &lengths,
                                    const std::vector<int32_t> &order) {
  std::vector<int32_t> table(size_t(sizes.batch * sizes.maxBlocks), -1);
  size_t next = 0;
  for (int64_t b = 0; b < sizes.batch; ++b)
    for (int64_t block = 0; block * kv::kPageTokens < lengths[size_t(b)];
         ++block)
      table[size_t(b * sizes.maxBlocks + block)] = order[next++];
  return table;
}

std::optional<aot::BundleData> attentionData(const kv::KvAttentionSpec &spec,
                                             const aot::BundleEntry &entry,
                                             const AotOptions &options,
                                             runtime::StagedFiles &staged,
                                             std::string &error) {
  std::mt19937 generator(20240602u);
  KvAotSize size = options.attentionData;
  std::vector<int64_t> lengths = attentionLengths(size, /*ragged=*/true);
  compiler::KvAttentionSizes sizes =
      attentionSizes(spec, size, /*ragged=*/true);
  const int64_t batch = size.batch, tokens = size.tokens, dim = spec.headDim;
  std::vector<int64_t> cacheShape = {batch, spec.kvHeads, tokens, dim};
  // K with one outlier channel, V: uniform, fixed seed.
  std::vector<float> keys(size_t(elementsOf(cacheShape))), values(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    keys[i] = 3.0f * unit(generator) + (int64_t(i) % dim == 5 ? 8.0f : 0.0f);
    values[i] = 2.0f * unit(generator);
  }
  std::optional<QuantizedSide> k = quantizeSide(spec, keys, cacheShape, error);
  std::optional<QuantizedSide> v =
      k ? quantizeSide(spec, values, cacheShape, error) : std::nullopt;
  if (!v)
    return std::nullopt;
  Bytes query;
  std::vector<float> queryValues;
  for (int64_t i = 0; i < batch * spec.qHeads * dim; ++i)
    queryValues.push_back(appendValue(query,
                                      std::string(queryDtypeName(spec.query)),
                                      2.0f * unit(generator)));

  // Positions past a sequence's length are poisoned: NaN codes (0x7f in
  // e4m3 and e5m2) and, for int8, NaN scales; a kernel that reads one
  // returns NaN.
  const int64_t width = spec.isFp8() ? 0 : spec.scaleWidth();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const int64_t rows = batch * spec.kvHeads * tokens;
  for (QuantizedSide *side : {&*k, &*v})
    for (int64_t row = 0; row < rows; ++row) {
      if (row % tokens < lengths[size_t(row / (spec.kvHeads * tokens))])
        continue;
      std::fill_n(side->codes.begin() + row * dim, dim, uint8_t(0x7f));
      if (width)
        std::fill_n(side->scales.begin() + row * width, width, nan);
    }
  std::vector<int32_t> table;
  if (spec.paged) {
    // Pages in a shuffled order, two spare ones, unused pages poisoned.
    table = attentionTable(sizes, lengths, pageOrder(sizes.pages, &generator));
    kv::PagedLayout layout;
    layout.pages = sizes.pages;
    layout.kvHeads = spec.kvHeads;
    layout.batch = batch;
    layout.maxBlocks = sizes.maxBlocks;
    layout.blockTable = table;
    kv::PagedLayout scaleLayout = layout;
    scaleLayout.width = width;
    layout.width = dim;
    for (QuantizedSide *side : {&*k, &*v}) {
      std::vector<uint8_t> codes(size_t(layout.storageSize()), 0x7f);
      std::vector<float> scales =
          width ? std::vector<float>(size_t(scaleLayout.storageSize()), nan)
                : side->scales;
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t h = 0; h < spec.kvHeads; ++h)
          for (int64_t t = 0; t < lengths[size_t(b)]; ++t) {
            int64_t row = (b * spec.kvHeads + h) * tokens + t;
            std::copy_n(side->codes.begin() + row * dim, dim,
                        codes.begin() + layout.offset(b, h, t));
            if (width)
              std::copy_n(side->scales.begin() + row * width, width,
                          scales.begin() + scaleLayout.offset(b, h, t));
          }
      side->codes = std::move(codes);
      side->scales = std::move(scales);
    }
  }

  std::vector<int32_t> seqLens(lengths.begin(), lengths.end());
  std::vector<aot::Shape> shapes = compiler::kvAttentionShapes(spec, sizes);
  std::vector<Bytes> buffers = {
      query,    k->codes,           bytesOf(k->scales),
      v->codes, bytesOf(v->scales), bytesOf(seqLens)};
  if (spec.paged)
    buffers.push_back(bytesOf(table));
  for (size_t i = buffers.size(); i < entry.params.size(); ++i)
    buffers.emplace_back(size_t(shapes[i][0] * shapes[i][1]) * 4, 0);

  llvm::Expected<std::unique_ptr<compiler::KvAttentionCpuKernel>> kernel =
      compiler::compileKvAttentionForCpu(spec);
  if (!kernel) {
    error = "the CPU tail: " + llvm::toString(kernel.takeError());
    return std::nullopt;
  }
  std::vector<compiler::HostBuffer> views;
  for (size_t i = 0; i < buffers.size(); ++i)
    views.push_back({buffers[i].data(), shapes[i][0], shapes[i][1]});
  if (llvm::Error failed = (*kernel)->run(views)) {
    error = "the CPU tail: " + llvm::toString(std::move(failed));
    return std::nullopt;
  }
  size_t outputParam = 0;
  while (entry.params[outputParam].role != "output")
    ++outputParam;
  std::vector<float> output(buffers[outputParam].size() / 4);
  std::memcpy(output.data(), buffers[outputParam].data(),
              buffers[outputParam].size());
  kv::DecodeShape shape{batch, spec.qHeads, spec.kvHeads, dim, tokens};
  std::vector<double> exact = kv::decodeAttentionF64(
      shape, queryValues, k->restored, v->restored, lengths, spec.softmaxScale);
  double relative = kv::relativeError(exact, output);
  if (!(relative <= kCpuTailTolerance)) {
    error = fmt::format("the CPU tail's output is {:.3g} from the float64 "
                        "reference (more than {})",
                        relative, kCpuTailTolerance);
    return std::nullopt;
  }

  aot::BundleData data;
  data.size = sizeOf(batch, tokens, shapes);
  data.relativeTolerance = kAttentionTolerance;
  for (size_t i = 0; i < entry.params.size(); ++i) {
    const aot::ParamInfo &param = entry.params[i];
    // The partials are scratch: their split-K order is the kernel's own,
    // only the output is compared.
    if (param.written && i != outputParam) {
      data.files.push_back("");
      continue;
    }
    std::string file = fmt::format("{}.{}.{}.{}.npy", entry.name, i, param.role,
                                   param.written ? "expected" : "in");
    if (!stageNpy(options.outDirectory, file, npyTypeFor(param.element),
                  {shapes[i][0], shapes[i][1]}, buffers[i], staged, error))
      return std::nullopt;
    data.files.push_back(file);
  }
  // Raw little-endian doubles (.npy as runtime/core reads it has no f8).
  data.float64Param = int(outputParam);
  data.float64File = fmt::format("{}.{}.output.f64", entry.name, outputParam);
  std::string raw(exact.size() * 8, '\0');
  std::memcpy(raw.data(), exact.data(), raw.size());
  if (!staged.stage(options.outDirectory + "/" + data.float64File, raw, &error))
    return std::nullopt;
  return data;
}
} // namespace lowbit::cli::aotdata
