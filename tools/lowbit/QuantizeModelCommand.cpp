//===- QuantizeModelCommand.cpp - `lowbit quantize-model` -----------------===//
//
// Quantizes a Hugging Face checkpoint directory into a compressed-tensors
// one, or one lowbit set per weight (checkpoint/ModelQuantizer.h): RTN
// streamed shard by shard, resumable, splittable with --shard I/N and
// finished by --merge. Runs in the MLIR-free front end; the weights are
// quantized by the JIT'd CPU kernels (lowbit::Jit, whose compiler library
// is loaded at the first kernel), bit-exact to the reference quantizer,
// which --backend reference (or a scheme the JIT does not compile) uses.
// Prints a progress bar on a terminal (stderr) and a summary of the
// per-layer SQNR (docs/checkpoints.md).
//
//===----------------------------------------------------------------------===//

#include "tools/lowbit/QuantizeModelCommand.h"
#include "checkpoint/ModelQuantizer.h"
#include "format/SchemeText.h"
#include "tools/lowbit/CommandLine.h"
#include "tools/lowbit/JitBackend.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <mutex>

#include <fmt/format.h>
#include <malloc.h>
#include <unistd.h>

namespace lowbit::cli {

namespace {

constexpr std::string_view kUsage =
    "usage: lowbit quantize-model --scheme SCHEME --in HF_DIR --out OUT_DIR\n"
    "         [--format compressed-tensors|lowbit] [--ignore PATTERNS]\n"
    "         [--jobs N] [--shard I/N] [--max-shard-bytes BYTES]\n"
    "         [--backend auto|cpu|reference]\n"
    "       lowbit quantize-model --merge --scheme SCHEME --in HF_DIR "
    "--out OUT_DIR [...]\n\n"
    "Quantizes every 2-D linear weight (a '<module>.weight' of f32, f16 or\n"
    "bf16) of the checkpoint in HF_DIR with round-to-nearest in SCHEME and\n"
    "writes a compressed-tensors checkpoint to OUT_DIR: sharded safetensors,\n"
    "config.json with its quantization_config, the other files copied, and\n"
    "quant_report.json with each layer's SQNR. Other tensors are copied.\n"
    "--format lowbit writes each weight as a set of 'lowbit quantize' in\n"
    "OUT_DIR/<module>/ instead (every scheme; 'lowbit dequantize --in' and\n"
    "'lowbit matmul --weights' read it).\n\n"
    "  --ignore PATTERNS  comma-separated modules left as they are: a name\n"
    "                     ('lm_head' matches 'lm_head' and 'x.lm_head') or\n"
    "                     're:REGEX' matched from the start of the name;\n"
    "                     default 'lm_head,re:.*embed'\n"
    "  --jobs N           quantize N tensors at a time (memory: N tensors)\n"
    "  --shard I/N        write only shards j with j mod N = I (0 <= I < N),\n"
    "                     for N independent runs; then run --merge once\n"
    "  --merge            check every shard is done, write the index,\n"
    "                     config.json, quant_report.json and the copies\n"
    "  --max-shard-bytes  output shard size limit (default 5000000000)\n"
    "  --backend          cpu: the JIT-compiled CPU kernels; reference: the\n"
    "                     reference quantizer; auto (default): cpu where the\n"
    "                     JIT compiles the scheme. All write the same "
    "bytes.\n\n"
    "An interrupted run is resumed by running it again: finished shards are\n"
    "kept, nothing half-written is left (docs/checkpoints.md).\n";

constexpr std::array<OptionSpec, 10> kOptions = {{
    {"scheme", true},
    {"in", true},
    {"out", true},
    {"format", true},
    {"ignore", true},
    {"jobs", true},
    {"shard", true},
    {"max-shard-bytes", true},
    {"merge", false},
    {"backend", true},
}};

std::vector<std::string> splitPatterns(std::string_view text) {
  std::vector<std::string> patterns;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view pattern = text.substr(0, comma);
    if (!pattern.empty())
      patterns.emplace_back(pattern);
    if (comma == std::string_view::npos)
      break;
    text.remove_prefix(comma + 1);
  }
  return patterns;
}

/// "I/N" with both decimal.
bool parseShard(std::string_view text, int &index, int &count) {
  size_t slash = text.find('/');
  if (slash == std::string_view::npos)
    return false;
  auto whole = [](std::string_view digits, int &value) {
    auto [end, status] =
        std::from_chars(digits.data(), digits.data() + digits.size(), value);
    return status == std::errc() && end == digits.data() + digits.size();
  };
  return whole(text.substr(0, slash), index) &&
         whole(text.substr(slash + 1), count);
}

/// The JIT'd CPU kernels as quantize-model's codec. A spec the JIT does not
/// compile (or a compiler library that does not load) falls back to the
/// reference under --backend auto and is an error under cpu. Counts which
/// quantized how many weights, for the summary.
class JitCodec {
public:
  explicit JitCodec(bool required) : required(required) {}

