//===- EvalFusedCommand.cpp - `lowbit eval --fused`: fused = unfused ------===//
//
// For each prologue (docs/fusion.md) and a few schemes: the fused kernel
// and the unfused pair (the reference prologue writes its f32 result, the
// ordinary quantize kernel reads it), both on the CPU through lowbit::Jit,
// with the SQNR of each against the prologue's f32 result and whether
// their codes (and scales, zero points, global scale) are identical. A
// third SQNR is what an engine's unfused pair usually gets: the prologue's
// result stored in the input dtype, then quantized (reference quantizer).
// It runs in the compiler library (it compiles kernels); the front end
// sends `eval --fused` here.
//
//===----------------------------------------------------------------------===//

#include "format/Prologue.h"
#include "format/Quantize.h"
#include "tools/lowbit/CommandLine.h"
#include "tools/lowbit/Commands.h"
#include "tools/lowbit/FusedComparison.h"
#include "tools/lowbit/SyntheticData.h"

#include <array>
#include <cmath>

#include <fmt/format.h>

namespace lowbit::cli {

namespace {

constexpr std::string_view kUsage =
    "usage: lowbit eval --fused [--rows N --cols N] [--from f32|f16|bf16] "
    "[--seed S]\n\n"
    "For each prologue (rmsnorm, add_rmsnorm, silu_mul, smooth,\n"
    "hadamard(128), map) fused in front of nvfp4, mxfp4, fp8_e4m3 and\n"
    "int4_g128: runs the fused kernel and the unfused pair (the reference\n"
    "prologue writing f32, then the ordinary quantize kernel) on the CPU and\n"
    "prints the SQNR of each against the prologue's f32 result, whether the\n"
    "codes are identical, and whether the fused kernel equals the reference\n"
    "bit for bit. 'rounded' is the SQNR when the prologue's result is stored\n"
    "in the input dtype first, as unfused engine kernels do. The input\n"
    "(--rows x --cols, default 256x4096; silu_mul reads twice the columns)\n"
    "is N(0, 1) with every 128th column (from column 7) 40x larger;\n"
    "--cols must be a multiple of 128.\n";

constexpr std::array<OptionSpec, 4> kOptions = {{
    {"rows", true},
    {"cols", true},
    {"from", true},
    {"seed", true},
}};

constexpr std::string_view kSchemes[] = {"nvfp4", "mxfp4", "fp8_e4m3",
                                         "int4_g128"};

struct Row {
  std::string prologue, scheme;
  double fusedSqnr = 0, unfusedSqnr = 0, roundedSqnr = 0;
  bool identical = false, bitExact = false;
};

std::string sqnrText(double db) {
  return std::isinf(db) ? std::string("inf") : fmt::format("{:.2f}", db);
}

/// The prologue's result stored in `type` and read back (what an unfused
/// engine kernel hands the quantize), quantized by the reference; its
/// SQNR against the f32 result.
std::optional<double> roundedSqnr(const Scheme &scheme, ValueType type,
                                  const std::vector<float> &values,
                                  int64_t rows, int64_t cols,
                                  std::string *error) {
  ValueDtype dtype = type == ValueType::F32   ? ValueDtype()
                     : type == ValueType::F16 ? ValueDtype(HalfType::F16)
                                              : ValueDtype(HalfType::BF16);
  std::vector<float> stored;
  stored.reserve(values.size());
  for (float value : values)
    stored.push_back(roundToDtype(dtype, value));
  std::optional<QuantizedTensor> tensor =
      quantize(scheme, stored, rows, cols, error);
  if (!tensor)
    return std::nullopt;
  return sqnrDb(*tensor, values);
}

std::optional<Row> evaluate(std::string_view prologue, std::string_view scheme,
                            ValueType type, const std::vector<float> &input,
                            int64_t rows, int64_t cols, uint64_t seed,
                            std::string *error) {
  std::string text =
      fmt::format("{} | quantize {} from={} rows={} cols={}", prologue, scheme,
                  valueTypeName(type), rows, cols);
  std::optional<KernelSpec> spec = parseKernelSpec(text, error);
  if (!spec)
    return std::nullopt;
  std::vector<float> values(
      input.begin(),
      input.begin() + rows * prologueInputWidth(spec->prologues, cols));
  std::optional<FusedComparison> compared =
      compareFused(*spec, values, rows, cols, seed, error);
  if (!compared) {
    *error = text + ": " + *error;
    return std::nullopt;
  }
  Row row{std::string(prologue), std::string(scheme)};
  std::optional<double> fused =
      sqnrDb(compared->fused, compared->prologueOutput);
  std::optional<double> unfused =
      sqnrDb(compared->unfused, compared->prologueOutput);
  std::optional<double> rounded = roundedSqnr(
      spec->scheme, type, compared->prologueOutput, rows, cols, error);
  if (!fused || !unfused || !rounded) {
    *error = text + ": the SQNR: " + *error;
    return std::nullopt;
  }
  row.fusedSqnr = *fused;
  row.unfusedSqnr = *unfused;
  row.roundedSqnr = *rounded;
  row.identical = compared->unfusedIdentical;
  row.bitExact = compared->fusedBitExact;
  return row;
}

} // namespace

CommandResult runEvalFused(Arguments args) {
  std::string error;
  CommandResult done;
  auto parsed =
      parseCommandLineOrHelp("eval --fused", args, kOptions, kUsage, &done);
  if (!parsed)
    return done;
  if (!parsed->operands.empty())
    return fail(fmt::format("'eval --fused' takes no operands, got '{}'",
                            parsed->operands.front()));
  auto rows = integerOption(*parsed, "rows", 256, 1, 1 << 16, &error);
  auto cols = rows ? integerOption(*parsed, "cols", 4096, 128, 1 << 16, &error)
                   : std::nullopt;
  auto seed = cols
                  ? integerOption(*parsed, "seed", 1, 0, INT64_MAX - 16, &error)
                  : std::nullopt;
  if (!seed)
    return fail(error);
  if (*cols % 128 != 0)
    return fail(fmt::format("--cols must be a multiple of 128 (hadamard(128) "
                            "and int4_g128), got {}",
                            *cols));
  ValueType type = ValueType::BF16;
  if (const std::string *from = parsed->value("from")) {
    std::optional<ValueType> named = parseValueType(*from);
    if (!named)
      return fail(
          fmt::format("--from must be f32, f16 or bf16, got '{}'", *from));
    type = *named;
  }

  // Wide enough for silu_mul's gate and up halves.
  Generator generator(static_cast<uint64_t>(*seed));
  std::vector<float> input;
  input.reserve(size_t(*rows * 2 * *cols));
  for (int64_t row = 0; row < *rows; ++row)
    for (int64_t col = 0; col < 2 * *cols; ++col)
      input.push_back(float(generator.normal() * (col % 128 == 7 ? 40 : 1)));

  std::vector<Row> table;
  for (std::string_view prologue : kShowcasePrologues)
    for (std::string_view scheme : kSchemes) {
      std::optional<Row> row = evaluate(prologue, scheme, type, input, *rows,
                                        *cols, uint64_t(*seed) + 1, &error);
      if (!row)
        return fail(error);
      table.push_back(std::move(*row));
    }

  fmt::print("lowbit eval --fused: fused kernels against the unfused pair, "
             "CPU, {} input {}x{}, seed {}\n",
             valueTypeName(type), *rows, *cols, *seed);
  fmt::print("(SQNR in dB against the prologue's f32 result; unfused: the "
             "reference prologue writes\nf32, the ordinary quantize kernel "
             "reads it; rounded: the prologue's result stored\nin {} first; "
             "bit-exact: the fused kernel equals the reference)\n\n",
             valueTypeName(type));
  fmt::print("  {:<22} {:<10} {:>10} {:>12} {:>15} {:>9} {:>9}\n", "prologue",
             "scheme", "SQNR fused", "SQNR unfused", "codes identical",
             "bit-exact", "rounded");
  size_t identical = 0, exact = 0;
  for (const Row &row : table) {
    fmt::print("  {:<22} {:<10} {:>10} {:>12} {:>15} {:>9} {:>9}\n",
               row.prologue, row.scheme, sqnrText(row.fusedSqnr),
               sqnrText(row.unfusedSqnr), row.identical ? "yes" : "no",
               row.bitExact ? "yes" : "no", sqnrText(row.roundedSqnr));
    identical += row.identical;
    exact += row.bitExact;
  }
  fmt::print("\n{}/{} identical codes and SQNR, fused and unfused; {}/{} "
             "fused kernels bit-exact\n",
             identical, table.size(), exact, table.size());
  return std::nullopt;
}

} // namespace lowbit::cli
