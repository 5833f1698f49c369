//===- ModelPlan.cpp - What quantize-model will write, before it writes ---===//

#include "checkpoint/ModelPlan.h"

#include "checkpoint/QuantConfig.h"
#include "format/SchemeText.h"
#include "runtime/core/Sha256.h"

#include <algorithm>
#include <filesystem>
#include <regex>

namespace lowbit::checkpoint {

namespace {

namespace fs = std::filesystem;

Error invalid(std::string message) {
  return makeError(ErrorCode::InvalidArgument, std::move(message));
}

/// The module a weight belongs to: "model.layers.0.mlp.up_proj" for
/// "model.layers.0.mlp.up_proj.weight".
std::optional<std::string> linearModule(const TensorInfo &info) {
  constexpr std::string_view kSuffix = ".weight";
  if (info.shape.size() != 2 || !info.name.ends_with(kSuffix) ||
      info.name.size() == kSuffix.size())
    return std::nullopt;
  if (info.dtype != DType::F32 && info.dtype != DType::F16 &&
      info.dtype != DType::BF16)
    return std::nullopt;
  return info.name.substr(0, info.name.size() - kSuffix.size());
}

bool isInside(const fs::path &inner, const fs::path &outer) {
  auto [end, rest] =
      std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end());
  return end == outer.end();
}

Status checkOptions(const QuantizeModelOptions &options) {
  if (options.shardCount < 1 || options.shardIndex < 0 ||
      options.shardIndex >= options.shardCount)
    return invalid("--shard " + std::to_string(options.shardIndex) + "/" +
                   std::to_string(options.shardCount) +
                   ": I/N needs N >= 1 and 0 <= I < N");
  if (options.jobs < 1)
    return invalid("--jobs must be at least 1");
  if (options.maxShardBytes == 0)
    return invalid("the shard size limit must be positive");
  std::error_code code;
  if (!fs::is_directory(options.inputDirectory, code))
    return invalid("--in '" + options.inputDirectory + "' is not a directory");
  fs::path input = fs::weakly_canonical(options.inputDirectory, code);
  fs::path output = fs::weakly_canonical(options.outputDirectory, code);
  if (code || options.outputDirectory.empty())
    return invalid("--out '" + options.outputDirectory +
                   "' is not a usable path");
  if (isInside(output, input))
    return invalid("--out '" + options.outputDirectory + "' is inside --in '" +
                   options.inputDirectory +
                   "': the output would be read as part of the model");
  if (isInside(input, output))
    return invalid("--in '" + options.inputDirectory + "' is inside --out '" +
                   options.outputDirectory + "'");
  return Status::success();
}

std::string fingerprintOf(const QuantizeModelOptions &options,
                          const ModelPlan &plan) {
  std::string text = "lowbit quantize-model 1\n";
  text += "scheme " + printSchemeText(options.scheme) + "\n";
  text += "layout " + plan.form.describe() + "\n";
  for (const std::string &pattern : options.ignore)
    text += "ignore " + pattern + "\n";
  text += "shard-bytes " + std::to_string(options.maxShardBytes) + "\n";
  for (const auto &[name, entry] : plan.input.tensors()) {
    text += "tensor " + name + " " + std::string(dtypeName(entry.info->dtype));
    for (int64_t extent : entry.info->shape)
      text += " " + std::to_string(extent);
    text += "\n";
  }
  return runtime::sha256Hex(text);
}

/// A module's set directory must be one plain name that no other file of
/// the output has.
Status checkSetDirectory(const std::string &module) {
  if (module.find('/') != std::string::npos || module.starts_with(".") ||
      module.ends_with(".json") || module.ends_with(".safetensors"))
    return invalid("module '" + module +
                   "' cannot name its set's directory under --out (a '/', "
                   "a leading '.', or the name of a checkpoint file); "
                   "--ignore it or use --format compressed-tensors");
  return Status::success();
}

} // namespace

Expected<OutputForm> OutputForm::of(const Scheme &scheme, OutputFormat format) {
  OutputForm form(scheme);
  if (format == OutputFormat::CompressedTensors) {
    Expected<CompressedTensorsForm> compressed =
        CompressedTensorsForm::of(scheme);
    if (!compressed)
      return std::move(compressed).takeError();
    form.compressed = std::move(*compressed);
    return form;
  }
  if (scheme.scale.mode == ScaleMode::Static)
    return invalid("a static scheme quantizes with given scales; "
                   "quantize-model computes them (RTN): use the dynamic "
                   "scheme");
  return form;
}

Expected<Scheme> OutputForm::schemeFor(const std::string &name, int64_t n,
                                       int64_t k) const {
  if (compressed)
    return compressed->schemeFor(name, n, k);
  std::string error;
  if (!validateSchemeForShape(given, n, k, &error))
    return invalid("'" + name + "' [" + std::to_string(n) + ", " +
                   std::to_string(k) + "]: " + error);
  return given;
}

std::vector<TensorSpec> OutputForm::plannedTensors(const std::string &prefix,
                                                   int64_t n, int64_t k) const {
  if (compressed)
    return compressed->plannedTensors(prefix, n, k);
  return {};
}

