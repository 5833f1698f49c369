//===- ModelQuantizer.cpp - A whole checkpoint quantized, streamed --------===//

#include "checkpoint/ModelQuantizer.h"

#include "checkpoint/ModelPlan.h"
#include "format/SchemeText.h"
#include "runtime/core/AtomicFile.h"
#include "runtime/files/QuantizedFiles.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <thread>

namespace lowbit::checkpoint {

namespace {

namespace fs = std::filesystem;
using json::JsonValue;

Error invalid(std::string message) {
  return makeError(ErrorCode::InvalidArgument, std::move(message));
}

std::string stateDirectory(const QuantizeModelOptions &options) {
  return (fs::path(options.outputDirectory) / kRunStateDirectory).string();
}

std::string stateFile(const QuantizeModelOptions &options,
                      const std::string &shardFile) {
  return stateDirectory(options) + "/" + shardFile + ".json";
}

/// The output's directories, and the run's settings in its state: a
/// directory that holds anything else is refused (a mistyped --out never
/// gets files mixed into it), as is a run of other settings.
Status prepareOutput(const QuantizeModelOptions &options,
                     const ModelPlan &plan) {
  std::error_code code;
  fs::path output(options.outputDirectory);
  std::string runFile = stateDirectory(options) + "/run.json";
  // The state directory is made first, so a run killed at any point
  // leaves a directory a rerun recognizes.
  if (fs::exists(output, code) && !fs::is_empty(output, code) &&
      !fs::is_directory(stateDirectory(options), code))
    return invalid("--out '" + options.outputDirectory +
                   "' is not empty and holds no quantize-model run; give a "
                   "new or empty directory");
  fs::create_directories(stateDirectory(options), code);
  if (code)
    return makeError(ErrorCode::Io, "cannot create '" +
                                        stateDirectory(options) +
                                        "': " + code.message());
  JsonValue run = JsonValue::object();
  run.set("fingerprint", JsonValue::string(plan.fingerprint));
  run.set("scheme", JsonValue::string(printSchemeText(options.scheme)));
  run.set("layout", JsonValue::string(plan.form.describe()));
  run.set("shards", JsonValue::number(int64_t(plan.shards.size())));
  std::string text = run.serialize() + "\n";
  std::string existing, error;
  if (fs::exists(runFile, code)) {
    if (!runtime::readFile(runFile, existing, &error))
      return makeError(ErrorCode::Io, error);
    if (existing == text)
      return Status::success();
    return invalid("--out '" + options.outputDirectory +
                   "' holds a quantize-model run of other settings or "
                   "another input (" +
                   runFile + "); give another directory or remove it");
  }
  if (!runtime::writeFileAtomically(runFile, text, &error))
    return makeError(ErrorCode::Io, error);
  return Status::success();
}

/// The shard's report entries when it is done: its file has the planned
/// tensors and its state file this run's fingerprint.
std::optional<std::vector<LayerReport>>
finishedShard(const QuantizeModelOptions &options, const ModelPlan &plan,
              const PlannedShard &shard) {
  std::string text, error;
  if (!runtime::readFile(stateFile(options, shard.fileName), text, &error))
    return std::nullopt;
  std::optional<JsonValue> state = json::parseJson(text, &error);
  const JsonValue *fingerprint = state ? state->get("fingerprint") : nullptr;
  const JsonValue *layers = state ? state->get("layers") : nullptr;
  if (!fingerprint || fingerprint->text() != plan.fingerprint || !layers ||
      !layers->isArray())
    return std::nullopt;
  Expected<SafeTensorsFile> file = SafeTensorsFile::open(
      (fs::path(options.outputDirectory) / shard.fileName).string());
  if (!file)
    return std::nullopt;
  std::vector<TensorSpec> written, planned;
  for (const TensorInfo &info : file->header().tensors)
    written.push_back({info.name, info.dtype, info.shape});
  for (size_t index : shard.tensors)
    for (const TensorSpec &spec : plan.tensors[index].outputs)
      planned.push_back(spec);
  if (written != planned)
    return std::nullopt;
  // A set is swapped in whole: its manifest means it is complete.
  std::error_code code;
  for (size_t index : shard.tensors)
    if (const std::string &set = plan.tensors[index].setDirectory;
        !set.empty() &&
        !fs::is_regular_file(
            fs::path(options.outputDirectory) / set / "manifest.json", code))
      return std::nullopt;
  std::vector<LayerReport> reports;
  for (const JsonValue &layer : layers->items()) {
    const JsonValue *name = layer.get("name");
    const JsonValue *shape = layer.get("shape");
    const JsonValue *sqnr = layer.get("sqnr_db");
    if (!name || !shape || !sqnr)
      return std::nullopt;
    LayerReport report{
        name->text(), {}, std::numeric_limits<double>::infinity()};
    for (const JsonValue &extent : shape->items())
      report.shape.push_back(extent.asInt().value_or(0));
    if (!sqnr->isNull())
      report.sqnrDb = sqnr->asDouble().value_or(0);
    reports.push_back(std::move(report));
  }
  return reports;
}

/// Values of `dtype` [begin, begin + out.size()) of `bytes` as f32 (f16
/// and bf16 widened exactly).
void widenValues(DType dtype, std::span<const std::byte> bytes, size_t begin,
                 std::span<float> out) {
  if (dtype == DType::F32) {
    std::memcpy(out.data(), bytes.data() + begin * 4, out.size() * 4);
    return;
  }
  std::vector<uint16_t> halves(out.size());
  std::memcpy(halves.data(), bytes.data() + begin * 2, out.size() * 2);
  if (dtype == DType::BF16) {
    // A bf16 is the high half of the f32 it widens to.
    for (size_t i = 0; i < out.size(); ++i) {
      uint32_t bits = uint32_t(halves[i]) << 16;
      std::memcpy(&out[i], &bits, 4);
    }
    return;
  }
  std::vector<float> wide = widenToFloat(HalfType::F16, halves);
  std::copy(wide.begin(), wide.end(), out.begin());
}

/// The reference quantizer on the values widened to f32.
Expected<QuantizedTensor> referenceQuantize(const Scheme &scheme, DType dtype,
                                            std::span<const std::byte> bytes,
                                            int64_t rows, int64_t cols) {
  std::vector<float> values(size_t(rows * cols));
  widenValues(dtype, bytes, 0, values);
  std::string error;
  std::optional<QuantizedTensor> quantized =
      quantize(scheme, values, rows, cols, &error);
  if (!quantized)
    return invalid(error);
  return std::move(*quantized);
}

Expected<std::vector<float>>
referenceDequantize(const QuantizedTensor &tensor) {
  std::string error;
  std::optional<std::vector<float>> values = dequantize(tensor, &error);
  if (!values)
    return invalid(error);
  return std::move(*values);
}

/// 10 log10(sum x^2 / sum (x - x')^2) of the input (widened in chunks, so
/// no f32 copy of it is held) against its dequantization. The sums run in
/// kLanes interleaved double accumulators, added in a fixed order at the
/// end: independent chains the compiler vectorizes, and the same result on
/// every run and backend.
double sqnrDb(DType dtype, std::span<const std::byte> original,
              std::span<const float> dequantized) {
  constexpr size_t kChunk = 4096, kLanes = 8;
  std::vector<float> chunk(kChunk);
  std::array<double, kLanes> signal{}, noise{};
  for (size_t begin = 0; begin < dequantized.size(); begin += kChunk) {
    std::span<float> values(chunk.data(),
                            std::min(kChunk, dequantized.size() - begin));
    widenValues(dtype, original, begin, values);
    const float *back = dequantized.data() + begin;
    size_t i = 0;
    for (; i + kLanes <= values.size(); i += kLanes)
      for (size_t lane = 0; lane < kLanes; ++lane) {
        double value = values[i + lane];
        double difference = value - back[i + lane];
        signal[lane] += value * value;
        noise[lane] += difference * difference;
      }
    for (; i < values.size(); ++i) {
      double value = values[i], difference = value - back[i];
      signal[0] += value * value;
      noise[0] += difference * difference;
    }
  }
  double signalSum = 0, noiseSum = 0;
  for (size_t lane = 0; lane < kLanes; ++lane) {
    signalSum += signal[lane];
    noiseSum += noise[lane];
  }
  if (noiseSum == 0)
    return std::numeric_limits<double>::infinity();
  return 10 * std::log10(signalSum / noiseSum);
}

std::string_view inputDTypeName(DType dtype) {
  return dtype == DType::F32 ? "f32" : dtype == DType::F16 ? "f16" : "bf16";
}

struct QuantizedOutput {
  std::vector<OwnedTensor> tensors;
  LayerReport report;
};

/// RTN of one planned weight, its SQNR and its exported tensors, checked
/// against the plan (the shard's header was written from it), or its set
/// written under `outputDirectory`.
Expected<QuantizedOutput> quantizeTensor(const ModelPlan &plan,
                                         const PlannedTensor &tensor,
                                         const WeightCodec &codec,
                                         const std::string &outputDirectory) {
  const TensorInfo &info = *tensor.input->info;
  int64_t rows = info.shape[0], cols = info.shape[1];
  QuantizedOutput output;
  output.report.name = tensor.name;
  output.report.shape = info.shape;
  std::span<const std::byte> input = tensor.input->data();
  Expected<QuantizedTensor> quantized =
      codec.quantize
          ? codec.quantize(*tensor.scheme, info.dtype, input, rows, cols)
          : referenceQuantize(*tensor.scheme, info.dtype, input, rows, cols);
  if (!quantized)
    return invalid("'" + tensor.name + "': " + quantized.error().message);
  {
    Expected<std::vector<float>> back = codec.dequantize
                                            ? codec.dequantize(*quantized)
                                            : referenceDequantize(*quantized);
    if (!back)
      return invalid("'" + tensor.name + "': " + back.error().message);
    output.report.sqnrDb = sqnrDb(info.dtype, input, *back);
  }
  releasePages(input);
  if (!tensor.setDirectory.empty()) {
    std::string error;
    if (!files::writeQuantizedDirectory(
            (fs::path(outputDirectory) / tensor.setDirectory).string(),
            *quantized, inputDTypeName(info.dtype), &error))
      return makeError(ErrorCode::Io, "'" + tensor.name + "': " + error);
    return output;
  }
  const std::string &module = tensor.outputs.front().name;
  Expected<std::vector<OwnedTensor>> exported = plan.form.exportWeight(
      std::move(*quantized), module.substr(0, module.rfind('.')));
  if (!exported)
    return invalid("'" + tensor.name + "': " + exported.error().message);
  std::vector<TensorSpec> written;
  for (const OwnedTensor &out : *exported)
    written.push_back({out.name, out.dtype, out.shape});
  if (written != tensor.outputs)
    return invalid("'" + tensor.name +
                   "': internal error: the exporter's tensors differ from "
                   "the plan");
  output.tensors = std::move(*exported);
  return output;
}

/// Streams one shard: the header, then each tensor's bytes, quantizing
/// `jobs` weights at a time on as many threads.
class ShardWriter {
public:
  ShardWriter(const QuantizeModelOptions &options, const ModelPlan &plan,
              const PlannedShard &shard,
              const std::function<void()> &tensorDone)
      : options(options), plan(plan), shard(shard), jobs(size_t(options.jobs)),
        tensorDone(tensorDone) {}

