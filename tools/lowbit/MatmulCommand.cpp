//===- MatmulCommand.cpp - `lowbit matmul` --------------------------------===//
//
// Y = X . dequant(W)^T (+ bias) for a weight set written by `lowbit
// quantize` from an [N, K] weight (docs/matmul.md), on the CPU kernel or
// on a target's GPU kernels in the emulator. Every input is checked before
// anything is compiled or written; Y is written through a temporary file
// and a rename.
//
//===----------------------------------------------------------------------===//

#include "matmul/MatmulPrologues.h"
#include "matmul/MatmulSpec.h"
#include "runtime/core/Npy.h"
#include "tools/lowbit/CheckpointWeights.h"
#include "tools/lowbit/CommandLine.h"
#include "tools/lowbit/Commands.h"
#include "tools/lowbit/EmulatorBackend.h"
#include "tools/lowbit/MatmulBackends.h"
#include "tools/lowbit/OutputPaths.h"
#include "tools/lowbit/SideInputs.h"

#include <array>
#include <cstring>

#include <fmt/format.h>

namespace lowbit::cli {

namespace {

constexpr std::string_view kUsage =
    "usage: lowbit matmul --weights DIR --input X.npy --out Y.npy\n"
    "         [--bias B.npy] [--out-dtype f32|f16|bf16] [--act SCHEME]\n"
    "         [--backend cpu|gpu-emulator [--target ARCH]]\n\n"
    "Y = X . dequant(W)^T (+ bias), accumulated in f32 in the order of\n"
    "docs/matmul.md. DIR is a set written by 'lowbit quantize' from an\n"
    "[N, K] weight (rows are output channels), or CKPT::LAYER a quantized\n"
    "layer of a GPTQ, AWQ, compressed-tensors or ModelOpt checkpoint\n"
    "directory, or FILE.gguf::TENSOR a Q8_0 or Q4_0 matrix of a GGUF\n"
    "file (docs/checkpoints.md). X is an [M, K] .npy of\n"
    "float32, float16, or uint16 holding bf16 bits; B is a float32 [N].\n"
    "Y is [M, N] in X's dtype unless --out-dtype says otherwise (bf16 as\n"
    "uint16 bits). --backend cpu (the default) runs the JIT-compiled CPU\n"
    "kernel; gpu-emulator runs the GPU kernels of --target (default\n"
    "sm_90a) in the GPU emulator. Both give the same bytes.\n"
    "--act SCHEME quantizes X with SCHEME inside the same call (W8A8,\n"
    "W4A4: 'matmul w=... a=...', docs/matmul.md, \"Quantized\n"
    "activations\"). --act 'PROLOGUE | ... | SCHEME' runs the prologues\n"
    "on X first, as 'PROLOGUE | quantize' does (rmsnorm, smooth,\n"
    "hadamard(B), map(...); docs/fusion.md), on --backend cpu; give their\n"
    "side tensors, in X's dtype, as --side NAME=FILE: rmsnorm reads\n"
    "weight, smooth reads smooth ([K]; a name two prologues read is\n"
    "numbered from the second on: weight, weight2).\n";

constexpr std::array<OptionSpec, 9> kOptions = {{
    {"weights", true},
    {"input", true},
    {"out", true},
    {"bias", true},
    {"out-dtype", true},
    {"backend", true},
    {"target", true},
    {"act", true},
    {"side", true, /*repeatable=*/true},
}};

/// X's dtype from its .npy dtype (.npy has no bf16: uint16 holds its bits,
/// as lowbit writes bf16).
std::optional<ValueType> inputDtypeOf(npy::DType dtype) {
  switch (dtype) {
  case npy::DType::F32:
    return ValueType::F32;
  case npy::DType::F16:
    return ValueType::F16;
  case npy::DType::U16:
    return ValueType::BF16;
  default:
    return std::nullopt;
  }
}

npy::DType npyDtypeOf(ValueType dtype) {
  switch (dtype) {
  case ValueType::F32:
    return npy::DType::F32;
  case ValueType::F16:
    return npy::DType::F16;
  case ValueType::BF16:
    return npy::DType::U16;
  }
  return npy::DType::F32;
}

} // namespace

CommandResult runMatmul(Arguments args) {
  CommandResult done;
  auto parsed = parseCommandLineOrHelp("matmul", args, kOptions, kUsage, &done);
  if (!parsed)
    return done;
  if (!parsed->operands.empty())
    return fail(fmt::format("'matmul' takes no operands, got '{}'",
                            parsed->operands.front()));
  for (const char *required : {"weights", "input", "out"})
    if (!parsed->value(required))
      return fail(fmt::format("'matmul' needs --{}", required));
  std::string weightsDirectory = weightsPath(*parsed->value("weights"));
  std::vector<std::string> sideFiles = sideInputFiles(*parsed);
  CommandPaths paths;
  paths.reads("weights", &weightsDirectory)
      .reads("input", parsed->value("input"))
      .reads("bias", parsed->value("bias"));
  for (const std::string &file : sideFiles)
    paths.reads("side", &file);
  if (CommandResult aliased = paths.writes("out", parsed->value("out")).check())
    return aliased;
  std::string backend = "cpu";
  if (const std::string *value = parsed->value("backend"))
    backend = *value;
  if (backend != "cpu" && backend != "gpu-emulator")
    return fail(fmt::format("unknown backend '{}' (available: cpu, "
                            "gpu-emulator)",
                            backend));
  const std::string *target = parsed->value("target");
  if (target && backend != "gpu-emulator")
    return fail("--target is for --backend gpu-emulator");
  std::optional<ValueType> outDtype;
  if (const std::string *value = parsed->value("out-dtype"))
    if (!(outDtype = parseValueType(*value)))
      return fail(fmt::format("unknown --out-dtype '{}': expected f32, f16 "
                              "or bf16",
                              *value));

  std::string error;
  const std::string &directory = *parsed->value("weights");
  std::vector<int64_t> weightShape;
  std::vector<int32_t> inputOrder;
  std::optional<QuantizedTensor> weights =
      readWeights(directory, &error, &weightShape, &inputOrder);
  if (!weights)
    return fail(fmt::format("--weights {}: {}", directory, error));
  if (weightShape.size() != 2)
    return fail(fmt::format("--weights {}: the set is {}-D; matmul takes "
                            "one quantized from an [N, K] weight",
                            directory, weightShape.size()));
  if (std::string refusal = matmul::weightSchemeRefusal(weights->scheme);
      !refusal.empty())
    return fail(fmt::format("--weights {}: its scheme is not a weight "
                            "scheme: {}",
                            directory, refusal));
  const int64_t n = weights->rows, k = weights->cols;

  const std::string &inputPath = *parsed->value("input");
  std::optional<npy::Array> x = npy::readNpy(inputPath, &error);
  if (!x)
    return fail(error);
  if (x->shape.size() != 2)
    return fail(fmt::format("--input {}: X must be [M, K], got shape {}",
                            inputPath, x->shapeText()));
  std::optional<ValueType> inputDtype = inputDtypeOf(x->dtype);
  if (!inputDtype)
    return fail(fmt::format("--input {}: X must be float32, float16 or "
                            "uint16 (bf16 bits), got {}",
                            inputPath, npy::dtypeName(x->dtype)));
  if (x->shape[1] != k)
    return fail(fmt::format("K mismatch: --input {} is [{}, {}] but the "
                            "weights in {} are [N, K] = [{}, {}]",
                            inputPath, x->shape[0], x->shape[1], directory, n,
                            k));

  MatmulProblem problem;
  problem.spec.scheme = weights->scheme;
  problem.spec.scheme.scale.mode = ScaleMode::Dynamic;
  problem.spec.input = *inputDtype;
  problem.spec.output = outDtype.value_or(*inputDtype);
  if (const std::string *act = parsed->value("act")) {
    // 'PROLOGUE | ... | SCHEME': the spec's own prologue grammar.
    std::string_view schemeText = *act;
    if (!takePrologueChain(schemeText, problem.spec.prologues, &error))
      return fail(fmt::format("--act {}: {}", *act, error));
    while (!schemeText.empty() && schemeText.front() == ' ')
      schemeText.remove_prefix(1);
    while (!schemeText.empty() && schemeText.back() == ' ')
      schemeText.remove_suffix(1);
    std::optional<Scheme> activations = parseSchemeText(schemeText, &error);
    if (!activations)
      return fail(fmt::format("--act {}: {}", *act, error));
    activations->scale.mode = ScaleMode::Dynamic;
    if (std::string refusal =
            matmul::activationPairRefusal(problem.spec.scheme, *activations);
        !refusal.empty())
      return fail(fmt::format("--act {}: {}", *act, refusal));
    problem.spec.activation = *activations;
    if (std::string refusal =
            matmul::matmulPrologueRefusal(problem.spec.prologues);
        !refusal.empty())
      return fail(fmt::format("--act {}: {}", *act, refusal));
    if (!matmul::validateMatmulShape(problem.spec, n, k, &error))
      return fail(fmt::format("--act {}: {}", *act, error));
  }
  // The prologues' side tensors, [K] each, of X's dtype.
  std::vector<SideInput> sides;
  for (std::string &name : matmul::matmulSideInputNames(problem.spec.prologues))
    sides.push_back({std::move(name), {1, k}});
  std::optional<std::vector<std::vector<uint8_t>>> sideBytes =
      readSideInputs(*parsed, sides, x->dtype, {}, &error);
  if (!sideBytes)
    return fail(error);
  problem.sides = std::move(*sideBytes);
  problem.weights = &*weights;
  problem.x = std::move(x->bytes);
  // An act-order layer (GPTQ g_idx): its column c is input channel
  // inputOrder[c], so X's columns are gathered the same way.
  if (!inputOrder.empty()) {
    size_t width = size_t(valueTypeBytes(*inputDtype));
    std::vector<uint8_t> gathered(problem.x.size());
    for (int64_t row = 0; row < x->shape[0]; ++row)
      for (int64_t col = 0; col < k; ++col)
        std::memcpy(
            &gathered[size_t(row * k + col) * width],
            &problem.x[size_t(row * k + inputOrder[size_t(col)]) * width],
            width);
    problem.x = std::move(gathered);
  }
  problem.m = x->shape[0];
  if (const std::string *biasPath = parsed->value("bias")) {
    std::optional<npy::Array> bias = npy::readNpy(*biasPath, &error);
    if (!bias)
      return fail(error);
    if (bias->dtype != npy::DType::F32 || bias->shape.size() != 1 ||
        bias->shape[0] != n)
      return fail(fmt::format("--bias {}: the bias must be float32 [N] = "
                              "[{}], got {} {}",
                              *biasPath, n, npy::dtypeName(bias->dtype),
                              bias->shapeText()));
    problem.spec.bias = true;
    problem.bias = bias->values<float>();
  }

  std::optional<std::vector<uint8_t>> y =
      backend == "cpu"
          ? runMatmulOnCpu(problem, &error)
          : runMatmulInEmulator(
                problem, target ? *target : kEmulatorDefaultTarget, &error);
  if (!y)
    return fail(error);
  npy::Array output;
  output.dtype = npyDtypeOf(problem.spec.output);
  output.shape = {problem.m, n};
  output.bytes = std::move(*y);
  if (!npy::writeNpy(*parsed->value("out"), output, &error))
    return fail(error);
  return std::nullopt;
}

} // namespace lowbit::cli