Expected<std::vector<OwnedTensor>>
OutputForm::exportWeight(QuantizedTensor tensor,
                         const std::string &prefix) const {
  if (compressed)
    return compressed->exportWeight(std::move(tensor), prefix);
  return std::vector<OwnedTensor>{};
}

json::JsonValue
OutputForm::quantizationConfig(std::span<const std::string> ignore) const {
  if (compressed)
    return compressed->quantizationConfig(ignore);
  using json::JsonValue;
  JsonValue ignored = JsonValue::array();
  for (const std::string &module : ignore)
    ignored.push(JsonValue::string(module));
  JsonValue config = JsonValue::object();
  config.set("format", JsonValue::string("lowbit-sets"));
  config.set("ignore", std::move(ignored));
  config.set("quant_method", JsonValue::string("lowbit"));
  config.set("scheme", JsonValue::string(printSchemeText(given)));
  return config;
}

std::string OutputForm::describe() const {
  if (compressed)
    return compressed->describe();
  return "lowbit sets (one directory per weight), " + printSchemeText(given);
}

Expected<bool> matchesIgnore(const std::string &module,
                             std::span<const std::string> patterns) {
  for (const std::string &pattern : patterns) {
    if (pattern.starts_with("re:")) {
      try {
        std::regex expression(pattern.substr(3));
        if (std::regex_search(module, expression,
                              std::regex_constants::match_continuous))
          return true;
      } catch (const std::regex_error &error) {
        return invalid("--ignore '" + pattern +
                       "': not a regular expression (" + error.what() + ")");
      }
      continue;
    }
    if (module == pattern ||
        (module.ends_with(pattern) &&
         module[module.size() - pattern.size() - 1] == '.'))
      return true;
  }
  return false;
}

Expected<ModelPlan> planModel(const QuantizeModelOptions &options) {
  if (Status status = checkOptions(options); !status)
    return std::move(status).takeError();
  Expected<QuantLayout> layout = detectLayout(options.inputDirectory);
  if (!layout)
    return std::move(layout).takeError();
  if (layout->kind != QuantLayout::Kind::None)
    return invalid("--in '" + options.inputDirectory +
                   "' is quantized already (" + layout->describe() +
                   "); quantize-model reads an unquantized checkpoint");
  Expected<OutputForm> form = OutputForm::of(options.scheme, options.format);
  if (!form)
    return invalid("scheme " + printSchemeText(options.scheme) + ": " +
                   form.error().message);
  Expected<Checkpoint> input = Checkpoint::open(options.inputDirectory);
  if (!input)
    return std::move(input).takeError();
  ModelPlan plan{std::move(*input), *form, {}, {}, {}, {}};

  for (const auto &[name, entry] : plan.input.tensors()) {
    PlannedTensor tensor{name, &entry, std::nullopt, {}, {}};
    const TensorInfo &info = *entry.info;
    if (std::optional<std::string> module = linearModule(info)) {
      Expected<bool> ignored = matchesIgnore(*module, options.ignore);
      if (!ignored)
        return std::move(ignored).takeError();
      if (*ignored) {
        plan.ignoredModules.push_back(*module);
      } else {
        Expected<Scheme> scheme =
            plan.form.schemeFor(name, info.shape[0], info.shape[1]);
        if (!scheme)
          return invalid(scheme.error().message + " (--ignore " + *module +
                         " leaves it as it is)");
        tensor.scheme = *scheme;
        tensor.outputs =
            plan.form.plannedTensors(*module, info.shape[0], info.shape[1]);
        if (plan.form.writesSets()) {
          if (Status status = checkSetDirectory(*module); !status)
            return std::move(status).takeError();
          tensor.setDirectory = *module;
        }
      }
    }
    if (!tensor.scheme)
      tensor.outputs = {{name, info.dtype, info.shape}};
    plan.tensors.push_back(std::move(tensor));
  }

  // The input's order (by name) cut at the limit, as writeCheckpoint cuts.
  for (size_t index = 0; index < plan.tensors.size(); ++index) {
    uint64_t bytes = 0;
    for (const TensorSpec &spec : plan.tensors[index].outputs)
      bytes += *tensorByteSize(spec.dtype, spec.shape, spec.name);
    if (plan.shards.empty() ||
        (plan.shards.back().bytes > 0 &&
         plan.shards.back().bytes + bytes > options.maxShardBytes))
      plan.shards.emplace_back();
    plan.shards.back().tensors.push_back(index);
    plan.shards.back().bytes += bytes;
  }
  if (plan.shards.empty())
    return invalid("--in '" + options.inputDirectory + "' holds no tensors");
  if (plan.shards.size() > 99999)
    return invalid("the checkpoint would need more than 99999 shards; raise "
                   "the shard size limit");
  int count = int(plan.shards.size());
  for (int shard = 0; shard < count; ++shard)
    plan.shards[size_t(shard)].fileName = count == 1
                                              ? std::string(kSingleFileName)
                                              : shardFileName(shard + 1, count);
  plan.fingerprint = fingerprintOf(options, plan);
  return plan;
}

} // namespace lowbit::checkpoint
