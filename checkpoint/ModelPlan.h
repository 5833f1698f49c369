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

struct PlannedTensor {
  std::string name; ///< the input tensor
  const Checkpoint::Entry *input = nullptr;
  /// The scheme it is quantized with; nullopt: copied as it is.
  std::optional<Scheme> scheme;
  /// What the output holds for it, in order.
  std::vector<TensorSpec> outputs;
};

struct PlannedShard {
  std::string fileName;
  std::vector<size_t> tensors; ///< indices into ModelPlan::tensors
  uint64_t bytes = 0;
};

struct ModelPlan {
  Checkpoint input;
  CompressedTensorsForm form;
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
