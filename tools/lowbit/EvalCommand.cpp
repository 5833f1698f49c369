//===- EvalCommand.cpp - `lowbit eval`: error tables of the schemes -------===//
//
// A closed loop (quantize -> dequantize -> compare) with the reference
// quantizer on synthetic data. The data come from lowbit's own generator
// (splitmix64 + Box-Muller in double), so the tables are the same on every
// machine and run; a lit test runs it twice and compares.
//
//===----------------------------------------------------------------------===//

#include "format/Quantize.h"
#include "tools/lowbit/CommandLine.h"
#include "tools/lowbit/Commands.h"
#include "tools/lowbit/SyntheticData.h"

#include <array>
#include <cmath>
#include <functional>
#include <limits>

#include <fmt/format.h>

namespace lowbit::cli {

namespace {

constexpr std::string_view kUsage =
    "usage: lowbit eval [--rows N --cols N] [--weight-rows N --weight-cols N] "
    "[--seed S]\n\n"
    "Quantizes synthetic data with every named scheme (reference backend),\n"
    "dequantizes it and prints the error: bits per element (codes, scales,\n"
    "zero points at the element's width, and the global scale, from the\n"
    "actual tensor sizes), MSE, SQNR in dB (10 log10(sum x^2 / sum (x -\n"
    "x')^2)) and the largest error relative to its row's amax\n"
    "(max |x - x'| / max_row |x|). Data sets (--rows x --cols, default\n"
    "1024x1024): N(0, 1); Student-t with 3 degrees of freedom; N(0, 1) with\n"
    "every 128th column (from column 7) 40x larger. Then 4-bit\n"
    "granularities on a weight-like matrix (--weight-rows x --weight-cols,\n"
    "default 4096x4096) whose rows have log-normal scales.\n\n"
    "lowbit eval --kv: the KV-cache schemes instead (docs/kv-cache.md).\n"
    "lowbit eval --matmul: the SQNR of a quantized-weight matmul for each\n"
    "weight scheme (docs/matmul.md).\n"
    "lowbit eval --fused: fused kernels (prologue | quantize) against the\n"
    "unfused pair: identical codes and SQNR (docs/fusion.md).\n";

constexpr std::array<OptionSpec, 5> kOptions = {{
    {"rows", true},
    {"cols", true},
    {"weight-rows", true},
    {"weight-cols", true},
    {"seed", true},
}};

struct DataSet {
  std::string name;
  int64_t rows, cols;
  std::vector<float> values;
};

DataSet
makeDataSet(std::string name, int64_t rows, int64_t cols, uint64_t seed,
            const std::function<double(Generator &, int64_t, int64_t)> &draw) {
  Generator generator(seed);
  DataSet data{std::move(name), rows, cols, {}};
  data.values.reserve(size_t(rows * cols));
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t col = 0; col < cols; ++col)
      data.values.push_back(float(draw(generator, row, col)));
  return data;
}

struct Metrics {
  double bitsPerElement, mse, sqnrDb, maxRowRelative;
};

std::optional<Metrics> evaluate(const Scheme &scheme, const DataSet &data,
                                std::string *error) {
  std::optional<QuantizedTensor> tensor =
      quantize(scheme, data.values, data.rows, data.cols, error);
  if (!tensor)
    return std::nullopt;
  std::optional<std::vector<float>> values = dequantize(*tensor, error);
  if (!values)
    return std::nullopt;
  double signal = 0, noise = 0, maxRelative = 0;
  for (int64_t row = 0; row < data.rows; ++row) {
    double rowAbsMax = 0, rowMaxError = 0;
    for (int64_t col = 0; col < data.cols; ++col) {
      size_t index = size_t(row * data.cols + col);
      double x = data.values[index], difference = x - (*values)[index];
      signal += x * x;
      noise += difference * difference;
      rowAbsMax = std::max(rowAbsMax, std::fabs(x));
      rowMaxError = std::max(rowMaxError, std::fabs(difference));
    }
    if (rowAbsMax > 0)
      maxRelative = std::max(maxRelative, rowMaxError / rowAbsMax);
  }
  double count = double(data.rows * data.cols);
  return Metrics{double(storageBits(*tensor)) / count, noise / count,
                 noise > 0 ? 10 * std::log10(signal / noise)
                           : std::numeric_limits<double>::infinity(),
                 maxRelative};
}

CommandResult printTable(const DataSet &data,
                         const std::vector<Scheme> &schemes) {
  fmt::print("\n{} [{}x{}]\n", data.name, data.rows, data.cols);
  fmt::print("  {:<16} {:>9} {:>11} {:>9} {:>14}\n", "scheme", "bits/elem",
             "MSE", "SQNR dB", "max err/row amax");
  for (const Scheme &scheme : schemes) {
    std::string error;
    std::optional<Metrics> metrics = evaluate(scheme, data, &error);
    if (!metrics)
      return fail(fmt::format("{}: {}", scheme.name, error));
    fmt::print("  {:<16} {:>9.4f} {:>11.4e} {:>9.2f} {:>14.6f}\n", scheme.name,
               metrics->bitsPerElement, metrics->mse, metrics->sqnrDb,
               metrics->maxRowRelative);
  }
  return std::nullopt;
}

/// Symmetric int4 with the given granularity (the 4-bit table's baselines).
Scheme int4Scheme(const char *name, Granularity granularity, int axis,
                  int groupSize, ScaleType type) {
  Scheme scheme{name, *lookupFormat("int4"), ScaleSpec{}, Packing::Nibble};
  scheme.scale.granularity = granularity;
  scheme.scale.axis = axis;
  scheme.scale.groupSize = groupSize;
  scheme.scale.allowTail = true;
  scheme.scale.type = type;
  return scheme;
}

} // namespace

