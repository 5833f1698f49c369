//===- QuantizeSpec.cpp - `lowbit quantize --spec`: fused quantize --------===//
//
// The side inputs are the kernel's (kernelAbi: KernelAbiParam::side), named
// as the prologue names them; a name that two prologues of the chain read
// is numbered from the second on (weight, weight2). The CPU kernel, the
// GPU emulator and the reference (format/Prologue.h's quantizeFused) give
// the same bytes, so the directory does not depend on the backend.
//
//===----------------------------------------------------------------------===//

#include "tools/lowbit/QuantizeSpec.h"

#include "format/Prologue.h"
#include "runtime/core/Npy.h"
#include "runtime/files/QuantizedFiles.h"
#include "runtime/jit/ArgumentShapes.h"
#include "runtime/spec/KernelAbi.h"
#include "tools/lowbit/FusedComparison.h"
#include "tools/lowbit/JitBackend.h"
#include "tools/lowbit/SideInputs.h"

#include <algorithm>
#include <cstring>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace lowbit::cli {

namespace {

/// Options that --scheme's form takes and a spec spells itself.
constexpr std::string_view kSchemeOnlyOptions[] = {
    "from",  "rule",       "global",    "layout",
    "scale", "scale-file", "zero-file", "global-scale-file"};

std::vector<SideInput> sideInputs(const KernelSpec &sized) {
  std::vector<SideInput> sides;
  std::map<std::string, int> seen;
  for (const KernelAbiParam &param : kernelAbi(sized)) {
    if (param.isResult || param.side.empty())
      continue;
    int count = ++seen[param.side];
    sides.push_back(
        {count == 1 ? param.side : fmt::format("{}{}", param.side, count),
         param.shape});
  }
  return sides;
}

/// Whether a .npy of `dtype` holds the spec's values: float32 for f32,
/// float16 (or its uint16 bits) for f16, uint16 bits for bf16.
bool holdsValueType(npy::DType dtype, ValueType type) {
  switch (type) {
  case ValueType::F32:
    return dtype == npy::DType::F32;
  case ValueType::F16:
    return dtype == npy::DType::F16 || dtype == npy::DType::U16;
  case ValueType::BF16:
    return dtype == npy::DType::U16;
  }
  return false;
}

std::string dtypeRequirement(ValueType type) {
  switch (type) {
  case ValueType::F32:
    return "float32 (the spec reads f32)";
  case ValueType::F16:
    return "float16 or uint16 bits (the spec reads f16)";
  case ValueType::BF16:
    return "uint16 bf16 bits (the spec reads bf16)";
  }
  return "";
}

/// The f32 values of a buffer of the spec's value type.
std::vector<float> widen(ValueType type, const std::vector<uint8_t> &bytes) {
  if (type == ValueType::F32) {
    std::vector<float> values(bytes.size() / 4);
    std::memcpy(values.data(), bytes.data(), values.size() * 4);
    return values;
  }
  std::vector<uint16_t> bits(bytes.size() / 2);
  std::memcpy(bits.data(), bytes.data(), bits.size() * 2);
  return widenToFloat(type == ValueType::F16 ? HalfType::F16 : HalfType::BF16,
                      bits);
}

/// The reference: the chain in f32, then the reference quantizer.
std::optional<QuantizedTensor>
referenceFused(const KernelSpec &spec,
               const std::vector<std::vector<uint8_t>> &reads, int64_t rows,
               int64_t cols, std::vector<uint8_t> *residual,
               std::string *error) {
  std::vector<float> input = widen(spec.valueType, reads.front());
  std::vector<std::vector<float>> sides;
  for (size_t i = 1; i < reads.size(); ++i)
    sides.push_back(widen(spec.valueType, reads[i]));
  std::vector<float> updated;
  std::optional<QuantizedTensor> tensor = quantizeFused(
      spec.scheme, spec.prologues, bindPrologueOperands(spec.prologues, sides),
      input, rows, cols, dtypeOf(spec.valueType), {}, &updated, error);
  if (tensor && !updated.empty()) {
    std::vector<float> ignored;
    *residual = toDtype(spec.valueType, updated, ignored);
  }
  return tensor;
}

/// Parses the spec and checks it against the command line.
std::optional<KernelSpec> readSpec(const ParsedCommandLine &parsed,
                                   std::string *error) {
  for (std::string_view option : kSchemeOnlyOptions)
    if (parsed.value(option)) {
      *error = fmt::format("--{} does not go with --spec: write it in the "
                           "spec (docs/fusion.md)",
                           option);
      return std::nullopt;
    }
  std::optional<KernelSpec> spec =
      parseKernelSpec(*parsed.value("spec"), error);
  if (!spec) {
    *error = "--spec: " + *error;
    return std::nullopt;
  }
  if (spec->op != KernelOp::Quantize || spec->isStatic() ||
      spec->globalSource == GlobalSource::Given) {
    *error = fmt::format("--spec '{}': quantize --spec takes a quantize of a "
                         "dynamic scheme that computes its scales",
                         *parsed.value("spec"));
    return std::nullopt;
  }
  return spec;
}

} // namespace

