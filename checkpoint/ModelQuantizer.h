//===- ModelQuantizer.h - A whole checkpoint quantized, streamed -*- C++
//-*-===//
//
// `lowbit quantize-model`: reads a Hugging Face checkpoint directory and
// writes a compressed-tensors one, quantizing every 2-D linear weight with
// round-to-nearest in a lowbit scheme (format/Quantize.h, the reference
// quantizer) and copying every other tensor as it is.
//
// The work is planned before anything is written, from the input's
// headers alone: which tensors are quantized, the tensors each becomes,
// and the output shards (the input's tensors by name, cut at a size
// limit). So a shard's header is written first and its tensors are
// streamed after it, quantized a few at a time: memory holds `jobs`
// tensors, never the model. Each shard is staged to a temporary file and
// renamed into place with its report entry (a file in
// OUT/.lowbit-quantize-model/), so an interrupted run leaves whole shards
// and temporaries only (removed on SIGINT/SIGTERM, swept otherwise), and a
// rerun skips the shards that are done. `shardIndex / shardCount` gives
// this run the shards j with j % shardCount == shardIndex, deterministic
// and independent of the other runs; mergeQuantizedModel (run once all
// are done) writes the index, config.json, quant_report.json and the
// copied files. A single run does both (docs/checkpoints.md).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_CHECKPOINT_MODELQUANTIZER_H
#define LOWBIT_CHECKPOINT_MODELQUANTIZER_H

#include "checkpoint/CompressedTensorsForm.h"

#include <functional>

namespace lowbit::checkpoint {

struct QuantizeModelOptions {
  explicit QuantizeModelOptions(Scheme scheme) : scheme(std::move(scheme)) {}

  Scheme scheme;
  std::string inputDirectory, outputDirectory;
  /// Modules left unquantized: a name that equals the module's or is its
  /// last dot-separated components ("lm_head"), or "re:REGEX" matched from
  /// the start of the module's name (compressed-tensors' spelling).
  std::vector<std::string> ignore = {"lm_head", "re:.*embed"};
  int jobs = 1;
  int shardIndex = 0, shardCount = 1;
  uint64_t maxShardBytes = 5'000'000'000;
};

/// One quantized weight's signal-to-quantization-noise ratio:
/// 10 log10(sum x^2 / sum (x - dequant(q(x)))^2); +inf when exact.
struct LayerReport {
  std::string name;
  std::vector<int64_t> shape;
  double sqnrDb = 0;
};

struct QuantizeModelResult {
  std::string layout; ///< CompressedTensorsForm::describe()
  size_t shardCount = 0;
  size_t shardsWritten = 0, shardsResumed = 0;
  /// After a merge: every quantized weight by name, the modules ignored,
  /// the tensors copied as they are, the files copied and those skipped.
  bool merged = false;
  std::vector<LayerReport> layers;
  std::vector<std::string> ignoredModules;
  size_t keptTensors = 0;
  std::vector<std::string> copiedFiles, skippedFiles;
  uint64_t inputBytes = 0, outputBytes = 0;
};

/// Called after each tensor this run writes: (written, to write).
using QuantizeProgress = std::function<void(size_t, size_t)>;

/// Writes this run's shards (skipping those already done) and, when the
/// run is the only one (shardCount 1), merges.
Expected<QuantizeModelResult>
quantizeModel(const QuantizeModelOptions &options,
              const QuantizeProgress &progress = {});
/// Checks that every shard is done and writes the index, config.json,
/// quant_report.json and the input's other files.
Expected<QuantizeModelResult>
mergeQuantizedModel(const QuantizeModelOptions &options);

/// Whether `module` is named by one of `patterns` (QuantizeModelOptions::
/// ignore); an error for a malformed regex.
Expected<bool> matchesIgnore(const std::string &module,
                             std::span<const std::string> patterns);

} // namespace lowbit::checkpoint

#endif // LOWBIT_CHECKPOINT_MODELQUANTIZER_H