  bool next(std::string_view &piece, std::string *error) {
    // The copied tensor given last time has been written by now.
    releasePages(copied);
    copied = {};
    if (!headerGiven) {
      std::vector<TensorSpec> specs;
      for (size_t index : shard.tensors)
        for (const TensorSpec &spec : plan.tensors[index].outputs)
          specs.push_back(spec);
      Expected<std::string> header = serializeFileHeader(
          specs,
          std::vector<std::pair<std::string, std::string>>{{"format", "pt"}});
      if (!header)
        return fail(header.error().message, error);
      headerBytes = std::move(*header);
      piece = headerBytes;
      headerGiven = true;
      return true;
    }
    while (true) {
      if (batchPosition < batch.size()) {
        const PlannedTensor &tensor =
            plan.tensors[shard.tensors[batchStart + batchPosition]];
        if (!tensor.scheme) {
          copied = tensor.input->data();
          piece = {reinterpret_cast<const char *>(copied.data()),
                   copied.size()};
          finishTensor();
          return true;
        }
        QuantizedOutput &output = *batch[batchPosition];
        if (outputPosition < output.tensors.size()) {
          const std::vector<std::byte> &bytes =
              output.tensors[outputPosition++].bytes;
          piece = {reinterpret_cast<const char *>(bytes.data()), bytes.size()};
          return true;
        }
        reports.push_back(std::move(output.report));
        output.tensors.clear();
        finishTensor();
        continue;
      }
      batchStart += batch.size();
      if (batchStart >= shard.tensors.size()) {
        piece = {};
        return true;
      }
      if (!computeBatch(error))
        return false;
    }
  }