  checkpoint::WeightCodec codec() {
    checkpoint::WeightCodec codec;
    codec.quantize = [this](const Scheme &scheme, checkpoint::DType dtype,
                            std::span<const std::byte> values, int64_t rows,
                            int64_t cols) -> Expected<QuantizedTensor> {
      ValueType valueType = dtype == checkpoint::DType::F32   ? ValueType::F32
                            : dtype == checkpoint::DType::F16 ? ValueType::F16
                                                              : ValueType::BF16;
      std::string error;
      if (!compiles(quantizeSpecFor(scheme, valueType, {}), &error) ||
          !compiles(dequantizeSpec(scheme), &error)) {
        if (required)
          return makeError(ErrorCode::InvalidArgument,
                           "the CPU backend cannot compile this scheme: " +
                               error);
        return fallback(scheme, dtype, values, rows, cols);
      }
      std::optional<QuantizedTensor> tensor =
          jitQuantize(scheme, valueType, values.data(), rows, cols, {}, &error);
      if (!tensor)
        return makeError(ErrorCode::InvalidArgument, error);
      ++onCpu;
      return std::move(*tensor);
    };
    codec.dequantize =
        [this](const QuantizedTensor &tensor) -> Expected<std::vector<float>> {
      std::string error;
      // The reference quantized it: its kernel did not compile.
      if (!compiles(dequantizeSpec(tensor.scheme), &error))
        return reference.dequantize(tensor);
      std::optional<std::vector<uint8_t>> bytes =
          jitDequantize(tensor, ValueType::F32, &error);
      if (!bytes)
        return makeError(ErrorCode::InvalidArgument, error);
      std::vector<float> values(bytes->size() / 4);
      std::memcpy(values.data(), bytes->data(), values.size() * 4);
      return values;
    };
    return codec;
  }

  /// "cpu (JIT-compiled kernels)", or what fell back to the reference.
  std::string describe() const {
    if (onReference == 0)
      return "cpu (JIT-compiled kernels)";
    return fmt::format("cpu for {} weights, reference for {} (the JIT did "
                       "not compile: {})",
                       onCpu.load(), onReference.load(), firstFailure);
  }

private:
  static KernelSpec dequantizeSpec(const Scheme &scheme) {
    KernelSpec spec;
    spec.op = KernelOp::Dequantize;
    spec.scheme = scheme;
    spec.valueType = ValueType::F32;
    return spec;
  }

  /// Whether `spec` compiles for the CPU; asked once per spec.
  bool compiles(const KernelSpec &spec, std::string *error) {
    std::string text = printKernelSpec(spec);
    std::lock_guard<std::mutex> lock(mutex);
    auto [entry, inserted] = compiled.try_emplace(text);
    if (inserted)
      entry->second.ok = compileCpuKernel(spec, &entry->second.error);
    if (!entry->second.ok) {
      *error = entry->second.error;
      if (firstFailure.empty())
        firstFailure = entry->second.error;
    }
    return entry->second.ok;
  }

