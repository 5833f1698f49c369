//===- QuantizeCommand.cpp - `lowbit quantize` ----------------------------===//
//
// Reads a 2-D (or N-D) .npy tensor, quantizes it with a scheme and writes the
// directory described in runtime/files/QuantizedFiles.h. Every input is
// read and checked and the whole result computed before anything is
// written, and the directory is replaced as one unit (a sibling temporary
// directory swapped in), so a failed, killed or concurrent run never leaves
// a partial or mixed set.
//
//===----------------------------------------------------------------------===//

#include "format/Codec.h"
#include "format/Quantize.h"
#include "runtime/core/Npy.h"
#include "runtime/files/QuantizedFiles.h"
#include "tools/lowbit/CommandLine.h"
#include "tools/lowbit/Commands.h"
#include "tools/lowbit/EmulatorBackend.h"
#include "tools/lowbit/JitBackend.h"
#include "tools/lowbit/OutputPaths.h"
#include "tools/lowbit/QuantizeSpec.h"
#include "tools/lowbit/SideInputs.h"

#include <array>

#include <fmt/format.h>

namespace lowbit::cli {

namespace {

constexpr std::string_view kUsage =
    "usage: lowbit quantize --scheme NAME --input x.npy --out DIR\n"
    "         [--from f32|f16|bf16] [--rule floor|rceil]\n"
    "         [--global decode|encode] [--layout row_major|swizzle_128x4]\n"
    "         [--scale dynamic|static --scale-file s.npy [--zero-file z.npy]]\n"
    "         [--global-scale-file g.npy]\n"
    "         [--backend auto|cpu|reference|gpu-emulator [--target ARCH]]\n\n"
    "Quantizes a C-order .npy tensor of 2 to 8 axes (an N-D one in groups\n"
    "along its last axis, the leading axes flattened into rows; the set\n"
    "keeps its shape) (float32, float16, or uint16 bit\n"
    "patterns with --from bf16 or --from f16) and writes DIR/q.npy (uint8\n"
    "packed codes), DIR/scales.npy (float32 for f32 scales, float16 for\n"
    "f16, uint16 bits for bf16, uint8 codes for e8m0 and ue4m3),\n"
    "DIR/zeros.npy and DIR/global_scale.npy where the scheme has them,\n"
    "DIR/meta.json and DIR/manifest.json (each file's size and SHA-256).\n"
    "DIR is replaced as a whole, and only if it holds nothing but such\n"
    "files. --rule, --global and --layout change the named scheme.\n"
    "--scale static quantizes with the given scales (the files a dynamic run\n"
    "writes); --global-scale-file fixes NVFP4's global scale in either mode.\n"
    "The semantics are in docs/quantization.md.\n\n"
    "--backend cpu runs a kernel JIT-compiled for this CPU; reference runs\n"
    "the reference quantizer. Both write the same bytes. The default, auto,\n"
    "uses the CPU kernel when the JIT compiles the scheme, else reference.\n"
    "gpu-emulator runs the GPU kernels of --target (default sm_90a) on the\n"
    "CPU with CUDA's semantics (docs/emulator.md); same bytes again.\n";

constexpr std::array<OptionSpec, 16> kOptions = {{
    {"scheme", true},
    {"spec", true},
    {"side", true, /*repeatable=*/true},
    {"residual-out", true},
    {"input", true},
    {"out", true},
    {"from", true},
    {"rule", true},
    {"global", true},
    {"layout", true},
    {"scale", true},
    {"scale-file", true},
    {"zero-file", true},
    {"global-scale-file", true},
    {"backend", true},
    {"target", true},
}};

/// The element type of the input tensor.
enum class InputType { F32, F16, BF16 };

std::string_view inputTypeName(InputType type) {
  switch (type) {
  case InputType::F32:
    return "f32";
  case InputType::F16:
    return "f16";
  case InputType::BF16:
    return "bf16";
  }
  return "";
}

/// Which input type a .npy dtype holds, given --from.
std::optional<InputType> resolveInputType(npy::DType dtype,
                                          const std::string *from,
                                          std::string *error) {
  std::optional<InputType> requested;
  if (from) {
    if (*from == "f32")
      requested = InputType::F32;
    else if (*from == "f16")
      requested = InputType::F16;
    else if (*from == "bf16")
      requested = InputType::BF16;
    else {
      *error = fmt::format("unknown --from type '{}': expected f32, f16 or "
                           "bf16",
                           *from);
      return std::nullopt;
    }
  }
  switch (dtype) {
  case npy::DType::F32:
    if (!requested || *requested == InputType::F32)
      return InputType::F32;
    break;
  case npy::DType::F16:
    if (!requested || *requested == InputType::F16)
      return InputType::F16;
    break;
  case npy::DType::U16:
    if (!requested) {
      *error = "the input is uint16: say what it holds with --from bf16 or "
               "--from f16";
      return std::nullopt;
    }
    if (*requested != InputType::F32)
      return requested;
    break;
  default:
    *error = fmt::format("the input must be float32, float16 or uint16 "
                         "(bf16/f16 bits), got {}",
                         npy::dtypeName(dtype));
    return std::nullopt;
  }
  *error = fmt::format("the input is {} but --from says {}",
                       npy::dtypeName(dtype), inputTypeName(*requested));
  return std::nullopt;
}

/// Applies --rule, --global and --layout to the named scheme.
CommandResult adjustScheme(Scheme &scheme, const ParsedCommandLine &parsed) {
  if (const std::string *rule = parsed.value("rule")) {
    if (scheme.scale.type != ScaleType::E8M0)
      return fail(fmt::format("--rule applies to e8m0-scaled (MX) schemes; "
                              "'{}' has {} scales",
                              scheme.name, scaleTypeName(scheme.scale.type)));
    if (*rule == "floor")
      scheme.scale.rule = ScaleRule::E8M0Floor;
    else if (*rule == "rceil")
      scheme.scale.rule = ScaleRule::E8M0RCeil;
    else
      return fail(
          fmt::format("unknown --rule '{}': expected floor or rceil", *rule));
  }
  if (const std::string *global = parsed.value("global")) {
    if (scheme.scale.globalScale == GlobalScale::None)
      return fail(fmt::format("--global applies to schemes with a "
                              "second-level scale; '{}' has none",
                              scheme.name));
    if (*global == "decode")
      scheme.scale.globalScale = GlobalScale::DecodeMultiplier;
    else if (*global == "encode")
      scheme.scale.globalScale = GlobalScale::EncodeReciprocal;
    else
      return fail(fmt::format(
          "unknown --global '{}': expected decode or encode", *global));
  }
  if (const std::string *layout = parsed.value("layout")) {
    std::optional<ScaleLayout> parsedLayout = parseScaleLayout(*layout);
    if (!parsedLayout)
      return fail(fmt::format("unknown --layout '{}': expected row_major or "
                              "swizzle_128x4",
                              *layout));
    scheme.scale.layout = *parsedLayout;
    std::string error;
    if (!validateScheme(scheme, &error))
      return fail(fmt::format("--layout {}: {}", *layout, error));
  }
  return std::nullopt;
}

/// A scale or zero-point file: 2-D, or for an N-D input (`leading` its
/// axes but the last) in the N-D form the output set has.
std::optional<npy::Array> readSideFile(const std::string &path,
                                       std::span<const int64_t> leading,
                                       std::string *error) {
  auto array =
      npy::readNpy(path, error, leading.empty() ? 2 : npy::kMaxNpyRank);
  if (array && !leading.empty())
    files::flattenLeadingAxes(*array, leading);
  return array;
}

/// Reads the --scale-file, --zero-file and --global-scale-file inputs.
CommandResult readGivenScales(Scheme &scheme, const ParsedCommandLine &parsed,
                              int64_t rows, int64_t cols,
                              std::span<const int64_t> leading,
                              StaticScales &given) {
  std::string error;
  const std::string *mode = parsed.value("scale");
  bool isStatic = false;
  if (mode) {
    if (*mode != "static" && *mode != "dynamic")
      return fail(fmt::format("unknown --scale '{}': expected dynamic or "
                              "static",
                              *mode));
    isStatic = *mode == "static";
  }
  const std::string *scaleFile = parsed.value("scale-file");
  const std::string *zeroFile = parsed.value("zero-file");
  const std::string *globalFile = parsed.value("global-scale-file");
  if (!isStatic && (scaleFile || zeroFile))
    return fail(fmt::format("--{} needs --scale static",
                            scaleFile ? "scale-file" : "zero-file"));
  if (isStatic) {
    scheme.scale.mode = ScaleMode::Static;
    if (!scaleFile)
      return fail("--scale static needs --scale-file");
    auto array = readSideFile(*scaleFile, leading, &error);
    if (!array)
      return fail(error);
    auto codes = files::scalesFromArray(*array, scheme, rows, cols, &error);
    if (!codes)
      return fail(fmt::format("{}: {}", *scaleFile, error));
    given.scaleCodes = std::move(*codes);
    if (scheme.scale.zeroPoint != bool(zeroFile))
      return fail(scheme.scale.zeroPoint
                      ? fmt::format("scheme '{}' has zero points: static "
                                    "mode needs --zero-file",
                                    scheme.name)
                      : fmt::format("scheme '{}' has no zero points; drop "
                                    "--zero-file",
                                    scheme.name));
    if (zeroFile) {
      auto zeros = readSideFile(*zeroFile, leading, &error);
      if (!zeros)
        return fail(error);
      auto values = files::zerosFromArray(*zeros, scheme, rows, cols, &error);
      if (!values)
        return fail(fmt::format("{}: {}", *zeroFile, error));
      given.zeros = std::move(*values);
    }
    if (scheme.scale.globalScale != GlobalScale::None && !globalFile)
      return fail(fmt::format("scheme '{}' has a global scale: static mode "
                              "needs --global-scale-file",
                              scheme.name));
  }
  if (globalFile) {
    if (scheme.scale.globalScale == GlobalScale::None)
      return fail(fmt::format("scheme '{}' has no global scale; drop "
                              "--global-scale-file",
                              scheme.name));
    auto array = npy::readNpy(*globalFile, &error);
    if (!array)
      return fail(error);
    auto value = files::globalFromArray(*array, &error);
    if (!value)
      return fail(fmt::format("{}: {}", *globalFile, error));
    given.globalScale = *value;
  }
  return std::nullopt;
}

/// What quantize reads and writes: DIR is replaced as a whole, so no
/// input may lie inside it.
CommandPaths quantizePaths(const ParsedCommandLine &parsed) {
  CommandPaths paths;
  for (const char *input :
       {"input", "scale-file", "zero-file", "global-scale-file"})
    paths.reads(input, parsed.value(input));
  // --side NAME=FILE: the prologue's side tensors are inputs too.
  std::vector<std::string> sideFiles = sideInputFiles(parsed);
  for (const std::string &file : sideFiles)
    paths.reads("side", &file);
  paths.writes("residual-out", parsed.value("residual-out"));
  return paths.writes("out", parsed.value("out"));
}

} // namespace

CommandResult runQuantize(Arguments args) {
  std::string error;
  CommandResult done;
  auto parsed = parseCommandLineOrHelp(
      "quantize", args, kOptions,
      fmt::format("{}{}", kUsage, quantizeSpecUsage()), &done);
  if (!parsed)
    return done;
  if (!parsed->operands.empty())
    return fail(fmt::format("'quantize' takes no operands, got '{}'",
                            parsed->operands.front()));
  bool withSpec = parsed->value("spec");
  if (withSpec && parsed->value("scheme"))
    return fail("give --scheme or --spec, not both");
  for (const char *required : {withSpec ? "spec" : "scheme", "input", "out"})
    if (!parsed->value(required))
      return fail(fmt::format("'quantize' needs --{}", required));
  if (!withSpec &&
      (!parsed->list("side").empty() || parsed->value("residual-out")))
    return fail(
        fmt::format("--{} goes with --spec",
                    parsed->value("residual-out") ? "residual-out" : "side"));
  if (CommandResult aliased = quantizePaths(*parsed).check())
    return aliased;
  std::optional<BackendChoice> choice = parseBackendOptions(
      parsed->value("backend"), parsed->value("target"), &error);
  if (!choice)
    return fail(error);
  if (withSpec)
    return runQuantizeSpec(*parsed, *choice);
  std::string backend = choice->name;

  std::optional<Scheme> scheme = lookupScheme(*parsed->value("scheme"), &error);
  if (!scheme)
    return fail(error);
  if (CommandResult adjusted = adjustScheme(*scheme, *parsed))
    return adjusted;

  const std::string &inputPath = *parsed->value("input");
  std::optional<npy::Array> input =
      npy::readNpy(inputPath, &error, npy::kMaxNpyRank);
  if (!input)
    return fail(error);
  if (input->shape.size() < 2)
    return fail(fmt::format("{}: the input must have 2 or more axes "
                            "([rows, cols], or [..., cols] with groups along "
                            "the last axis), got shape {}",
                            inputPath, input->shapeText()));
  if (input->elementCount() == 0)
    return fail(fmt::format("{}: the input is empty (shape {})", inputPath,
                            input->shapeText()));
  std::optional<InputType> inputType =
      resolveInputType(input->dtype, parsed->value("from"), &error);
  if (!inputType)
    return fail(fmt::format("{}: {}", inputPath, error));
  // An N-D input is [rows, cols] with its leading axes flattened into rows
  // (C order, so the bytes are already in place); the set keeps its shape.
  int64_t rows = 1, cols = input->shape.back();
  for (size_t axis = 0; axis + 1 < input->shape.size(); ++axis)
    rows *= input->shape[axis];
  std::span<const int64_t> leading;
  if (input->shape.size() > 2)
    leading = std::span(input->shape).first(input->shape.size() - 1);

  StaticScales given;
  if (CommandResult scalesError =
          readGivenScales(*scheme, *parsed, rows, cols, leading, given))
    return scalesError;

  ValueType valueType = *inputType == InputType::F32   ? ValueType::F32
                        : *inputType == InputType::F16 ? ValueType::F16
                                                       : ValueType::BF16;
  if (backend != "reference" && backend != "gpu-emulator") {
    // The reference quantizer checks these itself; the kernel must not be
    // handed scales that do not fit the shape.
    if (!validateSchemeForShape(*scheme, rows, cols, &error))
      return fail(error);
    if (!chooseCpuOrReference(quantizeSpecFor(*scheme, valueType, given),
                              backend, &error))
      return fail(error);
  }

  std::optional<QuantizedTensor> tensor;
  if (backend == "cpu" || backend == "gpu-emulator")
    tensor = jitQuantize(*scheme, valueType, input->bytes.data(), rows, cols,
                         given, &error, nullptr,
                         choice->emulator ? *choice->emulator : KernelRunner());
  else if (*inputType == InputType::F32)
    tensor =
        quantize(*scheme, input->values<float>(), rows, cols, given, &error);
  else
    tensor = quantizeHalf(
        *scheme, *inputType == InputType::F16 ? HalfType::F16 : HalfType::BF16,
        input->values<uint16_t>(), rows, cols, given, &error);
  if (!tensor)
    return fail(error);
  if (!files::writeQuantizedDirectory(
          *parsed->value("out"), *tensor, inputTypeName(*inputType), &error,
          input->shape.size() > 2 ? std::span<const int64_t>(input->shape)
                                  : std::span<const int64_t>()))
    return fail(error);
  return std::nullopt;
}

} // namespace lowbit::cli