  std::vector<LayerReport> reports;

private:
  bool fail(const std::string &message, std::string *error) {
    if (error)
      *error = message;
    return false;
  }

  void finishTensor() {
    ++batchPosition;
    outputPosition = 0;
    if (tensorDone)
      tensorDone();
  }

  /// The next `jobs` tensors; the weights among them quantized in parallel.
  bool computeBatch(std::string *error) {
    size_t count = std::min(jobs, shard.tensors.size() - batchStart);
    batch.assign(count, std::nullopt);
    std::vector<std::optional<Error>> failures(count);
    std::vector<std::thread> threads;
    auto work = [&](size_t slot) {
      const PlannedTensor &tensor =
          plan.tensors[shard.tensors[batchStart + slot]];
      if (!tensor.scheme)
        return;
      Expected<QuantizedOutput> output =
          quantizeTensor(plan, tensor, options.codec, options.outputDirectory);
      if (output)
        batch[slot] = std::move(*output);
      else
        failures[slot] = output.error();
    };
    for (size_t slot = 1; slot < count; ++slot)
      threads.emplace_back(work, slot);
    work(0);
    for (std::thread &thread : threads)
      thread.join();
    batchPosition = 0;
    outputPosition = 0;
    for (const std::optional<Error> &failure : failures)
      if (failure)
        return fail(failure->message, error);
    return true;
  }