  Expected<QuantizedTensor> fallback(const Scheme &scheme,
                                     checkpoint::DType dtype,
                                     std::span<const std::byte> values,
                                     int64_t rows, int64_t cols) {
    ++onReference;
    return reference.quantize(scheme, dtype, values, rows, cols);
  }

  struct Compiled {
    bool ok = false;
    std::string error;
  };
  bool required;
  const checkpoint::WeightCodec reference = checkpoint::referenceCodec();
  std::mutex mutex;
  std::map<std::string, Compiled> compiled;
  std::string firstFailure;
  std::atomic<size_t> onCpu = 0, onReference = 0;
};

/// A bar on stderr when it is a terminal; nothing otherwise (logs of a
/// batch job stay clean).
checkpoint::QuantizeProgress progressBar() {
  if (!::isatty(STDERR_FILENO))
    return {};
  return [](size_t done, size_t total) {
    constexpr size_t kWidth = 40;
    size_t filled = total ? done * kWidth / total : kWidth;
    fmt::print(stderr, "\r[{}{}] {}/{} tensors", std::string(filled, '#'),
               std::string(kWidth - filled, ' '), done, total);
    if (done == total)
      fmt::print(stderr, "\n");
    std::fflush(stderr);
  };
}

std::string sqnrText(double db) {
  return std::isinf(db) ? "inf" : fmt::format("{:.2f}", db);
}

void printSummary(const checkpoint::QuantizeModelOptions &options,
                  const checkpoint::QuantizeModelResult &result, double seconds,
                  const std::string &quantizer) {
  if (!quantizer.empty())
    fmt::print("quantizer: {}\n", quantizer);
  fmt::print("layout: {}\n", result.layout);
  fmt::print("shards: {} of {} written, {} already done\n",
             result.shardsWritten, result.shardCount, result.shardsResumed);
  if (!result.merged) {
    fmt::print("shard {}/{} done; run 'lowbit quantize-model --merge' with "
               "the same options once every shard is\n",
               options.shardIndex, options.shardCount);
    return;
  }
  fmt::print("quantized {} weights; ignored {} ({}); copied {} other "
             "tensors as they are\n",
             result.layers.size(), result.ignoredModules.size(),
             fmt::join(result.ignoredModules, ", "),
             result.keptTensors - result.ignoredModules.size());
  if (!result.layers.empty()) {
    std::vector<const checkpoint::LayerReport *> byQuality;
    double sum = 0;
    size_t finite = 0;
    for (const checkpoint::LayerReport &layer : result.layers) {
      byQuality.push_back(&layer);
      if (!std::isinf(layer.sqnrDb)) {
        sum += layer.sqnrDb;
        ++finite;
      }
    }
    // Ties keep the layers' order (the pointers are into result.layers).
    // std::sort, not std::stable_sort: with clang, libstdc++ 12's
    // stable_sort trips -Wdeprecated-declarations (the sanitizer build).
    std::sort(byQuality.begin(), byQuality.end(), [](auto *a, auto *b) {
      if (a->sqnrDb != b->sqnrDb)
        return a->sqnrDb < b->sqnrDb;
      return std::less<>()(a, b);
    });
    fmt::print("SQNR (dB): min {} ({}), mean {}, max {}\n",
               sqnrText(byQuality.front()->sqnrDb), byQuality.front()->name,
               finite ? sqnrText(sum / double(finite)) : "inf",
               sqnrText(byQuality.back()->sqnrDb));
    size_t shown = std::min<size_t>(5, byQuality.size());
    fmt::print("lowest SQNR:\n");
    for (size_t i = 0; i < shown; ++i)
      fmt::print("  {:>8}  {}\n", sqnrText(byQuality[i]->sqnrDb),
                 byQuality[i]->name);
  }
  fmt::print("copied files: {}\n",
             result.copiedFiles.empty()
                 ? std::string("none")
                 : fmt::format("{}", fmt::join(result.copiedFiles, ", ")));
  if (!result.skippedFiles.empty())
    fmt::print("not copied (not regular files): {}\n",
               fmt::join(result.skippedFiles, ", "));
  fmt::print("bytes: {} in, {} out; {:.1f} s; per-layer table in "
             "{}/quant_report.json\n",
             result.inputBytes, result.outputBytes, seconds,
             options.outputDirectory);
}

} // namespace

