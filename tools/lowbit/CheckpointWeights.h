//===- CheckpointWeights.h - A command's weights from a checkpoint -*- C++
//-*-===//
//
// `--weights DIR::TENSOR` names a quantized weight of another tool's
// checkpoint (GPTQ, AWQ, compressed-tensors, ModelOpt, or the sets of
// `lowbit quantize-model --format lowbit`): the directory and
// the layer, e.g. `ckpt::model.layers.0.mlp.down_proj` (a trailing
// ".weight" is accepted). It is imported through the importer the
// directory's config names (checkpoint/QuantConfig.h), bit for bit.
// `FILE.gguf::TENSOR` names a Q8_0 or Q4_0 matrix of a GGUF file (e.g.
// `model.gguf::blk.0.ffn_down.weight`). Any other value is a set written
// by `lowbit quantize` (docs/checkpoints.md).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TOOLS_LOWBIT_CHECKPOINTWEIGHTS_H
#define LOWBIT_TOOLS_LOWBIT_CHECKPOINTWEIGHTS_H

#include "format/Quantize.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lowbit::cli {

/// The file system path `--weights` reads: DIR of DIR::TENSOR, else all.
std::string weightsPath(std::string_view weights);

/// The weight set or checkpoint layer `weights` names; `shape` receives
/// its shape ([N, K] for a checkpoint layer). A layer whose columns are a
/// permutation of the input channels (GPTQ act-order, g_idx) is refused
/// unless `inputOrder` is given: it then receives K entries, column c
/// holding input channel inputOrder[c] (empty for the identity), and the
/// caller gathers X's columns by it.
std::optional<QuantizedTensor>
readWeights(std::string_view weights, std::string *error,
            std::vector<int64_t> *shape,
            std::vector<int32_t> *inputOrder = nullptr);

} // namespace lowbit::cli

#endif // LOWBIT_TOOLS_LOWBIT_CHECKPOINTWEIGHTS_H