CommandResult runEval(Arguments args) {
  if (!args.empty() && args.front() == "--kv")
    return runEvalKv(args.subspan(1));
  if (!args.empty() && args.front() == "--matmul")
    return runEvalMatmul(args.subspan(1));
  std::string error;
  CommandResult done;
  auto parsed = parseCommandLineOrHelp("eval", args, kOptions, kUsage, &done);
  if (!parsed)
    return done;
  if (!parsed->operands.empty())
    return fail(fmt::format("'eval' takes no operands, got '{}'",
                            parsed->operands.front()));
  constexpr int64_t kMaxSize = 1 << 20;
  auto rows = integerOption(*parsed, "rows", 1024, 1, kMaxSize, &error);
  auto cols = rows ? integerOption(*parsed, "cols", 1024, 1, kMaxSize, &error)
                   : std::nullopt;
  auto weightRows =
      cols ? integerOption(*parsed, "weight-rows", 4096, 1, kMaxSize, &error)
           : std::nullopt;
  auto weightCols = weightRows ? integerOption(*parsed, "weight-cols", 4096, 1,
                                               kMaxSize, &error)
                               : std::nullopt;
  // The data sets use seed .. seed + 4: bounded so none of them wraps.
  auto seedValue =
      weightCols
          ? integerOption(*parsed, "seed", 1, 0,
                          std::numeric_limits<int64_t>::max() - 4, &error)
          : std::nullopt;
  if (!seedValue)
    return fail(error);
  uint64_t seed = uint64_t(*seedValue);
  // A multiplication overflow guard for the element counts below.
  if (*rows * *cols > (int64_t(1) << 28) ||
      *weightRows * *weightCols > (int64_t(1) << 28))
    return fail("the tensors would exceed 2^28 elements");

  std::vector<DataSet> dataSets;
  dataSets.push_back(makeDataSet("normal: N(0, 1)", *rows, *cols, seed,
                                 [](Generator &generator, int64_t, int64_t) {
                                   return generator.normal();
                                 }));
  dataSets.push_back(makeDataSet("heavy tails: Student-t, 3 dof", *rows, *cols,
                                 seed + 1,
                                 [](Generator &generator, int64_t, int64_t) {
                                   return generator.studentT3();
                                 }));
  dataSets.push_back(makeDataSet(
      "outlier channels: N(0, 1), columns 7 mod 128 x40", *rows, *cols,
      seed + 2, [](Generator &generator, int64_t, int64_t col) {
        return generator.normal() * (col % 128 == 7 ? 40.0 : 1.0);
      }));

  fmt::print("lowbit eval: reference backend, seed {}\n", seed);
  std::vector<Scheme> named = namedSchemes();
  for (const DataSet &data : dataSets)
    if (CommandResult tableError = printTable(data, named))
      return tableError;

  // Weight-like: each output row has its own log-normal scale.
  std::vector<double> rowScales;
  Generator scaleGenerator(seed + 3);
  for (int64_t row = 0; row < *weightRows; ++row)
    rowScales.push_back(0.02 * std::exp(0.5 * scaleGenerator.normal()));
  DataSet weights = makeDataSet(
      "4-bit granularity: weights, log-normal row scales", *weightRows,
      *weightCols, seed + 4, [&](Generator &generator, int64_t row, int64_t) {
        return rowScales[size_t(row)] * generator.normal();
      });
  std::vector<Scheme> fourBit = {
      int4Scheme("int4 per-tensor", Granularity::PerTensor, 1, 0,
                 ScaleType::F32),
      int4Scheme("int4 per-channel", Granularity::PerChannel, 0, 0,
                 ScaleType::F32),
      int4Scheme("int4 g128 f16", Granularity::Group, 1, 128, ScaleType::F16),
      int4Scheme("int4 g32 f16", Granularity::Group, 1, 32, ScaleType::F16),
      *lookupScheme("int4_g128"),
      *lookupScheme("mxfp4"),
      *lookupScheme("nvfp4"),
  };
  return printTable(weights, fourBit);
}

} // namespace lowbit::cli