CommandResult runQuantizeModel(Arguments args) {
  CommandResult done;
  auto parsed =
      parseCommandLineOrHelp("quantize-model", args, kOptions, kUsage, &done);
  if (!parsed)
    return done;
  if (!parsed->operands.empty())
    return fail(fmt::format("'quantize-model' takes no operand ('{}')",
                            parsed->operands.front()));
  for (std::string_view required : {"scheme", "in", "out"})
    if (!parsed->value(required))
      return fail(fmt::format("'quantize-model' needs --{}", required));
  std::string error;
  std::optional<Scheme> scheme =
      parseSchemeText(*parsed->value("scheme"), &error);
  if (!scheme)
    return fail(
        fmt::format("--scheme '{}': {}", *parsed->value("scheme"), error));
  checkpoint::QuantizeModelOptions options(*scheme);
  options.inputDirectory = *parsed->value("in");
  options.outputDirectory = *parsed->value("out");
  if (const std::string *format = parsed->value("format")) {
    if (*format == "lowbit")
      options.format = checkpoint::OutputFormat::Lowbit;
    else if (*format != "compressed-tensors")
      return fail(fmt::format("--format '{}': expected compressed-tensors or "
                              "lowbit",
                              *format));
  }
  std::string backend = "auto";
  if (const std::string *value = parsed->value("backend"))
    backend = *value;
  if (backend != "auto" && backend != "cpu" && backend != "reference")
    return fail(fmt::format("--backend '{}': expected auto, cpu or reference",
                            backend));
  if (const std::string *ignore = parsed->value("ignore"))
    options.ignore = splitPatterns(*ignore);
  std::optional<int64_t> jobs =
      integerOption(*parsed, "jobs", 1, 1, 256, &error);
  if (!jobs)
    return fail(error);
  options.jobs = int(*jobs);
  std::optional<int64_t> shardBytes =
      integerOption(*parsed, "max-shard-bytes", int64_t(options.maxShardBytes),
                    1, int64_t(1) << 50, &error);
  if (!shardBytes)
    return fail(error);
  options.maxShardBytes = uint64_t(*shardBytes);
  if (const std::string *shard = parsed->value("shard")) {
    if (!parseShard(*shard, options.shardIndex, options.shardCount))
      return fail(fmt::format("--shard '{}': expected I/N, e.g. 0/4", *shard));
    if (options.shardCount < 1 || options.shardIndex < 0 ||
        options.shardIndex >= options.shardCount)
      return fail(fmt::format("--shard '{}': I/N needs N >= 1 and "
                              "0 <= I < N",
                              *shard));
  }
  bool merge = parsed->flag("merge");
  if (merge && parsed->value("shard"))
    return fail("--merge and --shard exclude each other: the merge runs "
                "once, after every shard");

  // Each weight allocates the same few large buffers (tens of MiB): from
  // the heap, kept when freed, the next weight reuses their pages instead
  // of mapping fresh ones, whose page faults and zeroing were a fifth of
  // the run (perf). Peak memory is the same: what is in flight.
  ::mallopt(M_MMAP_MAX, 0);
  ::mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
  // The merge quantizes nothing.
  std::optional<JitCodec> jit;
  if (backend != "reference" && !merge) {
    jit.emplace(backend == "cpu");
    options.codec = jit->codec();
  }
  auto start = std::chrono::steady_clock::now();
  Expected<checkpoint::QuantizeModelResult> result =
      merge ? checkpoint::mergeQuantizedModel(options)
            : checkpoint::quantizeModel(options, progressBar());
  // Before LLVM's statics go (JitBackend.h).
  releaseJitKernels();
  if (!result)
    return fail(result.error().message);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  printSummary(options, *result, seconds,
               merge ? std::string()
               : jit ? jit->describe()
                     : std::string("reference"));
  return std::nullopt;
}

} // namespace lowbit::cli
