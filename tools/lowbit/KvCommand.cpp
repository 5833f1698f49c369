//===- KvCommand.cpp - `lowbit kv` and `lowbit eval --kv` -----------------===//
//
// The KV cache on .npy files, through kv/KvCache (the reference backend;
// docs/kv-cache.md). Every subcommand checks its arguments and inputs
// before it writes, and the cache directory is replaced as one unit, so a
// refused append leaves the old cache whole. `kv attend --jit` runs the
// compiled decode-attention kernel instead (lowbit::Jit::getKv on the CPU,
// the compiler library loaded only then; docs/runtime.md).
//
//===----------------------------------------------------------------------===//

#include "format/Quantize.h"
#include "kv/KvCache.h"
#include "kv/KvEval.h"
#include "lowbit/Jit.h"
#include "runtime/core/Npy.h"
#include "runtime/files/KvCacheDirectory.h"
#include "tools/lowbit/CommandLine.h"
#include "tools/lowbit/Commands.h"
#include "tools/lowbit/OutputPaths.h"

#include <array>
#include <cmath>

#include <fmt/format.h>

namespace lowbit::cli {

namespace {

constexpr std::string_view kUsage =
    "usage: lowbit kv init --cache DIR --scheme kv_int8_g<G>|kv_int8|"
    "kv_fp8_e4m3|kv_fp8_e5m2|\n"
    "           kv_kivi_int4|kv_kivi_int2 --batch B --kv-heads H --head-dim D\n"
    "           (--capacity T | --pages P --block-table TABLE.npy)\n"
    "           [--group G] [--convention multiplier|divisor]\n"
    "           [--k-scales K.npy --v-scales V.npy]\n"
    "           [--residual R] [--keys per_channel|per_token]"
    " [--zero float|int]\n"
    "       lowbit kv append --cache DIR --k K.npy --v V.npy [--from "
    "f32|f16|bf16]\n"
    "       lowbit kv dequantize --cache DIR --out-k K.npy --out-v V.npy\n"
    "       lowbit kv attend --cache DIR --q Q.npy --out O.npy [--scale S]"
    " [--split N]\n"
    "           [--jit]\n"
    "       lowbit kv quantize --scheme kv_int8_g<G>|kv_int8 [--group G]\n"
    "           [--convention multiplier|divisor] --input X.npy\n"
    "           --out-codes C.npy --out-scales S.npy [--out-values V.npy]\n\n"
    "A quantized KV cache in a directory (meta.json and .npy files).\n"
    "init makes an empty one: contiguous with a capacity of T tokens per\n"
    "sequence, or paged in pages of 16 tokens with a [batch, max_blocks]\n"
    "int32 block table. kv_int8 groups G channels (default 64) with one f32\n"
    "scale; kv_fp8_* take static scales from 1-D float32 files, one entry\n"
    "(per tensor) or one per kv head. kv_kivi_* quantize keys per channel\n"
    "(or per token) in groups of G tokens (default 32) and values per\n"
    "token in groups of G channels, asymmetric, and keep the newest R\n"
    "tokens (default 128, at most 128) in full precision. Their zero is\n"
    "KIVI's own (--zero float: the group's min, q = rne(clamp((x - min) /\n"
    "s, 0, 2^b - 1)), s = (max - min) / (2^b - 1)), or with --zero int the\n"
    "range widened to include 0 and an integer zero point. append quantizes\n"
    "[batch, kv_heads,\n"
    "tokens, head_dim] K and V and writes them after each sequence's\n"
    "length. dequantize writes [batch, kv_heads, longest, head_dim] float32\n"
    "(zeros past a shorter sequence). attend runs decode attention of\n"
    "[batch, q_heads, head_dim] queries (q_heads a multiple of kv_heads;\n"
    "scale defaults to 1/sqrt(head_dim), splits of N = 256 tokens) and\n"
    "writes float32 [batch, q_heads, head_dim]; with --jit through the\n"
    "compiled kv_attend kernel on the CPU (kv_int8 and kv_fp8 caches; it\n"
    "prints the kernel's spec), else the reference. quantize applies kv_int8 "
    "to\n"
    "one N-D tensor (rank >= 2, groups along the last axis): int8 codes of\n"
    "its shape, float32 scales of shape[:-1] + [ceil(D / G)], and with\n"
    "--out-values the dequantized float32 values.\n";

constexpr std::array<OptionSpec, 29> kOptions = {{
    {"cache", true},      {"scheme", true},      {"batch", true},
    {"kv-heads", true},   {"head-dim", true},    {"capacity", true},
    {"pages", true},      {"block-table", true}, {"group", true},
    {"convention", true}, {"k-scales", true},    {"v-scales", true},
    {"k", true},          {"v", true},           {"from", true},
    {"out-k", true},      {"out-v", true},       {"q", true},
    {"out", true},        {"scale", true},       {"split", true},
    {"residual", true},   {"keys", true},        {"input", true},
    {"out-codes", true},  {"out-scales", true},  {"out-values", true},
    {"jit", false},       {"zero", true},
}};

/// Which options each subcommand takes (the rest are refused by name).
struct Verb {
  std::string_view name;
  std::vector<std::string_view> required, optional;
};

const Verb kVerbs[] = {
    {"init",
     {"cache", "scheme", "batch", "kv-heads", "head-dim"},
     {"capacity", "pages", "block-table", "group", "convention", "k-scales",
      "v-scales", "residual", "keys", "zero"}},
    {"append", {"cache", "k", "v"}, {"from"}},
    {"dequantize", {"cache", "out-k", "out-v"}, {}},
    {"attend", {"cache", "q", "out"}, {"scale", "split", "jit"}},
    {"quantize",
     {"scheme", "input", "out-codes", "out-scales"},
     {"group", "convention", "out-values"}},
};

constexpr int64_t kLimit = int64_t(1) << 30;

/// --convention, when given, into `convention`; false and the message for
/// a name that is neither multiplier nor divisor.
bool readConvention(const ParsedCommandLine &parsed,
                    kv::ScaleConvention &convention, std::string *error) {
  const std::string *name = parsed.value("convention");
  if (!name)
    return true;
  std::optional<kv::ScaleConvention> value = kv::parseScaleConvention(*name);
  if (!value) {
    *error = fmt::format("unknown --convention '{}': expected multiplier or "
                         "divisor",
                         *name);
    return false;
  }
  convention = *value;
  return true;
}

/// The paths a subcommand reads and writes: the --out* files, the files
/// it reads, and the cache, which init and append replace and the others
/// read.
CommandPaths kvPaths(const Verb &verb, const ParsedCommandLine &parsed) {
  CommandPaths paths;
  for (const char *input :
       {"block-table", "k-scales", "v-scales", "k", "v", "q", "input"})
    paths.reads(input, parsed.value(input));
  for (const char *output :
       {"out", "out-k", "out-v", "out-codes", "out-scales", "out-values"})
    paths.writes(output, parsed.value(output));
  bool replacesCache = verb.name == "init" || verb.name == "append";
  return replacesCache ? paths.writes("cache", parsed.value("cache"))
                       : paths.reads("cache", parsed.value("cache"));
}

/// readValues' rank for any tensor of rank >= 2.
constexpr size_t kAnyRank = 0;

/// A float tensor of rank `rank` from `path`: float32, float16, or bf16
/// bit patterns as uint16 (with --from bf16).
std::optional<std::pair<std::vector<float>, std::vector<int64_t>>>
readValues(const std::string &path, size_t rank, std::string_view from,
           std::string *error) {
  std::optional<npy::Array> array = npy::readNpy(path, error, npy::kMaxNpyRank);
  if (!array)
    return std::nullopt;
  if (rank == kAnyRank && array->shape.size() < 2) {
    *error = fmt::format("{}: expected an array of 2 or more axes, got "
                         "shape {}",
                         path, array->shapeText());
    return std::nullopt;
  }
  if (rank != kAnyRank && array->shape.size() != rank) {
    *error = fmt::format("{}: expected a {}-D array, got shape {}", path, rank,
                         array->shapeText());
    return std::nullopt;
  }
  std::vector<float> values;
  if (array->dtype == npy::DType::F32 && from != "f16" && from != "bf16")
    values = array->values<float>();
  else if (array->dtype == npy::DType::F16 && from != "f32" && from != "bf16")
    values = widenToFloat(HalfType::F16, array->values<uint16_t>());
  else if (array->dtype == npy::DType::U16 && from == "bf16")
    values = widenToFloat(HalfType::BF16, array->values<uint16_t>());
  else {
    *error = fmt::format("{}: a {} array cannot hold {} values (float32, "
                         "float16, or uint16 bf16 bits with --from bf16)",
                         path, npy::dtypeName(array->dtype),
                         from.empty() ? "float" : from);
    return std::nullopt;
  }
  return std::make_pair(std::move(values), array->shape);
}

std::optional<std::vector<float>> readScales(const std::string &path,
                                             std::string *error) {
  auto scales = readValues(path, 1, "f32", error);
  if (!scales)
    return std::nullopt;
  return scales->first;
}

CommandResult runInit(const ParsedCommandLine &parsed) {
  std::string error;
  kv::KvCacheConfig config;
  int64_t groupSize = 0;
  std::optional<kv::KvScheme> scheme =
      kv::parseKvScheme(*parsed.value("scheme"), &groupSize);
  if (!scheme)
    return fail(fmt::format("unknown KV scheme '{}': expected kv_int8_g<G> "
                            "(kv_int8_g64), kv_int8, kv_fp8_e4m3, kv_fp8_e5m2, "
                            "kv_kivi_int4 or kv_kivi_int2",
                            *parsed.value("scheme")));
  if (groupSize && parsed.value("group"))
    return fail(fmt::format("--scheme {} names its group size; drop --group",
                            *parsed.value("scheme")));
  config.scheme = *scheme;
  bool kivi = kv::isKivi(*scheme);
  if (!groupSize)
    groupSize = kivi ? config.kivi.groupSize : config.int8.groupSize;
  auto number = [&](std::string_view name, int64_t fallback, int64_t &into) {
    std::optional<int64_t> value =
        integerOption(parsed, name, fallback, 1, kLimit, &error);
    if (value)
      into = *value;
    return value.has_value();
  };
  if (!number("batch", 1, config.batch) ||
      !number("kv-heads", 1, config.kvHeads) ||
      !number("head-dim", 1, config.headDim) ||
      !number("group", groupSize, config.int8.groupSize))
    return fail(error);
  if (!kivi && (parsed.value("residual") || parsed.value("keys") ||
                parsed.value("zero")))
    return fail("--residual, --keys and --zero are for kv_kivi_*");
  if (kivi) {
    if (parsed.value("convention") || parsed.value("k-scales") ||
        parsed.value("v-scales"))
      return fail("kv_kivi_* computes asymmetric scales and zero points; "
                  "--convention, --k-scales and --v-scales are for other "
                  "schemes");
    config.kivi.groupSize = config.int8.groupSize;
    std::optional<int64_t> residual =
        integerOption(parsed, "residual", config.kivi.residual, 0, 128, &error);
    if (!residual)
      return fail(error);
    config.kivi.residual = *residual;
    if (const std::string *keys = parsed.value("keys")) {
      if (*keys != "per_channel" && *keys != "per_token")
        return fail(fmt::format("unknown --keys '{}': expected per_channel or "
                                "per_token",
                                *keys));
      config.kivi.keys = *keys == "per_channel" ? kv::KeyGranularity::PerChannel
                                                : kv::KeyGranularity::PerToken;
    }
    if (const std::string *zero = parsed.value("zero")) {
      std::optional<kv::KiviZero> parsedZero = kv::parseKiviZero(*zero);
      if (!parsedZero)
        return fail(fmt::format("unknown --zero '{}': expected float (KIVI's "
                                "min) or int (an integer zero point)",
                                *zero));
      config.kivi.zero = *parsedZero;
    }
  } else if (*scheme == kv::KvScheme::Int8Groups) {
    if (parsed.value("k-scales") || parsed.value("v-scales"))
      return fail("kv_int8 computes its scales; --k-scales and --v-scales "
                  "are for kv_fp8_*");
    if (!readConvention(parsed, config.int8.convention, &error))
      return fail(error);
  } else {
    if (parsed.value("group") || parsed.value("convention"))
      return fail("--group is for kv_int8 and kv_kivi_*, --convention for "
                  "kv_int8");
    if (!parsed.value("k-scales") || !parsed.value("v-scales"))
      return fail("an FP8 cache needs --k-scales and --v-scales");
    auto keys = readScales(*parsed.value("k-scales"), &error);
    if (!keys)
      return fail(error);
    auto values = readScales(*parsed.value("v-scales"), &error);
    if (!values)
      return fail(error);
    config.keyScales = std::move(*keys);
    config.valueScales = std::move(*values);
  }
  bool paged = parsed.value("pages") || parsed.value("block-table");
  if (paged == bool(parsed.value("capacity")))
    return fail("give either --capacity (contiguous) or --pages and "
                "--block-table (paged)");
  config.paged = paged;
  if (paged) {
    if (!parsed.value("pages") || !parsed.value("block-table"))
      return fail("a paged cache needs --pages and --block-table");
    if (!number("pages", 1, config.pages))
      return fail(error);
    std::optional<npy::Array> table =
        npy::readNpy(*parsed.value("block-table"), &error);
    if (!table)
      return fail(error);
    if (table->dtype != npy::DType::I32 || table->shape.size() != 2 ||
        table->shape[0] != config.batch)
      return fail(fmt::format("{}: the block table must be int32 of shape "
                              "[batch = {}, max_blocks], got {} {}",
                              *parsed.value("block-table"), config.batch,
                              npy::dtypeName(table->dtype),
                              table->shapeText()));
    config.maxBlocks = table->shape[1];
    config.blockTable = table->values<int32_t>();
  } else if (!number("capacity", 1, config.capacity)) {
    return fail(error);
  }
  std::optional<kv::KvCache> cache = kv::KvCache::create(config, &error);
  if (!cache)
    return fail(error);
  if (!files::writeKvCacheDirectory(*parsed.value("cache"), *cache, &error))
    return fail(error);
  return std::nullopt;
}

CommandResult runAppend(const ParsedCommandLine &parsed) {
  std::string error;
  const std::string &directory = *parsed.value("cache");
  std::optional<kv::KvCache> cache =
      files::readKvCacheDirectory(directory, &error);
  if (!cache)
    return fail(error);
  std::string from = parsed.value("from") ? *parsed.value("from") : "";
  if (!from.empty() && from != "f32" && from != "f16" && from != "bf16")
    return fail(fmt::format("unknown --from type '{}': expected f32, f16 or "
                            "bf16",
                            from));
  auto keys = readValues(*parsed.value("k"), 4, from, &error);
  if (!keys)
    return fail(error);
  auto values = readValues(*parsed.value("v"), 4, from, &error);
  if (!values)
    return fail(error);
  const kv::KvCacheConfig &config = cache->config();
  for (const auto *tensor : {&*keys, &*values}) {
    const std::vector<int64_t> &shape = tensor->second;
    if (shape != keys->second || shape[0] != config.batch ||
        shape[1] != config.kvHeads || shape[3] != config.headDim)
      return fail(fmt::format(
          "K and V must both be [batch = {}, kv_heads = "
          "{}, tokens, head_dim = {}]; got ({}, {}, {}, "
          "{}) and ({}, {}, {}, {})",
          config.batch, config.kvHeads, config.headDim, keys->second[0],
          keys->second[1], keys->second[2], keys->second[3], values->second[0],
          values->second[1], values->second[2], values->second[3]));
  }
  if (!cache->append(keys->first, values->first, keys->second[2], &error))
    return fail(fmt::format("{}: {}", directory, error));
  if (!files::writeKvCacheDirectory(directory, *cache, &error))
    return fail(error);
  return std::nullopt;
}

bool writeF32(const std::string &path, std::vector<int64_t> shape,
              const std::vector<float> &values, std::string *error) {
  return npy::writeNpy(
      path,
      npy::Array::fromValues<float>(npy::DType::F32, std::move(shape), values),
      error);
}

CommandResult runDequantizeCache(const ParsedCommandLine &parsed,
                                 const kv::KvCache &cache) {
  std::string error;
  const kv::KvCacheConfig &config = cache.config();
  std::vector<int64_t> shape = {config.batch, config.kvHeads, cache.maxLength(),
                                config.headDim};
  if (cache.maxLength() == 0)
    return fail(fmt::format("{}: the cache holds no tokens yet",
                            *parsed.value("cache")));
  if (!writeF32(*parsed.value("out-k"), shape, cache.dequantizeKeys(),
                &error) ||
      !writeF32(*parsed.value("out-v"), shape, cache.dequantizeValues(),
                &error))
    return fail(error);
  return std::nullopt;
}

/// The kv_attend spec of `cache`'s layout and scheme.
std::string attendSpecOf(const kv::KvCache &cache, int64_t qHeads, float scale,
                         int64_t split) {
  const kv::KvCacheConfig &config = cache.config();
  std::string scheme =
      config.scheme == kv::KvScheme::Int8Groups
          ? fmt::format("kv_int8_g{} convention={}", config.int8.groupSize,
                        kv::scaleConventionName(config.int8.convention))
          : fmt::format("{} scale={}", kv::kvSchemeName(config.scheme),
                        config.keyScales.size() > 1 ? "per_head"
                                                    : "per_tensor");
  return fmt::format("kv_attend {} q=f32 layout={} q_heads={} kv_heads={} "
                     "head_dim={} split={} softmax_scale={}",
                     scheme, config.paged ? "paged" : "contiguous", qHeads,
                     config.kvHeads, config.headDim, split, scale);
}

/// Decode attention through the compiled kernel (lowbit::Jit::getKv on
/// the CPU), over the cache's own storage: the kernel ABI's 2-D view of
/// it (docs/decode-attention.md).
std::optional<std::vector<float>>
attendCompiled(const kv::KvCache &cache, const std::vector<float> &query,
               int64_t qHeads, float scale, int64_t split, std::string *error) {
  const kv::KvCacheConfig &config = cache.config();
  if (config.scheme != kv::KvScheme::Int8Groups &&
      config.scheme != kv::KvScheme::Fp8E4M3 &&
      config.scheme != kv::KvScheme::Fp8E5M2) {
    *error = fmt::format("--jit takes kv_int8 and kv_fp8 caches; this one is "
                         "{} (run it without --jit)",
                         kv::kvSchemeName(config.scheme));
    return std::nullopt;
  }
  if (qHeads % config.kvHeads != 0) {
    *error = fmt::format("query heads ({}) must be a multiple of kv heads ({})",
                         qHeads, config.kvHeads);
    return std::nullopt;
  }
  auto jit = Jit::create();
  Expected<KvKernel> kernel =
      jit ? (*jit)->getKv(attendSpecOf(cache, qHeads, scale, split), Target{})
          : Expected<KvKernel>(jit.error());
  if (!kernel) {
    *error = kernel.error().message;
    return std::nullopt;
  }
  fmt::print("jit: {} (cpu, {:.1f} ms to compile)\n", kernel->spec(),
             kernel->compileMillis());
  const int64_t batch = config.batch, headDim = config.headDim;
  const std::vector<int64_t> storage = cache.storageShape(1);
  const int64_t rows = storage[0] * storage[1] * storage[2];
  const int64_t maxTokens =
      config.paged ? config.maxBlocks * 16 : config.capacity;
  const int64_t splits = (maxTokens + split - 1) / split;
  std::vector<int32_t> lengths(cache.lengths().begin(), cache.lengths().end());
  std::vector<float> output(size_t(batch * qHeads * headDim));
  std::vector<float> partials(size_t(batch * qHeads * splits * (headDim + 2)));
  auto tensor = [](const void *data, ElementType element, int64_t rows,
                   int64_t cols) {
    KvTensor made;
    made.data = const_cast<void *>(data);
    made.element = element;
    made.rank = 2;
    made.shape[0] = rows;
    made.shape[1] = cols;
    return made;
  };
  const bool int8 = config.scheme == kv::KvScheme::Int8Groups;
  auto scales = [&](const std::vector<float> &rowScales,
                    const std::vector<float> &staticScales) {
    return int8 ? tensor(rowScales.data(), ElementType::F32, rows,
                         cache.scaleWidth())
                : tensor(staticScales.data(), ElementType::F32, 1,
                         int64_t(staticScales.size()));
  };
  std::vector<KvTensor> buffers = {
      tensor(query.data(), ElementType::F32, batch * qHeads, headDim),
      tensor(cache.keyCodes.data(), ElementType::I8, rows, headDim),
      scales(cache.keyRowScales, config.keyScales),
      tensor(cache.valueCodes.data(), ElementType::I8, rows, headDim),
      scales(cache.valueRowScales, config.valueScales),
      tensor(lengths.data(), ElementType::I32, 1, batch)};
  if (config.paged)
    buffers.push_back(tensor(config.blockTable.data(), ElementType::I32, batch,
                             config.maxBlocks));
  buffers.push_back(
      tensor(output.data(), ElementType::F32, batch * qHeads, headDim));
  buffers.push_back(tensor(partials.data(), ElementType::F32,
                           batch * qHeads * splits, headDim + 2));
  if (Status ran = kernel->run(buffers); !ran) {
    *error = ran.error().message;
    return std::nullopt;
  }
  return output;
}

CommandResult runAttend(const ParsedCommandLine &parsed,
                        const kv::KvCache &cache) {
  std::string error;
  const kv::KvCacheConfig &config = cache.config();
  auto query = readValues(*parsed.value("q"), 3, "", &error);
  if (!query)
    return fail(error);
  const std::vector<int64_t> &shape = query->second;
  if (shape[0] != config.batch || shape[2] != config.headDim)
    return fail(
        fmt::format("the queries must be [batch = {}, q_heads, "
                    "head_dim = {}]; got {}",
                    config.batch, config.headDim,
                    npy::Array{npy::DType::F32, shape, {}}.shapeText()));
  float scale = 1.0f / std::sqrt(float(config.headDim));
  if (const std::string *text = parsed.value("scale")) {
    char *end = nullptr;
    scale = std::strtof(text->c_str(), &end);
    if (end != text->c_str() + text->size() || !std::isfinite(scale) ||
        !(scale > 0.0f))
      return fail(
          fmt::format("--scale '{}' is not a finite number > 0", *text));
  }
  std::optional<int64_t> split =
      integerOption(parsed, "split", 256, 1, kLimit, &error);
  if (!split)
    return fail(error);
  std::optional<std::vector<float>> out =
      parsed.flag("jit")
          ? attendCompiled(cache, query->first, shape[1], scale, *split, &error)
          : cache.attend(query->first, shape[1], scale, *split, &error);
  if (!out)
    return fail(error);
  if (!writeF32(*parsed.value("out"), shape, *out, &error))
    return fail(error);
  return std::nullopt;
}

/// kv_int8 on one N-D tensor (the contract of docs/kv-cache.md).
CommandResult runQuantizeTensor(const ParsedCommandLine &parsed) {
  std::string error;
  int64_t groupSize = 0;
  std::optional<kv::KvScheme> scheme =
      kv::parseKvScheme(*parsed.value("scheme"), &groupSize);
  if (scheme != kv::KvScheme::Int8Groups)
    return fail(fmt::format("'kv quantize' takes kv_int8_g<G> or kv_int8, "
                            "got '{}' (FP8 and KIVI quantize through a "
                            "cache: kv init and kv append)",
                            *parsed.value("scheme")));
  if (groupSize && parsed.value("group"))
    return fail(fmt::format("--scheme {} names its group size; drop --group",
                            *parsed.value("scheme")));
  kv::Int8GroupOptions options;
  std::optional<int64_t> group =
      integerOption(parsed, "group", groupSize ? groupSize : options.groupSize,
                    1, kLimit, &error);
  if (!group)
    return fail(error);
  options.groupSize = *group;
  if (!readConvention(parsed, options.convention, &error))
    return fail(error);
  auto values = readValues(*parsed.value("input"), kAnyRank, "", &error);
  if (!values)
    return fail(error);
  std::optional<kv::Int8GroupTensor> tensor =
      kv::quantizeInt8Groups(values->first, values->second, options, &error);
  if (!tensor)
    return fail(fmt::format("{}: {}", *parsed.value("input"), error));
  std::optional<npy::Array> outputs[3] = {
      npy::Array::fromValues<int8_t>(npy::DType::I8, tensor->shape,
                                     tensor->codes),
      npy::Array::fromValues<float>(npy::DType::F32, tensor->scaleShape(),
                                    tensor->scales),
      std::nullopt};
  if (parsed.value("out-values"))
    outputs[2] = npy::Array::fromValues<float>(
        npy::DType::F32, tensor->shape, kv::dequantizeInt8Groups(*tensor));
  const char *names[3] = {"out-codes", "out-scales", "out-values"};
  for (int i = 0; i < 3; ++i)
    if (outputs[i] &&
        !npy::writeNpy(*parsed.value(names[i]), *outputs[i], &error))
      return fail(error);
  return std::nullopt;
}

} // namespace

CommandResult runKv(Arguments args) {
  if (args.empty() || args.front() == "--help" || args.front() == "-h") {
    fmt::print("{}", kUsage);
    return args.empty() ? fail("'kv' needs a subcommand: init, append, "
                               "dequantize, attend or quantize")
                        : std::nullopt;
  }
  const Verb *verb = nullptr;
  for (const Verb &candidate : kVerbs)
    if (candidate.name == args.front())
      verb = &candidate;
  if (!verb)
    return fail(fmt::format("unknown 'kv' subcommand '{}': expected init, "
                            "append, dequantize, attend or quantize",
                            args.front()));
  CommandResult done;
  auto parsed =
      parseCommandLineOrHelp("kv", args.subspan(1), kOptions, kUsage, &done);
  if (!parsed)
    return done;
  if (!parsed->operands.empty())
    return fail(fmt::format("'kv {}' takes no operands, got '{}'", verb->name,
                            parsed->operands.front()));
  for (const auto &[name, value] : parsed->values)
    if (std::ranges::find(verb->required, name) == verb->required.end() &&
        std::ranges::find(verb->optional, name) == verb->optional.end())
      return fail(fmt::format("'kv {}' does not take --{}", verb->name, name));
  for (const std::string &flag : parsed->flags)
    if (std::ranges::find(verb->optional, flag) == verb->optional.end())
      return fail(fmt::format("'kv {}' does not take --{}", verb->name, flag));
  for (std::string_view required : verb->required)
    if (!parsed->value(required))
      return fail(fmt::format("'kv {}' needs --{}", verb->name, required));
  if (CommandResult aliased = kvPaths(*verb, *parsed).check())
    return aliased;
  if (verb->name == "init")
    return runInit(*parsed);
  if (verb->name == "append")
    return runAppend(*parsed);
  if (verb->name == "quantize")
    return runQuantizeTensor(*parsed);
  std::string error;
  std::optional<kv::KvCache> cache =
      files::readKvCacheDirectory(*parsed->value("cache"), &error);
  if (!cache)
    return fail(error);
  if (verb->name == "dequantize")
    return runDequantizeCache(*parsed, *cache);
  return runAttend(*parsed, *cache);
}

CommandResult runEvalKv(Arguments args) {
  if (!args.empty())
    return fail(fmt::format("'eval --kv' takes no other arguments, got '{}'",
                            args.front()));
  kv::KvEvalConfig config;
  config.shape.maxTokens = 256;
  std::vector<kv::KvEvalRow> rows = kv::evaluateKvSchemes(config);
  fmt::print("KV cache: [{} sequences, {} q heads, {} kv heads, head_dim {}, "
             "{} tokens]; keys N(0,1) + offset {} in {} channels, values "
             "N(0,1) + channel mean; attention: f32 split-K on the "
             "dequantized cache vs f64 on the original\n",
             config.shape.batch, config.shape.qHeads, config.shape.kvHeads,
             config.shape.headDim, config.shape.maxTokens, config.outlierScale,
             config.outlierChannels);
  fmt::print("{:<48} {:>9} {:>11} {:>11} {:>14}\n", "scheme", "bits/elem",
             "K MSE", "V MSE", "attn rel err");
  for (const kv::KvEvalRow &row : rows)
    fmt::print("{:<48} {:>9.2f} {:>11.4g} {:>11.4g} {:>13.3f}%\n", row.scheme,
               row.bitsPerElement, row.keyMse, row.valueMse,
               100.0 * row.attentionRelativeError);
  return std::nullopt;
}

} // namespace lowbit::cli
