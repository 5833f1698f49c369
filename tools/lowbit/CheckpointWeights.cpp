//===- CheckpointWeights.cpp - A command's weights from a checkpoint ------===//

#include "tools/lowbit/CheckpointWeights.h"

#include "checkpoint/GgufWeights.h"
#include "checkpoint/QuantConfig.h"
#include "runtime/files/QuantizedFiles.h"

namespace lowbit::cli {

namespace {

constexpr std::string_view kSeparator = "::";

} // namespace

std::string weightsPath(std::string_view weights) {
  return std::string(weights.substr(0, weights.find(kSeparator)));
}

std::optional<QuantizedTensor> readWeights(std::string_view weights,
                                           std::string *error,
                                           std::vector<int64_t> *shape,
                                           std::vector<int32_t> *inputOrder) {
  if (inputOrder)
    inputOrder->clear();
  size_t separator = weights.find(kSeparator);
  if (separator == std::string_view::npos)
    return files::readQuantizedDirectory(std::string(weights), error, shape);
  std::string directory = weightsPath(weights);
  std::string layer(weights.substr(separator + kSeparator.size()));
  auto failWith = [&](const std::string &message) {
    *error = message;
    return std::nullopt;
  };
  if (layer.empty() || layer == ".weight")
    return failWith("'" + std::string(weights) + "' names no layer after '::'");
  // A GGUF file names its tensors itself (blk.0.ffn_down.weight).
  if (directory.ends_with(".gguf")) {
    Expected<checkpoint::GgufFile> file = checkpoint::GgufFile::open(directory);
    if (!file)
      return failWith(file.error().message);
    Expected<checkpoint::ImportedWeight> imported =
        checkpoint::importGgufWeight(*file, layer);
    if (!imported)
      return failWith(imported.error().message);
    // The kernels run llama.cpp's blocks as an equal-valued scheme of
    // their own (the rules only matter when quantizing).
    Expected<QuantizedTensor> runnable =
        checkpoint::ggufAsKernelScheme(imported->tensor);
    if (!runnable)
      return failWith(runnable.error().message);
    *shape = {runnable->rows, runnable->cols};
    return std::move(*runnable);
  }
  constexpr std::string_view kWeightSuffix = ".weight";
  if (layer.ends_with(kWeightSuffix))
    layer.resize(layer.size() - kWeightSuffix.size());
  Expected<checkpoint::QuantLayout> layout =
      checkpoint::detectLayout(directory);
  if (!layout)
    return failWith(layout.error().message);
  // quantize-model --format lowbit: the layer is a set of its own.
  if (layout->kind == checkpoint::QuantLayout::Kind::LowbitSets) {
    if (layer.find('/') != std::string::npos || layer.starts_with("."))
      return failWith("'" + layer + "' is not a module name");
    return files::readQuantizedDirectory(directory + "/" + layer, error, shape);
  }
  Expected<checkpoint::Checkpoint> opened =
      checkpoint::Checkpoint::open(directory);
  if (!opened)
    return failWith(opened.error().message);
  Expected<checkpoint::ImportedWeight> imported =
      checkpoint::importLayer(*opened, *layout, layer);
  if (!imported)
    return failWith(imported.error().message);
  // An act-order weight's columns are a permutation of the input channels:
  // the caller gathers X by it, or the layer is refused.
  if (!imported->inputOrder.empty()) {
    if (!inputOrder)
      return failWith("'" + layer +
                      "' reorders its input channels (act-order "
                      "g_idx); this command takes a layer without one");
    *inputOrder = std::move(imported->inputOrder);
  }
  *shape = {imported->tensor.rows, imported->tensor.cols};
  return std::move(imported->tensor);
}

} // namespace lowbit::cli
