//===- QuantConfig.h - Which importer a checkpoint's config names -*- C++
//-*-===//
//
// A quantized checkpoint says how its weights are laid out in a JSON file
// beside them; the bits alone cannot tell (GPTQ's v1 / v2 zeros, a group
// size). detectLayout reads, in this order:
//
//   hf_quant_config.json   ModelOpt: {"quantization": {"quant_algo":
//                          "NVFP4", "group_size": 16}}
//   config.json            "quantization_config": quant_method "gptq",
//                          "awq", "compressed-tensors" (its "format" and
//                          one config group's "weights"), "modelopt" or
//                          "lowbit" (quantize-model --format lowbit)
//   quantize_config.json   AutoGPTQ / GPTQModel (bits, group_size,
//                          desc_act, checkpoint_format), or AutoAWQ's
//                          (quant_method "awq", or zero_point / version)
//
// and gives the importer with its parameters (docs/checkpoints.md,
// "Choosing the importer"). A config lowbit cannot import (3-bit GPTQ,
// AWQ's GEMV layout, several compressed-tensors groups) is an error naming
// the file and the field, never a guess.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_CHECKPOINT_QUANTCONFIG_H
#define LOWBIT_CHECKPOINT_QUANTCONFIG_H

#include "checkpoint/CompressedTensors.h"
#include "checkpoint/GptqAwq.h"

namespace lowbit::checkpoint {

struct QuantLayout {
  enum class Kind : uint8_t {
    None, ///< no quantization config: a plain checkpoint
    Gptq,
    Awq,
    PackQuantized,
    Nvfp4CompressedTensors,
    FloatQuantized,
    Nvfp4ModelOpt,
    Mxfp4CompressedTensors,
    /// `lowbit quantize-model --format lowbit`: quant_method "lowbit", each
    /// weight a set of `lowbit quantize` in DIR/<module>/ (its
    /// meta.json holds the scheme), read with readQuantizedDirectory.
    LowbitSets,
  };
  Kind kind = Kind::None;
  /// The file that said so ("config.json", ...), empty for None.
  std::string source;
  GptqConfig gptq;
  int awqGroupSize = 128;
  PackQuantizedConfig packQuantized;
  FloatQuantizedConfig floatQuantized;

  /// One line for people: "GPTQ v1, 4-bit, group 128 (quantize_config.json)".
  std::string describe() const;
};

/// The layout `directory`'s config files name.
Expected<QuantLayout> detectLayout(const std::string &directory);

/// The weight of layer `prefix` through the importer `layout` names.
Expected<ImportedWeight> importLayer(const Checkpoint &checkpoint,
                                     const QuantLayout &layout,
                                     const std::string &prefix);

} // namespace lowbit::checkpoint

#endif // LOWBIT_CHECKPOINT_QUANTCONFIG_H
