//===- EvalMatmulCommand.cpp - `lowbit eval --matmul` ---------------------===//
//
// The SQNR of Y = X . dequant(W)^T for every weight scheme of
// docs/matmul.md, on a seeded weight-like matrix (row magnitudes that
// differ, outlier input channels) and normal activations in bf16: Y from
// the ordered reference (bit for bit what the kernels write) against the
// float64 matmul with the unquantized weights. The reference only, so the
// table is the same on every machine and needs no compiler.
//
//===----------------------------------------------------------------------===//

#include "format/SchemeText.h"
#include "matmul/MatmulOrder.h"
#include "matmul/QuantizedOrder.h"
#include "matmul/WeightSchemes.h"
#include "tools/lowbit/CommandLine.h"
#include "tools/lowbit/Commands.h"
#include "tools/lowbit/MatmulData.h"

#include <array>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace lowbit::cli {

namespace {

constexpr std::string_view kUsage =
    "usage: lowbit eval --matmul [--m M] [--n N] [--k K] [--seed S]\n\n"
    "The SQNR of Y = X . dequant(W)^T (Y from the ordered reference of\n"
    "docs/matmul.md, X normal in bf16) against the float64 matmul with the\n"
    "unquantized weights, for each weight scheme, on a weight-like [N, K]\n"
    "matrix with outlier input channels. Defaults: M 16, N 256, K 1024.\n"
    "A second table quantizes X too (W8A8, W4A4: each pair of\n"
    "docs/matmul.md, \"Quantized activations\") on activations with\n"
    "outlier channels, without and with a hadamard(128) prologue (W rotated\n"
    "the same way, so the product is unchanged), against the float64\n"
    "matmul of the bf16 X and the unquantized W.\n";

constexpr std::array<OptionSpec, 4> kOptions = {{
    {"m", true},
    {"n", true},
    {"k", true},
    {"seed", true},
}};

double sqnrDb(double signal, double noise) {
  return noise > 0 ? 10 * std::log10(signal / noise)
                   : std::numeric_limits<double>::infinity();
}

/// The SQNR (dB) of Y's f32 bytes against `exact`.
double outputSqnr(std::span<const uint8_t> y, std::span<const double> exact) {
  std::vector<float> values = matmul::widenActivations(ValueType::F32, y);
  double signal = 0, noise = 0;
  for (size_t index = 0; index < exact.size(); ++index) {
    signal += exact[index] * exact[index];
    noise += (values[index] - exact[index]) * (values[index] - exact[index]);
  }
  return sqnrDb(signal, noise);
}

/// The W8A8/W4A4 table: every pair without and with hadamard(128).
CommandResult evalQuantizedActivations(const std::vector<float> &weights,
                                       int64_t m, int64_t n, int64_t k,
                                       uint64_t seed) {
  std::string error;
  std::vector<uint8_t> xBytes =
      outlierActivations(ValueType::BF16, m, k, seed + 2);
  std::vector<float> x = matmul::widenActivations(ValueType::BF16, xBytes);
  std::vector<double> exact(size_t(m * n));
  for (int64_t row = 0; row < m; ++row)
    for (int64_t col = 0; col < n; ++col)
      for (int64_t index = 0; index < k; ++index)
        exact[size_t(row * n + col)] +=
            double(x[size_t(row * k + index)]) *
            double(weights[size_t(col * k + index)]);
  Prologue hadamard = *parsePrologue("hadamard(128)");
  // W rotated as X will be: (X H)(W H)^T = X W^T.
  std::optional<std::vector<float>> rotated =
      k % 128 == 0 ? applyPrologue(hadamard, weights, n, k, {}, std::nullopt,
                                   nullptr, &error)
                   : std::nullopt;
  fmt::print("\nquantized activations: X bf16 [{}x{}] with outlier channels "
             "(every 37th 20x)\n",
             m, k);
  fmt::print("  {:<30} {:>14} {:>20}\n", "weights x activations", "SQNR(Y) dB",
             "hadamard(128) dB");
  for (const matmul::ActivationPairEntry &pair :
       matmul::activationPairEntries()) {
    std::string row = fmt::format("  {:<30}", pair.label);
    for (bool rotate : {false, true}) {
      if (rotate && !rotated) {
        row += fmt::format(" {:>20}", "- (K % 128)");
        continue;
      }
      std::optional<matmul::MatmulSpec> spec = matmul::parseMatmulSpec(
          fmt::format("{}matmul w={} a={} from=bf16 to=f32 n={} k={}",
                      rotate ? "hadamard(128) | " : "", pair.weights,
                      pair.activations, n, k),
          &error);
      std::optional<QuantizedTensor> w =
          spec ? quantize(spec->scheme, rotate ? *rotated : weights, n, k,
                          &error)
               : std::nullopt;
      std::optional<std::vector<uint8_t>> y =
          w ? matmul::orderedQuantizedMatmul(*spec, *w, xBytes, m, {}, &error)
            : std::nullopt;
      if (!y)
        return fail(fmt::format("{}: {}", pair.label, error));
      double sqnr = outputSqnr(*y, exact);
      row += rotate ? fmt::format(" {:>20.2f}", sqnr)
                    : fmt::format(" {:>14.2f}", sqnr);
    }
    fmt::print("{}\n", row);
  }
  return std::nullopt;
}

} // namespace

