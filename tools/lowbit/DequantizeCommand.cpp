//===- DequantizeCommand.cpp - `lowbit dequantize` ------------------------===//

#include "format/Quantize.h"
#include "runtime/core/Npy.h"
#include "runtime/files/QuantizedFiles.h"
#include "tools/lowbit/CommandLine.h"
#include "tools/lowbit/Commands.h"
#include "tools/lowbit/EmulatorBackend.h"
#include "tools/lowbit/JitBackend.h"
#include "tools/lowbit/OutputPaths.h"

#include <array>

#include <fmt/format.h>

namespace lowbit::cli {

namespace {

constexpr std::string_view kUsage =
    "usage: lowbit dequantize --in DIR --out y.npy [--to f32|f16|bf16]\n"
    "         [--backend auto|cpu|reference|gpu-emulator [--target ARCH]]\n\n"
    "Reads a directory written by 'lowbit quantize' (each file checked\n"
    "against manifest.json, the arrays against meta.json's scheme, the\n"
    "codes against the formats) and writes the dequantized\n"
    "tensor: float32, float16, or bf16 as uint16 bit patterns. f16 and bf16\n"
    "are the f32 result rounded to nearest even. --backend as for\n"
    "'lowbit quantize': the JIT-compiled CPU kernel, the reference, or the\n"
    "GPU kernels of --target run in the GPU emulator; all give the same\n"
    "values.\n";

constexpr std::array<OptionSpec, 5> kOptions = {{
    {"in", true},
    {"out", true},
    {"to", true},
    {"backend", true},
    {"target", true},
}};

} // namespace

CommandResult runDequantize(Arguments args) {
  std::string error;
  CommandResult done;
  auto parsed =
      parseCommandLineOrHelp("dequantize", args, kOptions, kUsage, &done);
  if (!parsed)
    return done;
  if (!parsed->operands.empty())
    return fail(fmt::format("'dequantize' takes no operands, got '{}'",
                            parsed->operands.front()));
  for (const char *required : {"in", "out"})
    if (!parsed->value(required))
      return fail(fmt::format("'dequantize' needs --{}", required));
  if (CommandResult aliased = CommandPaths()
                                  .reads("in", parsed->value("in"))
                                  .writes("out", parsed->value("out"))
                                  .check())
    return aliased;
  std::string to = "f32";
  if (const std::string *value = parsed->value("to"))
    to = *value;
  if (to != "f32" && to != "f16" && to != "bf16")
    return fail(fmt::format("unknown --to type '{}': expected f32, f16 or "
                            "bf16",
                            to));

  std::optional<BackendChoice> choice = parseBackendOptions(
      parsed->value("backend"), parsed->value("target"), &error);
  if (!choice)
    return fail(error);
  std::string backend = choice->name;

  const std::string &directory = *parsed->value("in");
  // The tensor's own shape: N-D for a set quantized from an N-D array.
  std::vector<int64_t> shape;
  std::optional<QuantizedTensor> tensor =
      files::readQuantizedDirectory(directory, &error, &shape);
  if (!tensor)
    return fail(fmt::format("{}: {}", directory, error));
  npy::Array output;
  ValueType valueType = to == "f32"   ? ValueType::F32
                        : to == "f16" ? ValueType::F16
                                      : ValueType::BF16;
  if (backend != "reference" && backend != "gpu-emulator") {
    KernelSpec spec;
    spec.op = KernelOp::Dequantize;
    spec.scheme = tensor->scheme;
    spec.valueType = valueType;
    if (!chooseCpuOrReference(spec, backend, &error))
      return fail(error);
  }
  if (backend == "cpu" || backend == "gpu-emulator") {
    auto bytes =
        jitDequantize(*tensor, valueType, &error, nullptr,
                      choice->emulator ? *choice->emulator : KernelRunner());
    if (!bytes)
      return fail(error);
    output.dtype = to == "f32"   ? npy::DType::F32
                   : to == "f16" ? npy::DType::F16
                                 : npy::DType::U16;
    output.shape = shape;
    output.bytes = std::move(*bytes);
  } else if (to == "f32") {
    auto values = dequantize(*tensor, &error);
    if (!values)
      return fail(error);
    output = npy::Array::fromValues<float>(npy::DType::F32, shape, *values);
  } else {
    bool half = to == "f16";
    auto bits =
        dequantizeHalf(*tensor, half ? HalfType::F16 : HalfType::BF16, &error);
    if (!bits)
      return fail(error);
    output = npy::Array::fromValues<uint16_t>(
        half ? npy::DType::F16 : npy::DType::U16, shape, *bits);
  }
  if (!npy::writeNpy(*parsed->value("out"), output, &error))
    return fail(error);
  return std::nullopt;
}

} // namespace lowbit::cli