std::string quantizeSpecUsage() {
  // Each prologue's side tensors, as the kernel ABI names them: the
  // parameters of a spec with that prologue alone (RmsNorm and Map are
  // the enum's first and last).
  std::vector<std::string> names;
  for (auto kind = uint8_t(PrologueKind::RmsNorm);
       kind <= uint8_t(PrologueKind::Map); ++kind) {
    KernelSpec spec;
    Prologue prologue;
    prologue.kind = PrologueKind(kind);
    spec.prologues.push_back(prologue);
    std::vector<std::string> sides;
    for (const SideInput &side : sideInputs(spec))
      sides.push_back(side.name);
    if (!sides.empty())
      names.push_back(fmt::format("{} reads {}",
                                  prologueName(PrologueKind(kind)),
                                  fmt::join(sides, " and ")));
  }
  return fmt::format(
      "\nlowbit quantize --spec SPEC --input x.npy [--side NAME=FILE ...]\n"
      "         [--residual-out r.npy] --out DIR [--backend ...]\n"
      "quantizes with a quantize kernel spec of a dynamic scheme, prologues\n"
      "included (docs/fusion.md): 'rmsnorm(eps=1e-6) | quantize nvfp4'.\n"
      "The input and every side tensor hold the spec's values (from=f32\n"
      "by default: float32; f16: float16; bf16: uint16 bits). Give each\n"
      "side tensor the prologues read with --side NAME=FILE:\n"
      "  {}\n"
      "A vector is [cols], a residual is shaped like the input. A name two\n"
      "prologues read is numbered from the second on (weight, weight2).\n"
      "add_rmsnorm writes its updated residual to --residual-out.\n",
      fmt::join(names, "\n  "));
}

CommandResult runQuantizeSpec(const ParsedCommandLine &parsed,
                              const BackendChoice &choice) {
  std::string error;
  std::optional<KernelSpec> spec = readSpec(parsed, &error);
  if (!spec)
    return fail(error);

  const std::string &inputPath = *parsed.value("input");
  std::optional<npy::Array> input =
      npy::readNpy(inputPath, &error, npy::kMaxNpyRank);
  if (!input)
    return fail(error);
  if (input->shape.size() < 2 || input->elementCount() == 0)
    return fail(fmt::format("{}: the input must be a non-empty array of 2 or "
                            "more axes, got shape {}",
                            inputPath, input->shapeText()));
  if (!holdsValueType(input->dtype, spec->valueType))
    return fail(fmt::format("{}: the input is {}; expected {}", inputPath,
                            npy::dtypeName(input->dtype),
                            dtypeRequirement(spec->valueType)));
  std::span<const int64_t> leading(input->shape.data(),
                                   input->shape.size() - 1);
  int64_t rows = 1;
  for (int64_t size : leading)
    rows *= size;
  std::optional<int64_t> cols = jit::quantizedCols(*spec, input->shape.back());
  if (!cols)
    return fail(fmt::format("{}: silu_mul reads [rows, 2 * cols]; the input "
                            "has {} columns",
                            inputPath, input->shape.back()));
  if ((spec->rows != kDynamic && spec->rows != rows) ||
      (spec->cols != kDynamic && spec->cols != *cols))
    return fail(fmt::format("{}: the spec is for rows={} cols={}, the input "
                            "gives rows={} cols={}",
                            inputPath, spec->rows, spec->cols, rows, *cols));
  if (leading.size() == 1)
    leading = {};
  KernelSpec sized = *spec;
  sized.rows = rows;
  sized.cols = *cols;
  if (!validateKernelSpec(sized, &error) ||
      !validatePrologueChain(spec->prologues, *cols, &error))
    return fail(error);

  // The side inputs: each one the kernel reads given once, nothing else.
  std::vector<SideInput> sides = sideInputs(sized);
  std::optional<std::vector<std::vector<uint8_t>>> sideReads =
      readSideInputs(parsed, sides, input->dtype, leading, &error);
  if (!sideReads)
    return fail(error);

  bool writesResidual = false;
  for (const Prologue &prologue : spec->prologues)
    writesResidual |= prologueWritesResidual(prologue.kind);
  const std::string *residualOut = parsed.value("residual-out");
  if (writesResidual != bool(residualOut))
    return fail(writesResidual
                    ? "add_rmsnorm writes the updated residual: give "
                      "--residual-out FILE"
                    : "--residual-out: the spec writes no residual (only "
                      "add_rmsnorm does)");

  // The buffers the kernel reads, in its parameter order.
  std::vector<std::vector<uint8_t>> reads{std::move(input->bytes)};
  for (std::vector<uint8_t> &side : *sideReads)
    reads.push_back(std::move(side));

  // The backend: as for --scheme, auto is the CPU kernel where it
  // compiles, else the reference.
  std::string backend = choice.name;
  if (backend != "reference" && backend != "gpu-emulator") {
    std::string compileError;
    if (compileCpuKernel(*spec, &compileError))
      backend = "cpu";
    else if (backend == "cpu")
      return fail(fmt::format("the CPU backend cannot compile this spec: {}",
                              compileError));
    else
      backend = "reference";
  }
  std::vector<uint8_t> residual;
  std::optional<QuantizedTensor> tensor =
      backend == "reference"
          ? referenceFused(*spec, reads, rows, *cols, &residual, &error)
          : jitQuantizeFused(
                *spec, reads, rows, *cols, &residual, &error, nullptr,
                choice.emulator ? *choice.emulator : KernelRunner());
  if (!tensor)
    return fail(error);

  // The set keeps the input's N-D shape, with the quantized columns.
  std::vector<int64_t> shape(leading.begin(), leading.end());
  if (!shape.empty())
    shape.push_back(*cols);
  if (!files::writeQuantizedDirectory(*parsed.value("out"), *tensor,
                                      valueTypeName(spec->valueType), &error,
                                      shape))
    return fail(error);
  if (residualOut) {
    std::vector<int64_t> residualShape =
        shape.empty() ? std::vector<int64_t>{rows, *cols} : shape;
    npy::Array array;
    array.dtype = input->dtype;
    array.shape = std::move(residualShape);
    array.bytes = std::move(residual);
    if (!npy::writeNpy(*residualOut, array, &error))
      return fail(error);
  }
  return std::nullopt;
}

} // namespace lowbit::cli