  const QuantizeModelOptions &options;
  const ModelPlan &plan;
  const PlannedShard &shard;
  size_t jobs;
  const std::function<void()> &tensorDone;
  bool headerGiven = false;
  std::span<const std::byte> copied;
  std::string headerBytes;
  std::vector<std::optional<QuantizedOutput>> batch;
  size_t batchStart = 0, batchPosition = 0, outputPosition = 0;
};

JsonValue layersJson(std::span<const LayerReport> layers) {
  JsonValue array = JsonValue::array();
  for (const LayerReport &layer : layers) {
    JsonValue entry = JsonValue::object();
    entry.set("name", JsonValue::string(layer.name));
    JsonValue shape = JsonValue::array();
    for (int64_t extent : layer.shape)
      shape.push(JsonValue::number(extent));
    entry.set("shape", std::move(shape));
    // JSON has no infinity: an exact weight's SQNR is null.
    entry.set("sqnr_db", std::isinf(layer.sqnrDb)
                             ? JsonValue()
                             : JsonValue::number(layer.sqnrDb));
    array.push(std::move(entry));
  }
  return array;
}

/// Writes the shard and its state file, renamed into place together.
Expected<std::vector<LayerReport>>
writeShard(const QuantizeModelOptions &options, const ModelPlan &plan,
           const PlannedShard &shard, const std::function<void()> &tensorDone) {
  ShardWriter writer(options, plan, shard, tensorDone);
  runtime::StagedFiles staged;
  std::string error;
  std::string path =
      (fs::path(options.outputDirectory) / shard.fileName).string();
  if (!staged.stageFrom(
          path,
          [&](std::string_view &piece, std::string *failure) {
            return writer.next(piece, failure);
          },
          &error))
    return makeError(ErrorCode::Io, error);
  JsonValue state = JsonValue::object();
  state.set("fingerprint", JsonValue::string(plan.fingerprint));
  state.set("layers", layersJson(writer.reports));
  if (!staged.stage(stateFile(options, shard.fileName),
                    state.serialize() + "\n", &error) ||
      !staged.commit(&error))
    return makeError(ErrorCode::Io, error);
  return std::move(writer.reports);
}

/// config.json: the input's with "quantization_config" set, or that alone.
Expected<std::string> quantizedConfig(const QuantizeModelOptions &options,
                                      const ModelPlan &plan) {
  std::string path = options.inputDirectory + "/config.json";
  JsonValue config = JsonValue::object();
  std::error_code code;
  if (fs::exists(path, code)) {
    std::string text, error;
    if (!runtime::readFile(path, text, &error))
      return makeError(ErrorCode::Io, error);
    std::optional<JsonValue> parsed = json::parseJson(text, &error);
    if (!parsed || !parsed->isObject())
      return invalid("'" + path +
                     "': " + (parsed ? "not a JSON object" : error));
    config = std::move(*parsed);
  }
  config.set("quantization_config",
             plan.form.quantizationConfig(plan.ignoredModules));
  return config.serialize() + "\n";
}

/// Weights and the files quantize-model writes itself are not copied.
bool isCopied(const fs::directory_entry &entry) {
  std::string name = entry.path().filename().string();
  if (name.starts_with(".") || name == "config.json" ||
      name == "quant_report.json" || name == kIndexFileName)
    return false;
  for (std::string_view weights : {".safetensors", ".bin", ".pt", ".pth",
                                   ".ckpt", ".gguf", ".h5", ".msgpack"})
    if (name.ends_with(weights))
      return false;
  return true;
}

} // namespace

WeightCodec referenceCodec() {
  return {referenceQuantize, referenceDequantize};
}

Expected<QuantizeModelResult> quantizeModel(const QuantizeModelOptions &options,
                                            const QuantizeProgress &progress) {
  Expected<ModelPlan> plan = planModel(options);
  if (!plan)
    return std::move(plan).takeError();
  if (Status status = prepareOutput(options, *plan); !status)
    return std::move(status).takeError();
  QuantizeModelResult result;
  result.layout = plan->form.describe();
  result.shardCount = plan->shards.size();
  std::vector<const PlannedShard *> todo;
  for (size_t shard = 0; shard < plan->shards.size(); ++shard) {
    if (int(shard % size_t(options.shardCount)) != options.shardIndex)
      continue;
    if (finishedShard(options, *plan, plan->shards[shard]))
      ++result.shardsResumed;
    else
      todo.push_back(&plan->shards[shard]);
  }
  size_t total = 0, written = 0;
  for (const PlannedShard *shard : todo)
    total += shard->tensors.size();
  std::function<void()> tensorDone = [&] {
    if (progress)
      progress(++written, total);
  };
  for (const PlannedShard *shard : todo) {
    Expected<std::vector<LayerReport>> reports =
        writeShard(options, *plan, *shard, tensorDone);
    if (!reports)
      return std::move(reports).takeError();
    ++result.shardsWritten;
  }
  if (options.shardCount > 1)
    return result;
  Expected<QuantizeModelResult> merged = mergeQuantizedModel(options);
  if (!merged)
    return merged;
  merged->shardsWritten = result.shardsWritten;
  merged->shardsResumed = result.shardsResumed;
  return merged;
}

Expected<QuantizeModelResult>
mergeQuantizedModel(const QuantizeModelOptions &options) {
  QuantizeModelOptions whole = options;
  whole.shardIndex = 0;
  whole.shardCount = 1;
  Expected<ModelPlan> plan = planModel(whole);
  if (!plan)
    return std::move(plan).takeError();
  if (Status status = prepareOutput(whole, *plan); !status)
    return std::move(status).takeError();
  QuantizeModelResult result;
  result.merged = true;
  result.layout = plan->form.describe();
  result.shardCount = plan->shards.size();
  result.ignoredModules = plan->ignoredModules;
  std::string missing;
  std::error_code code;
  JsonValue weightMap = JsonValue::object();
  for (size_t index = 0; index < plan->shards.size(); ++index) {
    const PlannedShard &shard = plan->shards[index];
    std::optional<std::vector<LayerReport>> reports =
        finishedShard(whole, *plan, shard);
    if (!reports) {
      missing +=
          (missing.empty() ? "" : ", ") + shard.fileName + " (shard " +
          std::to_string(index) +
          ", written by the run --shard I/N with I = " + std::to_string(index) +
          " mod N)";
      continue;
    }
    for (LayerReport &report : *reports)
      result.layers.push_back(std::move(report));
    for (size_t tensor : shard.tensors) {
      result.keptTensors += plan->tensors[tensor].scheme ? 0 : 1;
      result.inputBytes += plan->tensors[tensor].input->info->byteSize();
      for (const TensorSpec &spec : plan->tensors[tensor].outputs) {
        weightMap.set(spec.name, JsonValue::string(shard.fileName));
        result.outputBytes +=
            *tensorByteSize(spec.dtype, spec.shape, spec.name);
      }
      if (const std::string &set = plan->tensors[tensor].setDirectory;
          !set.empty())
        for (const fs::directory_entry &file : fs::directory_iterator(
                 fs::path(options.outputDirectory) / set, code))
          result.outputBytes +=
              file.is_regular_file(code) ? uint64_t(file.file_size(code)) : 0;
    }
  }
  if (!missing.empty())
    return invalid("cannot merge '" + options.outputDirectory +
                   "': shards not done yet: " + missing);
  std::sort(result.layers.begin(), result.layers.end(),
            [](const LayerReport &a, const LayerReport &b) {
              return a.name < b.name;
            });

  runtime::StagedFiles staged;
  std::string error;
  std::string out = options.outputDirectory + "/";
  for (const fs::directory_entry &entry :
       fs::directory_iterator(options.inputDirectory, code)) {
    std::string name = entry.path().filename().string();
    if (!isCopied(entry))
      continue;
    if (!entry.is_regular_file()) {
      result.skippedFiles.push_back(name);
      continue;
    }
    std::string bytes;
    if (!runtime::readFile(entry.path().string(), bytes, &error) ||
        !staged.stage(out + name, bytes, &error))
      return makeError(ErrorCode::Io, error);
    result.copiedFiles.push_back(name);
  }
  if (code)
    return makeError(ErrorCode::Io, "cannot list '" + options.inputDirectory +
                                        "': " + code.message());
  std::sort(result.copiedFiles.begin(), result.copiedFiles.end());
  std::sort(result.skippedFiles.begin(), result.skippedFiles.end());

  JsonValue report = JsonValue::object();
  report.set("scheme", JsonValue::string(printSchemeText(options.scheme)));
  report.set("format", JsonValue::string(std::string(plan->form.formatName())));
  report.set("layout", JsonValue::string(result.layout));
  JsonValue ignored = JsonValue::array();
  for (const std::string &module : result.ignoredModules)
    ignored.push(JsonValue::string(module));
  report.set("ignored", std::move(ignored));
  report.set("layers", layersJson(result.layers));
  Expected<std::string> config = quantizedConfig(options, *plan);
  if (!config)
    return std::move(config).takeError();
  if (!staged.stage(out + "quant_report.json", report.serialize() + "\n",
                    &error) ||
      !staged.stage(out + "config.json", *config, &error))
    return makeError(ErrorCode::Io, error);
  // The index last: until it is in place no reader opens the shards.
  if (plan->shards.size() > 1 &&
      !staged.stage(out + std::string(kIndexFileName),
                    serializeIndex(std::move(weightMap), result.outputBytes),
                    &error))
    return makeError(ErrorCode::Io, error);
  if (!staged.commit(&error))
    return makeError(ErrorCode::Io, error);
  return result;
}

} // namespace lowbit::checkpoint
