//===- QuantConfig.cpp - Which importer a checkpoint's config names -------===//

#include "checkpoint/QuantConfig.h"

#include "checkpoint/ModelJson.h"
#include "checkpoint/Nvfp4.h"
#include "runtime/core/Json.h"

namespace lowbit::checkpoint {

namespace {

using json::JsonValue;
using Kind = QuantLayout::Kind;

/// A group size field: -1 (one group) or a positive size.
Expected<int> groupSize(const ModelJson &file, const JsonValue &object,
                        std::string_view key, int64_t fallback) {
  Expected<int64_t> size = file.integer(object, key, fallback);
  if (!size)
    return size.error();
  if (*size != -1 && (*size < 1 || *size > kMaxScaleExtent))
    return file.bad("\"" + std::string(key) + "\" " + std::to_string(*size) +
                    " is neither -1 nor a group size");
  return int(*size);
}

Expected<QuantLayout> gptqLayout(const ModelJson &file,
                                 const JsonValue &config) {
  QuantLayout layout;
  layout.kind = Kind::Gptq;
  layout.source = file.name;
  Expected<int64_t> bits = file.integer(config, "bits", 4);
  if (!bits)
    return bits.error();
  if (*bits != 4 && *bits != 8)
    return file.bad("GPTQ \"bits\" " + std::to_string(*bits) +
                    ": lowbit imports 4 and 8");
  layout.gptq.bits = int(*bits);
  Expected<int> size = groupSize(file, config, "group_size", 128);
  if (!size)
    return size.error();
  layout.gptq.groupSize = *size;
  Expected<std::string> format = file.text(config, "checkpoint_format", "gptq");
  if (!format)
    return format.error();
  if (*format != "gptq" && *format != "gptq_v2")
    return file.bad("GPTQ \"checkpoint_format\" '" + *format +
                    "': lowbit imports gptq (v1 zeros) and gptq_v2");
  layout.gptq.zeroFormat =
      *format == "gptq_v2" ? GptqZeroFormat::V2 : GptqZeroFormat::V1;
  return layout;
}

Expected<QuantLayout> awqLayout(const ModelJson &file,
                                const JsonValue &config) {
  QuantLayout layout;
  layout.kind = Kind::Awq;
  layout.source = file.name;
  // AutoAWQ's own quant_config names them w_bit and q_group_size.
  Expected<int64_t> bits =
      file.integer(config, config.get("w_bit") ? "w_bit" : "bits", 4);
  if (!bits)
    return bits.error();
  if (*bits != 4)
    return file.bad("AWQ \"bits\" " + std::to_string(*bits) +
                    ": AWQ's GEMM layout is 4-bit");
  Expected<int> size = groupSize(
      file, config, config.get("q_group_size") ? "q_group_size" : "group_size",
      128);
  if (!size)
    return size.error();
  layout.awqGroupSize = *size;
  Expected<std::string> version = file.text(config, "version", "gemm");
  if (!version)
    return version.error();
  if (*version != "gemm" && *version != "GEMM")
    return file.bad("AWQ \"version\" '" + *version +
                    "': lowbit imports the GEMM layout");
  Expected<bool> zeroPoint = file.flag(config, "zero_point", true);
  if (!zeroPoint)
    return zeroPoint.error();
  if (!*zeroPoint)
    return file.bad("AWQ \"zero_point\" false: lowbit imports AWQ with zero "
                    "points");
  return layout;
}

Expected<QuantLayout> compressedTensorsLayout(const ModelJson &file,
                                              const JsonValue &config) {
  QuantLayout layout;
  layout.source = file.name;
  const JsonValue *groups = file.member(config, "config_groups");
  if (!groups || !groups->isObject() || groups->members().size() != 1)
    return file.bad("compressed-tensors \"config_groups\" must hold one "
                    "group (lowbit imports one scheme per checkpoint)");
  const JsonValue &group = groups->members().front().second;
  const JsonValue *weights = file.member(group, "weights");
  if (!weights || !weights->isObject())
    return file.bad("the config group has no \"weights\"");
  Expected<std::string> format = file.text(config, "format", "");
  if (!format)
    return format.error();
  if (format->empty()) {
    format = file.text(group, "format", "");
    if (!format)
      return format.error();
  }
  Expected<std::string> strategy = file.text(*weights, "strategy", "");
  Expected<int64_t> bits = file.integer(*weights, "num_bits", 8);
  if (!strategy)
    return strategy.error();
  if (!bits)
    return bits.error();
  if (*format == "pack-quantized") {
    layout.kind = Kind::PackQuantized;
    if (*bits != 4 && *bits != 8)
      return file.bad("pack-quantized \"num_bits\" " + std::to_string(*bits) +
                      ": lowbit imports 4 and 8");
    layout.packQuantized.bits = int(*bits);
    if (*strategy == "channel") {
      layout.packQuantized.groupSize = -1;
    } else if (*strategy == "group") {
      Expected<int> size = groupSize(file, *weights, "group_size", 0);
      if (!size)
        return size.error();
      layout.packQuantized.groupSize = *size;
    } else {
      return file.bad("pack-quantized strategy '" + *strategy +
                      "': lowbit imports group and channel");
    }
    return layout;
  }
  if (*format == "nvfp4-pack-quantized") {
    layout.kind = Kind::Nvfp4CompressedTensors;
    return layout;
  }
  if (*format == "mxfp4-pack-quantized") {
    layout.kind = Kind::Mxfp4CompressedTensors;
    return layout;
  }
  if (*format == "float-quantized") {
    layout.kind = Kind::FloatQuantized;
    using Strategy = FloatQuantizedConfig::Strategy;
    if (*strategy == "tensor") {
      layout.floatQuantized.strategy = Strategy::Tensor;
    } else if (*strategy == "channel") {
      layout.floatQuantized.strategy = Strategy::Channel;
    } else if (*strategy == "block") {
      layout.floatQuantized.strategy = Strategy::Block;
      const JsonValue *block = file.member(*weights, "block_structure");
      if (block) {
        std::optional<int64_t> rows, cols;
        if (block->isArray() && block->items().size() == 2) {
          rows = block->items()[0].asInt();
          cols = block->items()[1].asInt();
        }
        if (!rows || !cols || *rows < 1 || *cols < 1 ||
            *rows > kMaxScaleExtent || *cols > kMaxScaleExtent)
          return file.bad("\"block_structure\" must be [rows, cols]");
        layout.floatQuantized.blockRows = int(*rows);
        layout.floatQuantized.blockCols = int(*cols);
      }
    } else {
      return file.bad("float-quantized strategy '" + *strategy +
                      "': lowbit imports tensor, channel and block");
    }
    return layout;
  }
  return file.bad("compressed-tensors format '" + *format +
                  "': lowbit imports pack-quantized, nvfp4-pack-quantized, "
                  "mxfp4-pack-quantized and float-quantized");
}

Expected<QuantLayout> modelOptLayout(const ModelJson &file,
                                     const JsonValue &quantization) {
  Expected<std::string> algorithm = file.text(quantization, "quant_algo", "");
  if (!algorithm)
    return algorithm.error();
  if (*algorithm != "NVFP4")
    return file.bad("ModelOpt \"quant_algo\" '" + *algorithm +
                    "': lowbit imports NVFP4");
  Expected<int64_t> size = file.integer(quantization, "group_size", 16);
  if (!size)
    return size.error();
  if (*size != 16)
    return file.bad("ModelOpt NVFP4 \"group_size\" " + std::to_string(*size) +
                    ": NVFP4's block is 16");
  QuantLayout layout;
  layout.kind = Kind::Nvfp4ModelOpt;
  layout.source = file.name;
  return layout;
}

Expected<QuantLayout> fromQuantizationConfig(const ModelJson &file,
                                             const JsonValue &config) {
  Expected<std::string> method = file.text(config, "quant_method", "");
  if (!method)
    return method.error();
  if (*method == "gptq")
    return gptqLayout(file, config);
  if (*method == "awq")
    return awqLayout(file, config);
  if (*method == "compressed-tensors")
    return compressedTensorsLayout(file, config);
  if (*method == "modelopt")
    return modelOptLayout(file, config);
  if (*method == "lowbit") {
    QuantLayout layout;
    layout.kind = Kind::LowbitSets;
    layout.source = file.name;
    return layout;
  }
  return file.bad("quant_method '" + *method +
                  "': lowbit imports gptq, awq, compressed-tensors, "
                  "modelopt and lowbit");
}

} // namespace

std::string QuantLayout::describe() const {
  auto group = [](int size) {
    return size == -1 ? std::string("one group per row")
                      : "group " + std::to_string(size);
  };
  std::string text;
  switch (kind) {
  case Kind::None:
    return "not quantized (no quantization config)";
  case Kind::Gptq:
    text = std::string("GPTQ ") +
           (gptq.zeroFormat == GptqZeroFormat::V1 ? "v1" : "v2") + ", " +
           std::to_string(gptq.bits) + "-bit, " + group(gptq.groupSize);
    break;
  case Kind::Awq:
    text = "AWQ GEMM, 4-bit, " + group(awqGroupSize);
    break;
  case Kind::PackQuantized:
    text = "compressed-tensors pack-quantized, " +
           std::to_string(packQuantized.bits) + "-bit, " +
           group(packQuantized.groupSize);
    break;
  case Kind::Nvfp4CompressedTensors:
    text = "compressed-tensors nvfp4-pack-quantized";
    break;
  case Kind::FloatQuantized: {
    using Strategy = FloatQuantizedConfig::Strategy;
    text = "compressed-tensors float-quantized FP8, ";
    text += floatQuantized.strategy == Strategy::Tensor ? "per tensor"
            : floatQuantized.strategy == Strategy::Channel
                ? "per channel"
                : "blocks " + std::to_string(floatQuantized.blockRows) + "x" +
                      std::to_string(floatQuantized.blockCols);
    break;
  }
  case Kind::Nvfp4ModelOpt:
    text = "ModelOpt NVFP4";
    break;
  case Kind::Mxfp4CompressedTensors:
    text = "compressed-tensors mxfp4-pack-quantized";
    break;
  case Kind::LowbitSets:
    text = "lowbit sets, one directory per weight";
    break;
  }
  return text + " (" + source + ")";
}

Expected<QuantLayout> detectLayout(const std::string &directory) {
  Expected<std::optional<ModelJson>> modelOpt =
      readModelJson(directory, "hf_quant_config.json");
  if (!modelOpt)
    return modelOpt.error();
  if (*modelOpt) {
    const JsonValue *quantization =
        (*modelOpt)->member((*modelOpt)->root, "quantization");
    if (!quantization || !quantization->isObject())
      return (*modelOpt)->bad("no \"quantization\" object");
    return modelOptLayout(**modelOpt, *quantization);
  }
  Expected<std::optional<ModelJson>> config =
      readModelJson(directory, "config.json");
  if (!config)
    return config.error();
  if (*config) {
    if (const JsonValue *quantization =
            (*config)->member((*config)->root, "quantization_config")) {
      if (!quantization->isObject())
        return (*config)->bad("\"quantization_config\" is not an object");
      return fromQuantizationConfig(**config, *quantization);
    }
  }
  Expected<std::optional<ModelJson>> quantize =
      readModelJson(directory, "quantize_config.json");
  if (!quantize)
    return quantize.error();
  if (*quantize) {
    const ModelJson &file = **quantize;
    Expected<std::string> method = file.text(file.root, "quant_method", "");
    if (!method)
      return method.error();
    bool awq = *method == "awq" || file.root.get("zero_point") ||
               file.root.get("version");
    return awq ? awqLayout(file, file.root) : gptqLayout(file, file.root);
  }
  return QuantLayout{};
}

Expected<ImportedWeight> importLayer(const Checkpoint &checkpoint,
                                     const QuantLayout &layout,
                                     const std::string &prefix) {
  auto nvfp4Weight = [](Expected<Nvfp4Layer> layer) {
    if (!layer)
      return Expected<ImportedWeight>(layer.error());
    return Expected<ImportedWeight>(std::move(layer->weight));
  };
  switch (layout.kind) {
  case Kind::None:
    break;
  case Kind::Gptq:
    return importGptq(checkpoint, prefix, layout.gptq);
  case Kind::Awq:
    return importAwq(checkpoint, prefix, layout.awqGroupSize);
  case Kind::PackQuantized:
    return importPackQuantized(checkpoint, prefix, layout.packQuantized);
  case Kind::Nvfp4CompressedTensors:
    return nvfp4Weight(importNvfp4CompressedTensors(checkpoint, prefix));
  case Kind::FloatQuantized:
    return importFloatQuantized(checkpoint, prefix, layout.floatQuantized);
  case Kind::Nvfp4ModelOpt:
    return nvfp4Weight(importNvfp4ModelOpt(checkpoint, prefix));
  case Kind::Mxfp4CompressedTensors:
    return importMxfp4CompressedTensors(checkpoint, prefix,
                                        *lookupScheme("mxfp4"));
  case Kind::LowbitSets:
    return makeError(ErrorCode::InvalidArgument,
                     "'" + prefix +
                         "' is a lowbit set (DIR/<module>/), not a "
                         "safetensors layer: read it as a set");
  }
  return makeError(ErrorCode::InvalidArgument,
                   "the checkpoint has no quantization config: '" + prefix +
                       "' has no quantized layout to import");
}

} // namespace lowbit::checkpoint
