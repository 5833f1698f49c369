//===- ModelQuantizer.h - A whole checkpoint quantized, streamed -*- C++
//-*-===//
//
// `lowbit quantize-model`: reads a Hugging Face checkpoint directory and
// writes a compressed-tensors one (or one of lowbit's sets per weight),
// quantizing every 2-D linear weight with round-to-nearest in a lowbit
// scheme (the reference quantizer's bits, computed by the caller's codec:
// the CLI's JIT'd CPU kernels) and copying every other tensor as it is.
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

/// What quantize-model writes for a quantized weight.
enum class OutputFormat : uint8_t {
  /// compressed-tensors' tensors in the shards (CompressedTensorsForm.h).
  CompressedTensors,
  /// A set of `lowbit quantize` per weight, OUT/<module>/ (q.npy,
  /// scales.npy, ..., meta.json, manifest.json; runtime/files/
  /// QuantizedFiles.h): every scheme, read by `lowbit dequantize --in` and
  /// `lowbit matmul --weights`. The shards hold the other tensors.
  Lowbit,
};

/// How a weight is quantized and dequantized (for its SQNR). Both must
/// give the reference quantizer's bits (format/Quantize.h); the JIT'd CPU
/// kernels do, by the project's contract, so the output never depends on
/// the codec. An empty function is the reference's.
struct WeightCodec {
  /// `values`: rows * cols of `dtype` (F32, F16 or BF16) as the input
  /// stores them, row-major.
  std::function<Expected<QuantizedTensor>(const Scheme &scheme, DType dtype,
                                          std::span<const std::byte> values,
                                          int64_t rows, int64_t cols)>
      quantize;
  /// rows * cols f32 values.
  std::function<Expected<std::vector<float>>(const QuantizedTensor &tensor)>
      dequantize;
};

/// The reference quantizer's codec (what an empty WeightCodec does).
WeightCodec referenceCodec();

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
  OutputFormat format = OutputFormat::CompressedTensors;
  /// Not part of the run's fingerprint: every codec writes the same bytes,
  /// so a run may be resumed with another.
  WeightCodec codec;
};

/// One quantized weight's signal-to-quantization-noise ratio:
/// 10 log10(sum x^2 / sum (x - dequant(q(x)))^2); +inf when exact.
struct LayerReport {
  std::string name;
  std::vector<int64_t> shape;
  double sqnrDb = 0;
};

struct QuantizeModelResult {
  std::string layout; ///< OutputForm::describe()
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
