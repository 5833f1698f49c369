//===- DemoMatmul.cpp - `lowbit demo`'s matmul rows -----------------------===//

#include "tools/lowbit/DemoMatmul.h"

#include "format/SchemeText.h"
#include "matmul/MatmulOrder.h"
#include "matmul/QuantizedOrder.h"
#include "matmul/WeightSchemes.h"
#include "tools/lowbit/MatmulBackends.h"
#include "tools/lowbit/MatmulData.h"

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace lowbit::cli {

namespace {

constexpr int64_t kRows = 16, kCols = 256, kDepth = 1024;

std::string firstLineOf(const std::string &text) {
  return text.substr(0, text.find('\n'));
}

/// The W8A8 and W4A4 rows: X quantized in the same kernel (docs/matmul.md,
/// "Quantized activations"), the CPU kernel against the ordered reference.
void runQuantizedActivationRows(const std::vector<float> &weights,
                                const std::vector<uint8_t> &x,
                                std::string_view chip) {
  fmt::print("\nQuantized activations (W8A8, W4A4): X quantized in the same "
             "call, the CPU kernel\nand the {} GPU kernels in the emulator "
             "against the ordered reference:\n\n",
             chip);
  fmt::print("{:<6}  {:<30}  {:>10}  {:>9}  {:>7}  {}\n", "kind",
             "weights x activations", "B/weight", "bit-exact", "GPU emu",
             "notes");
  size_t exact = 0, count = 0, emulatedExact = 0;
  for (const matmul::ActivationPairEntry &pair :
       matmul::activationPairEntries()) {
    std::string label = pair.label;
    const char *kind = label == "fp8 per token x per channel" ? "W8A8"
                       : label == "nvfp4 x nvfp4"             ? "W4A4"
                                                              : nullptr;
    if (!kind)
      continue;
    ++count;
    std::string error, notes, bitExact = "-";
    std::optional<matmul::MatmulSpec> spec =
        matmul::parseMatmulSpec(fmt::format("matmul w={} a={} from=bf16",
                                            pair.weights, pair.activations),
                                &error);
    std::optional<QuantizedTensor> tensor =
        spec ? quantize(spec->scheme, weights, kCols, kDepth, &error)
             : std::nullopt;
    std::optional<std::vector<uint8_t>> expected =
        tensor ? matmul::orderedQuantizedMatmul(*spec, *tensor, x, kRows, {},
                                                &error)
               : std::nullopt;
    MatmulProblem problem;
    if (spec)
      problem.spec = *spec;
    problem.weights = tensor ? &*tensor : nullptr;
    problem.x = x;
    problem.m = kRows;
    std::optional<std::vector<uint8_t>> cpu =
        expected ? runMatmulOnCpu(problem, &error) : std::nullopt;
    if (cpu) {
      bitExact = *cpu == *expected ? "yes" : "no";
      exact += *cpu == *expected;
    } else {
      notes = firstLineOf(error);
    }
    std::string emulated = "-";
    if (expected) {
      if (std::optional<std::vector<uint8_t>> gpu =
              runMatmulInEmulator(problem, chip, &error)) {
        emulated = *gpu == *expected ? "yes" : "no";
        emulatedExact += *gpu == *expected;
      } else if (notes.empty()) {
        notes = "gpu: " + firstLineOf(error);
      }
    }
    double bytesPerWeight =
        tensor ? double(storageBits(*tensor)) / 8.0 / double(kCols * kDepth)
               : 0.0;
    fmt::print("{:<6}  {:<30}  {:>10.4f}  {:>9}  {:>7}  {}\n", kind, label,
               bytesPerWeight, bitExact, emulated, notes);
  }
  fmt::print("\n{}/{} quantized-activation CPU kernels and {}/{} emulated {} "
             "kernels bit-exact\nagainst the ordered reference\n",
             exact, count, emulatedExact, count, chip);
}

} // namespace

void runMatmulDemoSection(uint32_t seed, std::string_view chip) {
  fmt::print("\nQuantized-weight matmul (docs/matmul.md): Y = X . "
             "dequant(W)^T, X bf16 [{}x{}],\nW [{}x{}] weight-like, the CPU "
             "kernel against the ordered reference:\n\n",
             kRows, kDepth, kCols, kDepth);
  fmt::print("{:<22}  {:>10}  {:>7}  {:>9}  {:>7}  {}\n", "weights", "B/weight",
             "vs bf16", "bit-exact", "GPU emu", "notes");
  std::vector<float> weights = weightLikeMatrix(kCols, kDepth, seed);
  const ValueType input = ValueType::BF16;
  std::vector<uint8_t> x = normalActivations(input, kRows, kDepth, seed + 1);
  size_t exact = 0, count = 0;
  std::string emulatorError; // the first; the others are the same refusal
  for (const matmul::WeightSchemeEntry &entry : matmul::weightSchemeEntries()) {
    ++count;
    std::string error;
    std::optional<Scheme> scheme = parseSchemeText(entry.text, &error);
    std::optional<QuantizedTensor> tensor =
        scheme ? quantize(*scheme, weights, kCols, kDepth, &error)
               : std::nullopt;
    if (!tensor) {
      fmt::print("{:<22}  {}\n", entry.label, firstLineOf(error));
      continue;
    }
    double bytesPerWeight =
        double(storageBits(*tensor)) / 8.0 / double(kCols * kDepth);
    MatmulProblem problem;
    problem.spec.scheme = *scheme;
    problem.spec.scheme.scale.mode = ScaleMode::Dynamic;
    problem.spec.input = input;
    problem.spec.output = input;
    problem.weights = &*tensor;
    problem.x = x;
    problem.m = kRows;
    std::optional<std::vector<uint8_t>> expected =
        matmul::orderedMatmul(*tensor, input, x, kRows, {}, input, &error);
    std::string notes;
    std::optional<std::vector<uint8_t>> cpu =
        expected ? runMatmulOnCpu(problem, &error) : std::nullopt;
    std::string bitExact = "-";
    if (cpu) {
      bitExact = *cpu == *expected ? "yes" : "no";
      exact += *cpu == *expected;
    } else {
      notes = "cpu: " + firstLineOf(error);
    }
    std::string emulated = "-";
    if (std::optional<std::vector<uint8_t>> gpu =
            runMatmulInEmulator(problem, chip, &error))
      emulated = expected && *gpu == *expected ? "yes" : "no";
    else if (emulatorError.empty())
      emulatorError = firstLineOf(error);
    fmt::print("{:<22}  {:>10.4f}  {:>6.2f}x  {:>9}  {:>7}  {}\n", entry.label,
               bytesPerWeight, 2.0 / bytesPerWeight, bitExact, emulated, notes);
  }
  if (!emulatorError.empty())
    fmt::print("\nGPU emu -: {}\n", emulatorError);
  fmt::print("\n{}/{} matmul CPU kernels bit-exact against the ordered "
             "reference\n(B/weight counts codes, scales, zero points and the "
             "global scale; vs bf16: 2 bytes / B/weight)\n",
             exact, count);
  runQuantizedActivationRows(weights, x, chip);
}

} // namespace lowbit::cli
