//===- AotKvEntries.cpp - lowbit aot: KV-cache and attention entries ------===//
//
// Data (docs/aot.md, "KV and attention entries"): the inputs come from a
// fixed seed and the expected outputs from the CPU tail of the same spec
// (compileKvForCpu, compileKvAttentionForCpu). An append updates its cache
// in place, so the cache's contents before it are shipped too (`inputs`)
// and its codes and scales after it are the expected files. Attention's
// cache is made by the kv/ reference quantizer from random K and V, every
// position a sequence does not reach is poisoned (NaN codes, int8 NaN
// scales), and the float64 reference (kv::decodeAttentionF64 of the
// dequantized cache) is shipped next to the CPU tail's output, which must
// be within 1e-3 of it before anything is written.
//
//===----------------------------------------------------------------------===//

#include "tools/lowbit/AotKvEntries.h"

#include "format/Codec.h"
#include "format/Format.h"
#include "kv/KvAttention.h"
#include "kv/KvPaged.h"
#include "kv/KvQuantize.h"
#include "runtime/compiler/KiviCompiler.h"
#include "runtime/compiler/KvAttentionCompiler.h"
#include "runtime/compiler/KvCompiler.h"
#include "runtime/jit/LaunchPlan.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>

#include <fmt/format.h>

namespace lowbit::cli {

namespace {

using Dims = std::vector<std::vector<int64_t>>;
using Bytes = std::vector<uint8_t>;

/// The largest relative error (2-norm) the CPU tail's attention output may
/// have against the float64 reference before the data is refused.
constexpr double kCpuTailTolerance = 1e-3;
/// What the runner allows the GPU's attention output against the CPU
/// tail's, per element.
constexpr double kAttentionTolerance = 1e-5;

template <typename T> Bytes bytesOf(const std::vector<T> &values) {
  Bytes bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

/// Uniform in [0, 1) from the generator (its 24 high bits).
float unit(std::mt19937 &generator) {
  return float(generator() >> 8) * (1.0f / 16777216.0f);
}

/// A value's bits in `element` (f32, f16 or bf16), appended to `bytes`;
/// returns the value the bits hold.
float appendValue(Bytes &bytes, const std::string &element, float value) {
  if (element == "f32") {
    bytes.resize(bytes.size() + 4);
    std::memcpy(bytes.data() + bytes.size() - 4, &value, 4);
    return value;
  }
  uint16_t bits =
      element == "f16" ? floatToHalf(value) : floatToBFloat16(value);
  bytes.resize(bytes.size() + 2);
  std::memcpy(bytes.data() + bytes.size() - 2, &bits, 2);
  return element == "f16" ? halfToFloat(bits) : bfloat16ToFloat(bits);
}

/// `count` page indices: a shuffle of [0, count) (data) or in order.
std::vector<int32_t> pageOrder(int64_t count, std::mt19937 *shuffle) {
  std::vector<int32_t> order(static_cast<size_t>(count));
  std::iota(order.begin(), order.end(), 0);
  if (shuffle)
    std::shuffle(order.begin(), order.end(), *shuffle);
  return order;
}

aot::SizeInstance sizeOf(int64_t rows, int64_t cols,
                         const std::vector<aot::Shape> &shapes) {
  aot::SizeInstance size;
  size.rows = rows;
  size.cols = cols;
  size.shapes = shapes;
  return size;
}

/// [leading dimensions' product, last] of each ranked shape.
std::vector<aot::Shape> flatten(const Dims &dims) {
  std::vector<aot::Shape> shapes;
  for (const std::vector<int64_t> &shape : dims) {
    int64_t leading = 1;
    for (size_t i = 0; i + 1 < shape.size(); ++i)
      leading *= shape[i];
    shapes.push_back({leading, shape.back()});
  }
  return shapes;
}

// --- kv_append / kv_dequantize ---------------------------------------------

/// The kernel ABI (runtime/compiler/KvCompiler.h).
std::vector<aot::ParamInfo> kvParams(const kv::KvKernelSpec &spec) {
  std::string values(kv::kvValueTypeName(spec.valueType));
  bool int8 = spec.scheme.isInt8();
  std::vector<aot::ParamInfo> params =
      spec.op == kv::KvKernelOp::Append
          ? std::vector<aot::ParamInfo>{{"input", values, false},
                                        {"codes", "i8", true},
                                        {"scales", "f32", int8},
                                        {"positions", "i32", false}}
          : std::vector<aot::ParamInfo>{{"codes", "i8", false},
                                        {"scales", "f32", false},
                                        {"positions", "i32", false},
                                        {"output", values, true}};
  if (spec.layout == kv::KvLayout::Paged)
    params.push_back({"block_table", "i32", false});
  return params;
}

/// A cache for `batch` sequences of `tokens` new tokens each. Data: the
/// sequences start at positions 0, 3, 6, ... (ragged) in a cache that
/// just holds the last, paged through shuffled pages with a spare one.
/// Bench: every sequence at 0, pages in order.
struct KvGeometry {
  int64_t batch = 0, tokens = 0, capacity = 0, pages = 0, maxBlocks = 0;
  std::vector<int32_t> positions, table;
  /// KIVI: the tokens each sequence holds (before an append).
  std::vector<int32_t> lengths;
};

/// The pages of a cache of `capacity` tokens per sequence (paged only).
void pageCache(KvGeometry &g, std::mt19937 *shuffle) {
  g.maxBlocks = (g.capacity + kv::kPageTokens - 1) / kv::kPageTokens;
  g.pages = g.batch * g.maxBlocks + (shuffle ? 1 : 0);
  std::vector<int32_t> order = pageOrder(g.pages, shuffle);
  g.table.assign(order.begin(), order.begin() + g.batch * g.maxBlocks);
}

KvGeometry kvGeometry(const kv::KvKernelSpec &spec, KvAotSize size,
                      std::mt19937 *shuffle) {
  KvGeometry g;
  g.batch = size.batch;
  g.tokens = size.tokens;
  for (int64_t b = 0; b < g.batch; ++b)
    g.positions.push_back(int32_t(shuffle ? 3 * b : 0));
  g.capacity = g.tokens + g.positions.back();
  if (spec.layout == kv::KvLayout::Paged)
    pageCache(g, shuffle);
  return g;
}

/// An index buffer of `g` (positions, lengths, block_table) by its role;
/// empty for every other role.
Bytes indexBytes(const std::string &role, const KvGeometry &g) {
  if (role == "positions")
    return bytesOf(g.positions);
  if (role == "lengths")
    return bytesOf(g.lengths);
  if (role == "block_table")
    return bytesOf(g.table);
  return {};
}

/// Each parameter's shape (docs/kv-kernels.md, "The ops").
Dims kvDims(const kv::KvKernelSpec &spec, const KvGeometry &g) {
  bool paged = spec.layout == kv::KvLayout::Paged;
  std::vector<int64_t> values = {g.batch, spec.heads, g.tokens, spec.headDim};
  std::vector<int64_t> codes =
      paged
          ? std::vector<int64_t>{g.pages, spec.heads, kv::kPageTokens,
                                 spec.headDim}
          : std::vector<int64_t>{g.batch, spec.heads, g.capacity, spec.headDim};
  std::vector<int64_t> scales = {spec.scaleWidth()};
  if (spec.scheme.isInt8()) {
    scales = codes;
    scales.back() = spec.scaleWidth();
  }
  Dims dims = spec.op == kv::KvKernelOp::Append
                  ? Dims{values, codes, scales, {g.batch}}
                  : Dims{codes, scales, {g.batch}, values};
  if (paged)
    dims.push_back({g.batch, g.maxBlocks});
  return dims;
}

int64_t elementsOf(const std::vector<int64_t> &shape) {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

/// FP8 static scales: the kv head's (or tensor's) amax of 4 at the
/// format's largest value, a different one per head.
std::vector<float> fp8Scales(const kv::KvKernelSpec &spec) {
  double maxValue = spec.scheme.fp8Format().maxValue();
  std::vector<float> scales;
  for (int64_t i = 0; i < spec.scaleWidth(); ++i)
    scales.push_back(float(4.0 * (1.0 + 0.5 * double(i)) / maxValue));
  return scales;
}

/// The contents of every parameter before the kernel runs: values of 9
/// binades, FP8 codes that decode to finite values, int8 codes in
/// [-127, 127], int8 scales in [1, 200), a written cache filled with 0x5A
/// (the rows an append does not reach must keep it).
std::vector<Bytes> kvInputs(const kv::KvKernelSpec &spec,
                            const std::vector<aot::ParamInfo> &params,
                            const Dims &dims, const KvGeometry &g,
                            std::mt19937 &generator) {
  std::vector<Bytes> inputs(params.size());
  std::optional<Codec> fp8;
  if (!spec.scheme.isInt8())
    fp8.emplace(spec.scheme.fp8Format());
  for (size_t i = 0; i < params.size(); ++i) {
    const aot::ParamInfo &param = params[i];
    int64_t count = elementsOf(dims[i]);
    Bytes &bytes = inputs[i];
    bytes = indexBytes(param.role, g);
    if (!bytes.empty()) {
      continue;
    } else if (param.written) {
      bytes.assign(size_t(count) * aot::elementBytes(param.element), 0x5A);
    } else if (param.role == "input") {
      for (int64_t e = 0; e < count; ++e) {
        float magnitude = std::ldexp(unit(generator), int(e % 9) - 4);
        appendValue(bytes, param.element,
                    (generator() & 1) ? -magnitude : magnitude);
      }
    } else if (param.role == "codes") {
      for (int64_t e = 0; e < count; ++e) {
        uint8_t code = uint8_t(generator());
        if (fp8)
          while (!std::isfinite(fp8->decode(code)))
            code = uint8_t(generator());
        else
          code = uint8_t(int8_t(int(generator() % 255) - 127));
        bytes.push_back(code);
      }
    } else if (param.role == "scales") {
      std::vector<float> scales = fp8 ? fp8Scales(spec) : std::vector<float>();
      for (int64_t e = 0; !fp8 && e < count; ++e)
        scales.push_back(1.0f + 199.0f * unit(generator));
      bytes = bytesOf(scales);
    }
  }
  return inputs;
}

/// Stages the data of a KV or KIVI entry: `buffers` (the inputs) as they
/// are, a written buffer's contents before an append, and the written
/// buffers after `kernel` (the spec's CPU tail) ran over them.
template <typename CpuKernel>
std::optional<aot::BundleData>
kvData(llvm::Expected<std::unique_ptr<CpuKernel>> kernel,
       const aot::BundleEntry &entry, bool append, const KvGeometry &g,
       const Dims &dims, std::vector<Bytes> buffers, const AotOptions &options,
       runtime::StagedFiles &staged, std::string &error) {
  if (!kernel) {
    error = "the CPU tail: " + llvm::toString(kernel.takeError());
    return std::nullopt;
  }
  std::vector<Bytes> before = buffers;
  std::vector<compiler::KvBuffer> views;
  for (size_t i = 0; i < buffers.size(); ++i)
    views.push_back({buffers[i].data(), dims[i]});
  if (llvm::Error failed = (*kernel)->run(views)) {
    error = "the CPU tail: " + llvm::toString(std::move(failed));
    return std::nullopt;
  }

  aot::BundleData data;
  data.size = sizeOf(g.batch, g.tokens, flatten(dims));
  data.size.dims = dims;
  data.size.inputs.assign(entry.params.size(), "");
  for (size_t i = 0; i < entry.params.size(); ++i) {
    const aot::ParamInfo &param = entry.params[i];
    std::string stem = fmt::format("{}.{}.{}", entry.name, i, param.role);
    std::string file = stem + (param.written ? ".expected.npy" : ".in.npy");
    npy::DType dtype = npyTypeFor(param.element);
    if (!stageNpy(options.outDirectory, file, dtype, dims[i], buffers[i],
                  staged, error))
      return std::nullopt;
    data.files.push_back(file);
    // An append writes some rows of its cache: the rest must keep what
    // was there, so the runner uploads it first.
    if (param.written && append) {
      data.size.inputs[i] = stem + ".before.npy";
      if (!stageNpy(options.outDirectory, data.size.inputs[i], dtype, dims[i],
                    before[i], staged, error))
        return std::nullopt;
    }
  }
  return data;
}

// --- kivi_append / kivi_dequantize ------------------------------------------

/// The kernel ABI (runtime/compiler/KiviCompiler.h).
std::vector<aot::ParamInfo> kiviParams(const kv::KiviKernelSpec &spec) {
  std::string ring(kv::kvValueTypeName(spec.residualType));
  std::vector<aot::ParamInfo> params =
      spec.op == kv::KvKernelOp::Append
          ? std::vector<aot::ParamInfo>{{"input", ring, false},
                                        {"codes", "i8", true},
                                        {"scales", "f32", true},
                                        {"zeros", "i8", true},
                                        {"residual", ring, true},
                                        {"lengths", "i32", false}}
          : std::vector<aot::ParamInfo>{
                {"codes", "i8", false},
                {"scales", "f32", false},
                {"zeros", "i8", false},
                {"residual", ring, false},
                {"positions", "i32", false},
                {"lengths", "i32", false},
                {"output", std::string(kv::kvValueTypeName(spec.outputType)),
                 true}};
  if (spec.layout == kv::KvLayout::Paged)
    params.push_back({"block_table", "i32", false});
  return params;
}

/// Data: sequence b holds b * (R + G - 10) tokens (so the later ones
/// flush groups that start in the ring); an append adds N to each, a
/// dequantize reads N tokens of sequences that hold N more, from
/// max(0, length - N - b R), mixing quantized and ring tokens. Bench:
/// empty sequences take N tokens; dequantize reads all N of full ones.
KvGeometry kiviGeometry(const kv::KiviKernelSpec &spec, KvAotSize size,
                        std::mt19937 *shuffle) {
  KvGeometry g;
  g.batch = size.batch;
  g.tokens = size.tokens;
  bool append = spec.op == kv::KvKernelOp::Append;
  int64_t step =
      shuffle ? std::max<int64_t>(spec.side.residualSlots() - 10, 1) : 0;
  for (int64_t b = 0; b < g.batch; ++b) {
    int64_t length = b * step + (append ? 0 : g.tokens);
    g.lengths.push_back(int32_t(length));
    g.positions.push_back(int32_t(
        std::max<int64_t>(0, length - g.tokens - b * spec.side.residual)));
    g.capacity = std::max(g.capacity, length + (append ? g.tokens : 0));
  }
  if (spec.layout == kv::KvLayout::Paged)
    pageCache(g, shuffle);
  return g;
}

Dims kiviDims(const kv::KiviKernelSpec &spec, const KvGeometry &g) {
  const kv::KiviSide &side = spec.side;
  bool paged = spec.layout == kv::KvLayout::Paged;
  int64_t rows = paged ? g.pages : g.batch;
  int64_t slots = paged ? kv::kPageTokens : g.capacity;
  int64_t paramRows = !side.perChannel ? slots
                      : paged
                          ? side.pageParamRows()
                          : (g.capacity + side.groupSize - 1) / side.groupSize;
  std::vector<int64_t> tokens = {g.batch, spec.heads, g.tokens, spec.headDim};
  std::vector<int64_t> codes = {rows, spec.heads, slots,
                                side.codeWidth(spec.headDim)};
  std::vector<int64_t> params = {rows, spec.heads, paramRows,
                                 side.paramWidth(spec.headDim)};
  std::vector<int64_t> ring = {g.batch, spec.heads, side.residualSlots(),
                               spec.headDim};
  Dims dims =
      spec.op == kv::KvKernelOp::Append
          ? Dims{tokens, codes, params, params, ring, {g.batch}}
          : Dims{codes, params, params, ring, {g.batch}, {g.batch}, tokens};
  if (paged)
    dims.push_back({g.batch, g.maxBlocks});
  return dims;
}

/// Inputs: tokens and ring values in [-4, 4); dequantize's codes (int4:
/// any byte, two nibbles; int2: [0, 3]), scales in [1/64, 1/4), zeros in
/// [0, 2^bits); an append's cache 0x5A bytes, its ring random values.
std::vector<Bytes> kiviInputs(const kv::KiviKernelSpec &spec,
                              const std::vector<aot::ParamInfo> &params,
                              const Dims &dims, const KvGeometry &g,
                              std::mt19937 &generator) {
  std::vector<Bytes> inputs(params.size());
  unsigned levels = 1u << spec.side.bits;
  for (size_t i = 0; i < params.size(); ++i) {
    const aot::ParamInfo &param = params[i];
    int64_t count = elementsOf(dims[i]);
    Bytes &bytes = inputs[i];
    bytes = indexBytes(param.role, g);
    if (!bytes.empty()) {
      continue;
    } else if (param.role == "input" || param.role == "residual") {
      for (int64_t e = 0; e < count; ++e)
        appendValue(bytes, param.element, 8.0f * unit(generator) - 4.0f);
    } else if (param.written) {
      bytes.assign(size_t(count) * aot::elementBytes(param.element), 0x5A);
    } else if (param.role == "codes") {
      for (int64_t e = 0; e < count; ++e)
        bytes.push_back(spec.side.bits == 4 ? uint8_t(generator())
                                            : uint8_t(generator() % 4));
    } else if (param.role == "zeros") {
      for (int64_t e = 0; e < count; ++e)
        bytes.push_back(uint8_t(generator() % levels));
    } else if (param.role == "scales") {
      std::vector<float> scales;
      for (int64_t e = 0; e < count; ++e)
        scales.push_back((1.0f + 15.0f * unit(generator)) / 64.0f);
      bytes = bytesOf(scales);
    }
  }
  return inputs;
}

// --- kv_attend ---------------------------------------------------------------

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

/// The bench size's index buffers (the rest the runner fills itself).
bool stageBenchInputs(aot::BundleEntry &entry, const std::vector<Bytes> &index,
                      const AotOptions &options, runtime::StagedFiles &staged,
                      std::string &error) {
  aot::SizeInstance &bench = *entry.bench;
  bench.inputs.assign(entry.params.size(), "");
  for (size_t i = 0; i < entry.params.size(); ++i) {
    if (index[i].empty())
      continue;
    bench.inputs[i] =
        fmt::format("{}.{}.{}.bench.npy", entry.name, i, entry.params[i].role);
    std::vector<int64_t> shape =
        bench.dims.empty()
            ? std::vector<int64_t>{bench.shapes[i][0], bench.shapes[i][1]}
            : bench.dims[i];
    if (!stageNpy(options.outDirectory, bench.inputs[i],
                  npyTypeFor(entry.params[i].element), shape, index[i], staged,
                  error))
      return false;
  }
  return true;
}

} // namespace

std::string KvAotSpec::text() const {
  switch (kind) {
  case Kind::Cache:
    return kv::formatKvKernelSpec(cache);
  case Kind::Kivi:
    return kv::formatKiviKernelSpec(kivi);
  case Kind::Attention:
    return kv::printKvAttentionSpec(decode);
  }
  return {};
}

bool isKvAotSpecText(std::string_view text) {
  std::string_view word = text.substr(0, text.find(' '));
  return word == "kv_append" || word == "kv_dequantize" ||
         word == "kivi_append" || word == "kivi_dequantize" ||
         word == "kv_attend";
}

std::optional<KvAotSpec> parseKvAotSpec(std::string_view text,
                                        std::string &error) {
  KvAotSpec spec;
  if (text.starts_with("kivi_")) {
    std::optional<kv::KiviKernelSpec> kivi =
        kv::parseKiviKernelSpec(text, &error);
    if (!kivi)
      return std::nullopt;
    spec.kind = KvAotSpec::Kind::Kivi;
    spec.kivi = *kivi;
    return spec;
  }
  if (text.starts_with("kv_attend")) {
    spec.kind = KvAotSpec::Kind::Attention;
    std::optional<kv::KvAttentionSpec> decode =
        kv::parseKvAttentionSpec(text, &error);
    if (!decode)
      return std::nullopt;
    spec.decode = *decode;
    return spec;
  }
  std::optional<kv::KvKernelSpec> cache = kv::parseKvKernelSpec(text, &error);
  if (!cache)
    return std::nullopt;
  spec.cache = *cache;
  return spec;
}

std::optional<aot::BundleEntry>
buildKvAotEntry(const KvAotSpec &spec, const AotOptions &options,
                std::set<std::string> &usedStems, runtime::StagedFiles &staged,
                std::string &error) {
  aot::BundleEntry entry;
  entry.spec = spec.text();
  jit::LaunchPlan plan;
  auto describe = [&](mlir::ModuleOp module) {
    plan = jit::describeGpuLaunches(module);
  };
  const bool attention = spec.kind == KvAotSpec::Kind::Attention;
  const bool kivi = spec.kind == KvAotSpec::Kind::Kivi;
  llvm::Expected<PtxModule> ptx =
      attention ? compiler::compileKvAttentionToPtx(spec.decode, options.target,
                                                    describe)
      : kivi
          ? compiler::compileKiviToPtx(spec.kivi, options.target, {}, describe)
          : compiler::compileKvToPtx(spec.cache, options.target, {}, describe);
  if (!ptx) {
    error = llvm::toString(ptx.takeError());
    return std::nullopt;
  }
  if (!plan.unsupported.empty()) {
    error = "the launches cannot be described: " + plan.unsupported;
    return std::nullopt;
  }
  std::string stem;
  Dims benchDims;
  KvGeometry benchGeometry;
  if (attention) {
    const kv::KvAttentionSpec &decode = spec.decode;
    entry.kind = "attention";
    entry.op = "kv_attend";
    entry.scheme = decode.isFp8()
                       ? std::string(kv::kvSchemeName(decode.scheme))
                       : fmt::format("kv_int8_g{}", decode.groupSize);
    entry.valueType = std::string(kv::queryDtypeName(decode.query));
    for (const compiler::KvAttentionParam &param :
         compiler::kvAttentionParams(decode))
      entry.params.push_back({param.name, param.elementType, param.isResult});
    stem = fmt::format("kv_attend-{}{}-{}-{}", entry.scheme,
                       decode.isFp8() && decode.perHead ? "-per_head" : "",
                       entry.valueType, decode.paged ? "paged" : "contiguous");
  } else if (kivi) {
    const kv::KiviKernelSpec &kiviSpec = spec.kivi;
    entry.kind = "kv";
    entry.op = kiviSpec.op == kv::KvKernelOp::Append ? "kivi_append"
                                                     : "kivi_dequantize";
    entry.scheme = kv::kiviSchemeName(kiviSpec.side.bits);
    entry.valueType = std::string(kv::kvValueTypeName(
        kiviSpec.op == kv::KvKernelOp::Append ? kiviSpec.residualType
                                              : kiviSpec.outputType));
    entry.params = kiviParams(kiviSpec);
    stem = fmt::format("{}-{}-g{}-r{}-{}-{}-{}", entry.op, entry.scheme,
                       kiviSpec.side.groupSize, kiviSpec.side.residual,
                       kiviSpec.side.perChannel ? "per_channel" : "per_token",
                       entry.valueType, kv::kvLayoutName(kiviSpec.layout));
    benchGeometry = kiviGeometry(kiviSpec, options.kvBench, nullptr);
    benchDims = kiviDims(kiviSpec, benchGeometry);
  } else {
    const kv::KvKernelSpec &cache = spec.cache;
    entry.kind = "kv";
    entry.op = std::string(kv::kvKernelOpName(cache.op));
    entry.scheme = cache.scheme.name();
    entry.valueType = std::string(kv::kvValueTypeName(cache.valueType));
    entry.params = kvParams(cache);
    stem = fmt::format("{}-{}-{}-{}", entry.op, entry.scheme, entry.valueType,
                       kv::kvLayoutName(cache.layout));
    benchGeometry = kvGeometry(cache, options.kvBench, nullptr);
    benchDims = kvDims(cache, benchGeometry);
  }
  // A memref operand is its rank-N descriptor: 3 + 2N kernel parameters
  // (the ranks do not depend on the sizes).
  auto slotsOf = [&](int memref) {
    size_t rank = size_t(memref) < benchDims.size()
                      ? benchDims[size_t(memref)].size()
                      : 2;
    return 3 + 2 * rank;
  };
  std::optional<std::vector<aot::Launch>> launches =
      launchesFromPlan(plan.steps, ptx->ptx, slotsOf, error);
  if (!launches)
    return std::nullopt;
  entry.launches = std::move(*launches);
  if (!stageKernelImages(entry, stem, /*keyedStem=*/false, ptx->ptx, options,
                         usedStems, staged, error))
    return std::nullopt;

  // The bench size, with its index buffers (positions from 0, full
  // sequences, pages in order) as files.
  std::vector<Bytes> index(entry.params.size());
  if (attention) {
    std::vector<int64_t> lengths =
        attentionLengths(options.kvBench, /*ragged=*/false);
    compiler::KvAttentionSizes sizes =
        attentionSizes(spec.decode, options.kvBench, /*ragged=*/false);
    entry.bench = sizeOf(options.kvBench.batch, options.kvBench.tokens,
                         compiler::kvAttentionShapes(spec.decode, sizes));
    for (size_t i = 0; i < entry.params.size(); ++i) {
      if (entry.params[i].role == "seq_lens")
        index[i] =
            bytesOf(std::vector<int32_t>(lengths.begin(), lengths.end()));
      if (entry.params[i].role == "block_table")
        index[i] = bytesOf(
            attentionTable(sizes, lengths, pageOrder(sizes.pages, nullptr)));
    }
  } else {
    const KvGeometry &g = benchGeometry;
    entry.bench = sizeOf(g.batch, g.tokens, flatten(benchDims));
    entry.bench->dims = benchDims;
    for (size_t i = 0; i < entry.params.size(); ++i)
      index[i] = indexBytes(entry.params[i].role, g);
  }
  if (!stageBenchInputs(entry, index, options, staged, error))
    return std::nullopt;

  if (!options.dataSize)
    return entry;
  std::optional<aot::BundleData> data;
  if (attention) {
    data = attentionData(spec.decode, entry, options, staged, error);
  } else {
    // The same seed per kind, so both chips' bundles hold the same data.
    std::mt19937 generator(kivi ? 20240603u : 20240601u);
    KvGeometry g = kivi ? kiviGeometry(spec.kivi, options.kvData, &generator)
                        : kvGeometry(spec.cache, options.kvData, &generator);
    Dims dims = kivi ? kiviDims(spec.kivi, g) : kvDims(spec.cache, g);
    std::vector<Bytes> inputs =
        kivi ? kiviInputs(spec.kivi, entry.params, dims, g, generator)
             : kvInputs(spec.cache, entry.params, dims, g, generator);
    bool append = entry.op.ends_with("_append");
    data = kivi ? kvData(compiler::compileKiviForCpu(spec.kivi), entry, append,
                         g, dims, std::move(inputs), options, staged, error)
                : kvData(compiler::compileKvForCpu(spec.cache), entry, append,
                         g, dims, std::move(inputs), options, staged, error);
  }
  if (!data)
    return std::nullopt;
  entry.data = std::move(*data);
  return entry;
}

} // namespace lowbit::cli
