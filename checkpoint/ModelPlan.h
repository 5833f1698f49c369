//===- ModelPlan.h - What quantize-model will write, before it writes -*- C++
//-*-===//
//
// The plan of a quantize-model run, computed from the input's headers and
// the options alone, so every run of the same command (a resumed one, each
// of the --shard runs, the merge) computes the same plan: the input's
// tensors by name, which are quantized and with which scheme, the tensors
// each becomes, the output shards, and a fingerprint of all of it that
// marks the run's state files (ModelQuantizer.h).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_CHECKPOINT_MODELPLAN_H
#define LOWBIT_CHECKPOINT_MODELPLAN_H

#include "checkpoint/ModelQuantizer.h"

#include <optional>

namespace lowbit::checkpoint {

/// What the output holds for a quantized weight: compressed-tensors'
/// tensors (CompressedTensorsForm.h) or a lowbit set of its own.
class OutputForm {
public:
  static Expected<OutputForm> of(const Scheme &scheme, OutputFormat format);

  /// The scheme the weight [n, k] `name` is quantized with, or an error.
  Expected<Scheme> schemeFor(const std::string &name, int64_t n,
                             int64_t k) const;
  /// The shards' tensors for `prefix`'s weight [n, k]; none for a set.
  std::vector<TensorSpec> plannedTensors(const std::string &prefix, int64_t n,
                                         int64_t k) const;
  Expected<std::vector<OwnedTensor>>
  exportWeight(QuantizedTensor tensor, const std::string &prefix) const;
  json::JsonValue quantizationConfig(std::span<const std::string> ignore) const;
  std::string describe() const;
  bool writesSets() const { return !compressed; }
  std::string_view formatName() const {
    return compressed ? "compressed-tensors" : "lowbit";
  }

private:
  explicit OutputForm(Scheme scheme) : given(std::move(scheme)) {}
  Scheme given;
  std::optional<CompressedTensorsForm> compressed;
};

struct PlannedTensor {
  std::string name; ///< the input tensor
  const Checkpoint::Entry *input = nullptr;
  /// The scheme it is quantized with; nullopt: copied as it is.
  std::optional<Scheme> scheme;
  /// What the shard holds for it, in order.
  std::vector<TensorSpec> outputs;
  /// --format lowbit: the set's directory under OUT (the module's name).
  std::string setDirectory;
};

struct PlannedShard {
  std::string fileName;
  std::vector<size_t> tensors; ///< indices into ModelPlan::tensors
  uint64_t bytes = 0;
};

struct ModelPlan {
  Checkpoint input;
  OutputForm form;
  std::vector<PlannedTensor> tensors;
  std::vector<PlannedShard> shards;
  /// Modules whose 2-D weight --ignore left unquantized, sorted.
  std::vector<std::string> ignoredModules;
  /// SHA-256 of the scheme, the layout, the patterns, the shard limit and
  /// every input tensor's name, dtype and shape.
  std::string fingerprint;
};

/// Checks the options (directories, shard, jobs) and plans the run.
Expected<ModelPlan> planModel(const QuantizeModelOptions &options);

/// OUT/.lowbit-quantize-model: the run's settings and each done shard's
/// report entry.
constexpr std::string_view kRunStateDirectory = ".lowbit-quantize-model";

} // namespace lowbit::checkpoint

#endif // LOWBIT_CHECKPOINT_MODELPLAN_H