CommandResult runEvalMatmul(Arguments args) {
  std::string error;
  CommandResult done;
  auto parsed =
      parseCommandLineOrHelp("eval --matmul", args, kOptions, kUsage, &done);
  if (!parsed)
    return done;
  if (!parsed->operands.empty())
    return fail(fmt::format("'eval --matmul' takes no operands, got '{}'",
                            parsed->operands.front()));
  constexpr int64_t kMaxSize = 1 << 14;
  auto m = integerOption(*parsed, "m", 16, 1, kMaxSize, &error);
  auto n = m ? integerOption(*parsed, "n", 256, 1, kMaxSize, &error)
             : std::nullopt;
  auto k = n ? integerOption(*parsed, "k", 1024, 1, kMaxSize, &error)
             : std::nullopt;
  auto seedValue = k ? integerOption(*parsed, "seed", 1, 0,
                                     std::numeric_limits<int64_t>::max() - 1,
                                     &error)
                     : std::nullopt;
  if (!seedValue)
    return fail(error);
  if (*m * *n * *k > (int64_t(1) << 32))
    return fail("M x N x K would exceed 2^32 multiply-adds per scheme");
  uint64_t seed = uint64_t(*seedValue);
  const ValueType input = ValueType::BF16;
  std::vector<float> weights = weightLikeMatrix(*n, *k, seed);
  std::vector<uint8_t> xBytes = normalActivations(input, *m, *k, seed + 1);
  std::vector<float> x = matmul::widenActivations(input, xBytes);

  // Y with the unquantized weights, in float64.
  std::vector<double> exact(size_t(*m * *n));
  double signal = 0;
  for (int64_t row = 0; row < *m; ++row)
    for (int64_t col = 0; col < *n; ++col) {
      double sum = 0;
      for (int64_t index = 0; index < *k; ++index)
        sum += double(x[size_t(row * *k + index)]) *
               double(weights[size_t(col * *k + index)]);
      exact[size_t(row * *n + col)] = sum;
      signal += sum * sum;
    }

  fmt::print("lowbit eval --matmul: reference, seed {}, X bf16 [{}x{}], W "
             "[{}x{}] weight-like with outlier channels\n",
             seed, *m, *k, *n, *k);
  fmt::print("  {:<22} {:>11} {:>12} {:>12}\n", "weights", "bits/weight",
             "SQNR(W) dB", "SQNR(Y) dB");
  for (const matmul::WeightSchemeEntry &entry :
       matmul::weightSchemeEntries()) {
    std::optional<Scheme> scheme = parseSchemeText(entry.text, &error);
    std::optional<QuantizedTensor> tensor =
        scheme ? quantize(*scheme, weights, *n, *k, &error) : std::nullopt;
    std::optional<std::vector<float>> dequantized =
        tensor ? dequantize(*tensor, &error) : std::nullopt;
    std::optional<std::vector<uint8_t>> y =
        dequantized ? matmul::orderedMatmul(*tensor, input, xBytes, *m, {},
                                            ValueType::F32, &error)
                    : std::nullopt;
    if (!y)
      return fail(fmt::format("{}: {}", entry.label, error));
    double weightSignal = 0, weightNoise = 0, noise = 0;
    for (size_t index = 0; index < weights.size(); ++index) {
      double difference = double(weights[index]) - (*dequantized)[index];
      weightSignal += double(weights[index]) * weights[index];
      weightNoise += difference * difference;
    }
    std::vector<float> values = matmul::widenActivations(ValueType::F32, *y);
    for (size_t index = 0; index < exact.size(); ++index) {
      double difference = values[index] - exact[index];
      noise += difference * difference;
    }
    fmt::print("  {:<22} {:>11.3f} {:>12.2f} {:>12.2f}\n", entry.label,
               double(storageBits(*tensor)) / double(*n * *k),
               sqnrDb(weightSignal, weightNoise), sqnrDb(signal, noise));
  }
  return evalQuantizedActivations(weights, *m, *n, *k, seed);
}

} // namespace lowbit::cli
