//===- AotKvData.cpp - lowbit aot: KV and KIVI entries' data --------------===//
//
// Data (docs/aot.md, "KV and attention entries"): the inputs come from a
// fixed seed and the expected outputs from the CPU tail of the same spec
// (compileKvForCpu, compileKiviForCpu). An append updates its cache in
// place, so the cache's contents before it are shipped too (`inputs`) and
// its buffers after it are the expected files.
//
//===----------------------------------------------------------------------===//

#include "tools/lowbit/AotKvData.h"

#include "format/Codec.h"
#include "format/Format.h"
#include "kv/KvPaged.h"
#include "runtime/compiler/KiviCompiler.h"
#include "runtime/compiler/KvCompiler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

namespace lowbit::cli::aotdata {

namespace {

/// FP8 static scales: the kv head's (or tensor's) amax of 4 at the
/// format's largest value, a different one per head.
std::vector<float> fp8Scales(const kv::KvKernelSpec &spec) {
  double maxValue = spec.scheme.fp8Format().maxValue();
  std::vector<float> scales;
  for (int64_t i = 0; i < spec.scaleWidth(); ++i)
    scales.push_back(float(4.0 * (1.0 + 0.5 * double(i)) / maxValue));
  return scales;
}

/// Every parameter's contents before the kernel runs: the index buffers
/// of `g`, `fill(param, elements)` for the others.
template <typename Fill>
std::vector<Bytes> inputsOf(const std::vector<aot::ParamInfo> &params,
                            const Dims &dims, const KvGeometry &g, Fill fill) {
  std::vector<Bytes> inputs(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    inputs[i] = indexBytes(params[i].role, g);
    if (inputs[i].empty())
      inputs[i] = fill(params[i], elementsOf(dims[i]));
  }
  return inputs;
}

/// The contents of every parameter before the kernel runs: values of 9
/// binades, FP8 codes that decode to finite values, int8 codes in
/// [-127, 127], int8 scales in [1, 200), a written cache filled with 0x5A
/// (the rows an append does not reach must keep it).
std::vector<Bytes> kvInputs(const kv::KvKernelSpec &spec,
                            const std::vector<aot::ParamInfo> &params,
                            const Dims &dims, const KvGeometry &g,
                            std::mt19937 &generator) {
  std::optional<Codec> fp8;
  if (!spec.scheme.isInt8())
    fp8.emplace(spec.scheme.fp8Format());
  return inputsOf(
      params, dims, g, [&](const aot::ParamInfo &param, int64_t count) {
        Bytes bytes;
        if (param.written) {
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
          std::vector<float> scales =
              fp8 ? fp8Scales(spec) : std::vector<float>();
          for (int64_t e = 0; !fp8 && e < count; ++e)
            scales.push_back(1.0f + 199.0f * unit(generator));
          bytes = bytesOf(scales);
        }
        return bytes;
      });
}

/// Inputs: tokens and ring values in [-4, 4); dequantize's codes (int4:
/// any byte, two nibbles; int2: [0, 3]), scales in [1/64, 1/4), zeros in
/// (-4, 0] (zero=float) or integers in [0, 2^bits) (zero=int); an append's
/// cache 0x5A bytes, its ring random values.
std::vector<Bytes> kiviInputs(const kv::KiviKernelSpec &spec,
                              const std::vector<aot::ParamInfo> &params,
                              const Dims &dims, const KvGeometry &g,
                              std::mt19937 &generator) {
  unsigned levels = 1u << spec.side.bits;
  return inputsOf(
      params, dims, g, [&](const aot::ParamInfo &param, int64_t count) {
        Bytes bytes;
        if (param.role == "input" || param.role == "residual") {
          for (int64_t e = 0; e < count; ++e)
            appendValue(bytes, param.element, 8.0f * unit(generator) - 4.0f);
        } else if (param.written) {
          bytes.assign(size_t(count) * aot::elementBytes(param.element), 0x5A);
        } else if (param.role == "codes") {
          for (int64_t e = 0; e < count; ++e)
            bytes.push_back(spec.side.bits == 4 ? uint8_t(generator())
                                                : uint8_t(generator() % 4));
        } else if (param.role == "zeros") {
          // KIVI's float zero (a group's min) or an integer zero point.
          std::vector<float> zeros;
          for (int64_t e = 0; e < count; ++e)
            zeros.push_back(spec.side.zero == kv::KiviZero::Float
                                ? -4.0f * unit(generator)
                                : float(generator() % levels));
          bytes = bytesOf(zeros);
        } else if (param.role == "scales") {
          std::vector<float> scales;
          for (int64_t e = 0; e < count; ++e)
            scales.push_back((1.0f + 15.0f * unit(generator)) / 64.0f);
          bytes = bytesOf(scales);
        }
        return bytes;
      });
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

} // namespace

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

int64_t elementsOf(const std::vector<int64_t> &shape) {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

/// The pages of a cache of `capacity` tokens per sequence (paged only).
void pageCache(KvGeometry &g, kv::KvLayout layout, std::mt19937 *shuffle) {
  if (layout != kv::KvLayout::Paged)
    return;
  g.maxBlocks = (g.capacity + kv::kPageTokens - 1) / kv::kPageTokens;
  g.pages = g.batch * g.maxBlocks + (shuffle ? 1 : 0);
  std::vector<int32_t> order = pageOrder(g.pages, shuffle);
  g.table.assign(order.begin(), order.begin() + g.batch * g.maxBlocks);
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

std::vector<aot::ParamInfo>
paramsOf(const std::vector<compiler::KvKernelParam> &params) {
  std::vector<aot::ParamInfo> infos;
  for (const compiler::KvKernelParam &param : params)
    infos.push_back({param.name, param.elementType, param.isResult});
  return infos;
}

Dims dimsOf(const std::vector<compiler::KvKernelParam> &params,
            const KvGeometry &g) {
  compiler::CallSizes sizes = {
      {compiler::kBatch, g.batch},          {compiler::kNewTokens, g.tokens},
      {compiler::kCacheTokens, g.capacity}, {compiler::kPages, g.pages},
      {compiler::kGroupRows, g.groupRows},  {compiler::kMaxBlocks, g.maxBlocks},
      {compiler::kSplits, g.splits}};
  Dims dims;
  for (const compiler::KvKernelParam &param : params)
    dims.push_back(compiler::bindShape(param, sizes));
  return dims;
}

// --- kv_append / kv_dequantize ---------------------------------------------

KvGeometry kvGeometry(const kv::KvKernelSpec &spec, KvAotSize size,
                      std::mt19937 *shuffle) {
  KvGeometry g{size.batch, size.tokens};
  for (int64_t b = 0; b < g.batch; ++b)
    g.positions.push_back(int32_t(shuffle ? 3 * b : 0));
  g.capacity = g.tokens + g.positions.back();
  pageCache(g, spec.layout, shuffle);
  return g;
}

// --- kivi_append / kivi_dequantize ------------------------------------------

/// Data: sequence b holds b * (R + G - 10) tokens (so the later ones
/// flush groups that start in the ring); an append adds N to each, a
/// dequantize reads N tokens of sequences that hold N more, from
/// max(0, length - N - b R), mixing quantized and ring tokens. Bench:
/// empty sequences take N tokens; dequantize reads all N of full ones.
KvGeometry kiviGeometry(const kv::KiviKernelSpec &spec, KvAotSize size,
                        std::mt19937 *shuffle) {
  KvGeometry g{size.batch, size.tokens};
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
  g.groupRows = (g.capacity + spec.side.groupSize - 1) / spec.side.groupSize;
  pageCache(g, spec.layout, shuffle);
  return g;
}

std::optional<aot::BundleData> cacheData(const KvAotSpec &spec,
                                         const aot::BundleEntry &entry,
                                         const AotOptions &options,
                                         runtime::StagedFiles &staged,
                                         std::string &error) {
  bool kivi = spec.kind == KvAotSpec::Kind::Kivi;
  // The same seed per kind, so both chips' bundles hold the same data.
  std::mt19937 generator(kivi ? 20240603u : 20240601u);
  KvGeometry g = kivi ? kiviGeometry(spec.kivi, options.kvData, &generator)
                      : kvGeometry(spec.cache, options.kvData, &generator);
  Dims dims = dimsOf(kivi ? compiler::kiviKernelParams(spec.kivi)
                          : compiler::kvKernelParams(spec.cache),
                     g);
  std::vector<Bytes> inputs =
      kivi ? kiviInputs(spec.kivi, entry.params, dims, g, generator)
           : kvInputs(spec.cache, entry.params, dims, g, generator);
  bool append = entry.op.ends_with("_append");
  return kivi ? kvData(compiler::compileKiviForCpu(spec.kivi), entry, append, g,
                       dims, std::move(inputs), options, staged, error)
              : kvData(compiler::compileKvForCpu(spec.cache), entry, append, g,
                       dims, std::move(inputs), options, staged, error);
}

} // namespace lowbit::cli::aotdata
