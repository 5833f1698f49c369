//===- DemoCommand.cpp - `lowbit demo`, the tour of what lowbit knows -----===//
//
// `lowbit demo` JIT-compiles every named scheme's quantize kernel for this
// CPU and, through lowbit::Jit (a fresh temporary cache, so the first get is
// a real compile), as PTX + cubin for sm_90a, runs the CPU kernel on a
// fixed-seed input and checks it bit for bit against the reference
// quantizer (format/Quantize.h), in one table; then one fused kernel per
// prologue against the reference and the unfused pair, with the bytes per
// element fused and unfused (FusedComparison.h). `lowbit demo --formats` is the
// format model's tour: the formats table, round trips per format, and the
// schemes.
//
// Deterministic except for the timings: the input is a fixed function of
// the seed, and a scheme the GPU tail cannot compile yet shows the tail's
// reason instead of failing the demo.
//
//===----------------------------------------------------------------------===//

#include "format/Codec.h"
#include "format/Format.h"
#include "format/Quantize.h"
#include "tools/lowbit/CommandLine.h"
#include "tools/lowbit/Commands.h"
#include "tools/lowbit/DemoMatmul.h"
#include "tools/lowbit/EmulatorBackend.h"
#include "tools/lowbit/FusedComparison.h"
#include "tools/lowbit/JitBackend.h"
#include "tools/lowbit/ValueFormatting.h"

#include "lowbit/Jit.h"
#include "runtime/report/FusionTraffic.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include <fmt/format.h>

namespace lowbit::cli {

namespace {

constexpr std::string_view kUsage =
    "usage: lowbit demo [--rows N] [--cols N] [--seed N]\n"
    "       lowbit demo --formats\n\n"
    "For every named scheme: JIT-compiles its quantize kernel for this CPU\n"
    "and, through lowbit::Jit with a fresh temporary cache, as PTX (+ cubin\n"
    "when nvJitLink is available) for sm_90a, runs the CPU kernel on a\n"
    "fixed-seed normal input (256 x 4096 f32 by default) and checks codes,\n"
    "scales, zero points and global scale bit for bit against the reference\n"
    "quantizer. The table shows bits per element (scales included), the SQNR\n"
    "of quantize -> dequantize, the compile times, the latency of a second\n"
    "get of the same kernel (a memory-cache hit), and the registers ptxas\n"
    "reports (ptxas -v when ptxas is in $CUDA_HOME/bin or\n"
    "/usr/local/cuda/bin, else nvJitLink's info log).\n\n"
    "Then one fused kernel per prologue (rmsnorm, add_rmsnorm, silu_mul,\n"
    "smooth, hadamard, map; bf16 input, docs/fusion.md): bit for bit against\n"
    "the reference (prologue, then quantize) and the unfused pair (prologue,\n"
    "then the ordinary quantize kernel), and the bytes per element each\n"
    "moves, fused against unfused.\n\n"
    "--formats prints the formats table, a few round trips per named format\n"
    "(value -> code -> decoded value, saturating, round to nearest even)\n"
    "and the named schemes instead.\n";

constexpr std::array<OptionSpec, 4> kOptions = {{
    {"formats", false},
    {"rows", true},
    {"cols", true},
    {"seed", true},
}};

/// The GPU the demo compiles for: H100/H200, the chip of the test machine.
constexpr std::string_view kDemoChip = "sm_90a";

struct RoundTripInput {
  std::string text; ///< as it would be typed to `lowbit encode`
  float value;
  std::string note;
};

RoundTripInput exactInput(double value, std::string note) {
  return {formatValue(float(value)), float(value), std::move(note)};
}

/// Inputs that show each rule at work: exact values, rounding, saturation,
/// the subnormal range and NaN. Each input is what `lowbit encode` would
/// read from the same decimal text.
std::vector<RoundTripInput> roundTripInputs(const Format &format) {
  std::vector<RoundTripInput> inputs = {
      exactInput(1.0, ""),
      exactInput(-2.5, ""),
      {"0.1", 0.1f, "not exact, rounds"},
      exactInput(format.maxValue(), "max"),
      // 2 * max overflows f32 for e8m0; the input then is inf, which
      // saturates the same way.
      exactInput(2 * format.maxValue(), "2 * max, saturates"),
  };
  if (format.hasSubnormals()) {
    inputs.push_back(exactInput(format.minSubnormal(), "min subnormal"));
    inputs.push_back(
        exactInput(format.minSubnormal() / 2, "half of it, tie to even"));
  } else if (format.isFloat()) {
    inputs.push_back(exactInput(format.minNormal(), "min normal"));
  }
  inputs.push_back({"nan", std::numeric_limits<float>::quiet_NaN(), ""});
  return inputs;
}

void printRoundTrips(const Format &format) {
  fmt::print("{} ({} bits)\n", format.name(), format.bits());
  std::vector<std::vector<std::string>> rows;
  size_t valueWidth = 0, codeWidth = 0, decodedWidth = 0;
  for (const RoundTripInput &input : roundTripInputs(format)) {
    uint32_t code = encode(format, input.value);
    rows.push_back({input.text, formatCode(format, code),
                    formatValue(format.decode(code)), input.note});
    valueWidth = std::max(valueWidth, rows.back()[0].size());
    codeWidth = std::max(codeWidth, rows.back()[1].size());
    decodedWidth = std::max(decodedWidth, rows.back()[2].size());
  }
  for (const auto &row : rows) {
    std::string line = fmt::format("  {:>{}} -> {:<{}} -> {}", row[0],
                                   valueWidth, row[1], codeWidth, row[2]);
    if (!row[3].empty())
      line +=
          fmt::format("{:{}}  ({})", "", decodedWidth - row[2].size(), row[3]);
    fmt::print("{}\n", line);
  }
}

/// One row of the JIT table.
struct SchemeResult {
  std::string scheme;
  std::string bitsPerElement = "-", sqnr = "-", bitExact = "no";
  std::string emulated = "-"; ///< the GPU kernels in the emulator: yes/no
  std::string cpuMillis = "-", ptxMillis = "-", cachedMillis = "-";
  std::string registers = "-";
  std::string notes;
};

std::string firstLine(const std::string &text) {
  return text.substr(0, text.find('\n'));
}

/// $CUDA_HOME/bin/ptxas, else /usr/local/cuda/bin/ptxas, else "".
std::string findPtxas() {
  std::vector<std::string> candidates;
  if (const char *cudaHome = std::getenv("CUDA_HOME"); cudaHome && *cudaHome)
    candidates.push_back(std::string(cudaHome) + "/bin/ptxas");
  candidates.push_back("/usr/local/cuda/bin/ptxas");
  for (const std::string &candidate : candidates)
    if (access(candidate.c_str(), X_OK) == 0)
      return candidate;
  return "";
}

/// Registers per kernel ("16" or "16/24" for two kernels) from
/// `ptxas -v`, or nullopt and ptxas's message when it fails.
std::optional<std::string> ptxasRegisters(const std::string &ptxas,
                                          const std::string &ptx,
                                          const std::string &name,
                                          std::string *error) {
  std::filesystem::path file =
      std::filesystem::temp_directory_path() /
      fmt::format("lowbit-demo-{}-{}.ptx", getpid(), name);
  {
    std::ofstream out(file, std::ios::binary);
    out << ptx;
    if (!out) {
      *error = "cannot write " + file.string();
      return std::nullopt;
    }
  }
  // Paths are ours (temp dir, scheme name) and the toolkit's; quoted all
  // the same.
  std::string command = fmt::format("'{}' -arch={} -v -o /dev/null '{}' 2>&1",
                                    ptxas, kDemoChip, file.string());
  std::string output;
  if (FILE *pipe = popen(command.c_str(), "r")) {
    std::array<char, 4096> buffer;
    size_t count;
    while ((count = fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
      output.append(buffer.data(), count);
    int status = pclose(pipe);
    std::error_code ignored;
    std::filesystem::remove(file, ignored);
    if (status != 0) {
      *error = "ptxas: " + firstLine(output);
      return std::nullopt;
    }
  } else {
    *error = "cannot run " + ptxas;
    return std::nullopt;
  }
  std::string registers;
  for (size_t at = output.find("Used "); at != std::string::npos;
       at = output.find("Used ", at + 5)) {
    size_t end = output.find(" registers", at);
    if (end == std::string::npos)
      continue;
    registers +=
        (registers.empty() ? "" : "/") + output.substr(at + 5, end - at - 5);
  }
  return registers.empty() ? std::string("?") : registers;
}

/// A normal(0, 1) tensor with a few outliers, as activations have.
std::vector<float> demoInput(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(size_t(rows * cols));
  for (float &value : values)
    value = normal(rng);
  for (size_t at = 0; at < values.size(); at += 997)
    values[at] *= 20.0f;
  return values;
}

bool sameTensor(const QuantizedTensor &a, const QuantizedTensor &b) {
  return a.codes == b.codes && a.scaleCodes == b.scaleCodes &&
         a.zeros == b.zeros &&
         floatBits(a.globalScale) == floatBits(b.globalScale);
}

/// Signal-to-quantization-noise ratio of `tensor` against `input`, in dB.
std::string sqnrText(const QuantizedTensor &tensor,
                     const std::vector<float> &input) {
  std::optional<double> db = sqnrDb(tensor, input);
  if (!db)
    return "-";
  return std::isinf(*db) ? "inf" : fmt::format("{:.2f}", *db);
}

double millisSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
      .count();
}

SchemeResult runScheme(const Scheme &named, const std::vector<float> &input,
                       int64_t rows, int64_t cols, const std::string &ptxas,
                       Jit &jit, const Target &gpu) {
  SchemeResult result;
  result.scheme = named.name;
  std::vector<std::string> notes;
  std::string error;

  // A static scheme gets the scales a dynamic run computes on the same
  // data, as a calibrated scale would be.
  StaticScales given;
  if (named.scale.mode == ScaleMode::Static) {
    Scheme dynamic = named;
    dynamic.scale.mode = ScaleMode::Dynamic;
    auto calibration = quantize(dynamic, input, rows, cols, &error);
    if (!calibration) {
      result.notes = "reference: " + error;
      return result;
    }
    given.scaleCodes = calibration->scaleCodes;
    if (named.scale.zeroPoint)
      given.zeros = calibration->zeros;
    if (named.scale.globalScale != GlobalScale::None)
      given.globalScale = calibration->globalScale;
  }
  std::optional<QuantizedTensor> expected =
      quantize(named, input, rows, cols, given, &error);
  if (!expected) {
    result.notes = "reference: " + error;
    return result;
  }
  result.bitsPerElement = fmt::format("{:.3f}", double(storageBits(*expected)) /
                                                    double(rows * cols));

  JitTiming timing;
  std::optional<QuantizedTensor> got = jitQuantize(
      named, ValueType::F32, input.data(), rows, cols, given, &error, &timing);
  if (got) {
    result.cpuMillis = fmt::format("{:.0f}", timing.compileMillis);
    result.bitExact = sameTensor(*got, *expected) ? "yes" : "no";
    result.sqnr = sqnrText(*got, input);
  } else {
    notes.push_back("cpu: " + firstLine(error));
    result.sqnr = sqnrText(*expected, input);
  }
  // The same GPU kernels, run on this CPU by the GPU emulator.
  std::optional<KernelRunner> emulator = gpuEmulatorRunner(kDemoChip, &error);
  std::optional<QuantizedTensor> emulated =
      emulator ? jitQuantize(named, ValueType::F32, input.data(), rows, cols,
                             given, &error, nullptr, *emulator)
               : std::nullopt;
  if (emulated)
    result.emulated = sameTensor(*emulated, *expected) ? "yes" : "no";
  else
    notes.push_back("gpu-emulator: " + firstLine(error));

  // Cold: the first get compiles (PTX, and a cubin through nvJitLink when
  // it is there) into the demo's empty cache. Cached: the same get again,
  // a memory hit; wall time of the call.
  KernelSpec spec = quantizeSpecFor(named, ValueType::F32, given);
  auto start = std::chrono::steady_clock::now();
  Expected<Kernel> kernel = jit.get(spec, gpu);
  double coldMillis = millisSince(start);
  if (!kernel) {
    notes.push_back(
        fmt::format("{}: {}", kDemoChip, firstLine(kernel.error().message)));
  } else {
    result.ptxMillis = fmt::format("{:.0f}", coldMillis);
    start = std::chrono::steady_clock::now();
    Expected<Kernel> again = jit.get(spec, gpu);
    double cachedMillis = millisSince(start);
    if (again)
      result.cachedMillis = fmt::format("{:.3f}", cachedMillis);
    else
      notes.push_back("cached get: " + firstLine(again.error().message));
    if (!ptxas.empty()) {
      auto registers =
          ptxasRegisters(ptxas, std::string(kernel->ptx()), named.name, &error);
      if (registers)
        result.registers = *registers;
      else
        notes.push_back(error);
    } else if (int registers = kernel->resources().registers; registers >= 0) {
      result.registers = std::to_string(registers);
    }
  }
  for (const std::string &note : notes)
    result.notes += (result.notes.empty() ? "" : "; ") + note;
  return result;
}

/// Prints `lines` (the header first) in aligned columns: the first left,
/// the numbers right, as a reader scans them, and the last (notes) as is
/// when not empty.
void printColumns(const std::vector<std::vector<std::string>> &lines) {
  std::vector<size_t> widths(lines.front().size(), 0);
  for (const auto &line : lines)
    for (size_t i = 0; i < line.size(); ++i)
      widths[i] = std::max(widths[i], line[i].size());
  for (const auto &line : lines) {
    std::string text = fmt::format("{:<{}}", line[0], widths[0]);
    for (size_t i = 1; i + 1 < line.size(); ++i)
      text += fmt::format("  {:>{}}", line[i], widths[i]);
    if (!line.back().empty())
      text += "  " + line.back();
    fmt::print("{}\n", text);
  }
}

void printTable(const std::vector<SchemeResult> &results) {
  std::vector<std::vector<std::string>> lines = {
      {"scheme", "bits/elem", "SQNR dB", "bit-exact", "GPU emu", "CPU ms",
       "PTX cold ms", "cached ms", "regs", "notes"}};
  for (const SchemeResult &r : results)
    lines.push_back({r.scheme, r.bitsPerElement, r.sqnr, r.bitExact, r.emulated,
                     r.cpuMillis, r.ptxMillis, r.cachedMillis, r.registers,
                     r.notes});
  printColumns(lines);
}

/// The scheme each of kShowcasePrologues is fused with in the demo, as
/// engines pair them; bf16 input, and the static sizes of the input.
constexpr std::string_view kFusedSchemes[] = {
    "nvfp4", "fp8_e4m3", "mxfp4", "int8_g64", "mxfp4", "fp8_e5m2",
};
static_assert(std::size(kFusedSchemes) == std::size(kShowcasePrologues));

/// One row of the fused table.
struct FusedResult {
  std::string spec;
  std::string bitExact = "no", unfusedSame = "no";
  std::string fusedBytes = "-", unfusedBytes = "-", ratio = "-";
  std::string emulated = "-"; ///< the GPU kernels in the emulator
  std::string cpuMillis = "-", gpu = "-";
  std::string notes;
};

FusedResult runFused(std::string_view text, int64_t rows, int64_t cols,
                     uint32_t seed, Jit &jit, const Target &gpu) {
  FusedResult result;
  result.spec = std::string(text);
  std::string error;
  std::optional<KernelSpec> spec = parseKernelSpec(
      fmt::format("{} rows={} cols={}", text, rows, cols), &error);
  if (!spec) {
    result.notes = error;
    return result;
  }
  report::FusionTraffic traffic = report::fusionTraffic(*spec, rows, cols);
  result.fusedBytes = fmt::format("{:.3f}", traffic.fusedPerElement);
  result.unfusedBytes = fmt::format("{:.3f}", traffic.unfusedPerElement);
  result.ratio = fmt::format("{:.2f}x", traffic.unfusedPerElement /
                                            traffic.fusedPerElement);
  std::vector<float> input =
      demoInput(rows, prologueInputWidth(spec->prologues, cols), seed);
  // The GPU kernels in the emulator too, where the chip's runner exists.
  std::optional<KernelRunner> emulator = gpuEmulatorRunner(kDemoChip, &error);
  std::optional<FusedComparison> compared = compareFused(
      *spec, input, rows, cols, seed, &error, emulator ? *emulator : nullptr);
  if (!compared) {
    result.notes = "cpu: " + firstLine(error);
    return result;
  }
  result.bitExact = compared->fusedBitExact ? "yes" : "no";
  result.unfusedSame = compared->unfusedIdentical ? "yes" : "no";
  result.cpuMillis = fmt::format("{:.0f}", compared->compileMillis);
  if (compared->emulatedBitExact)
    result.emulated = *compared->emulatedBitExact ? "yes" : "no";
  // The GPU compile: PTX once the GPU lowering of fused kernels exists,
  // else the compiler's reason.
  Expected<Kernel> kernel = jit.get(*spec, gpu);
  if (kernel) {
    result.gpu = "PTX";
    if (!compared->emulatedBitExact && !compared->emulatorError.empty())
      result.notes = "gpu-emulator: " + firstLine(compared->emulatorError);
  } else {
    // The compiler's reason, without its "compiling '<spec>' for <chip>: ".
    std::string reason = firstLine(kernel.error().message);
    std::string prefix = fmt::format(" for {}: ", kDemoChip);
    if (size_t at = reason.find(prefix); at != std::string::npos)
      reason = reason.substr(at + prefix.size());
    result.notes = fmt::format("{}: {}", kDemoChip, reason);
  }
  return result;
}

void printFusedTable(const std::vector<FusedResult> &results) {
  std::vector<std::vector<std::string>> lines = {
      {"fused spec", "bit-exact", "unfused same", "GPU emu", "B/elem fused",
       "B/elem unfused", "saving", "CPU ms", std::string(kDemoChip), "notes"}};
  for (const FusedResult &r : results)
    lines.push_back({r.spec, r.bitExact, r.unfusedSame, r.emulated,
                     r.fusedBytes, r.unfusedBytes, r.ratio, r.cpuMillis, r.gpu,
                     r.notes});
  printColumns(lines);
}

/// The fused rows: each fused kernel against the reference (prologue, then
/// quantize) and against the unfused pair, and the bytes it saves.
void runFusedSection(int64_t rows, int64_t cols, uint32_t seed, Jit &jit,
                     const Target &gpu) {
  fmt::print("\nFused kernels (prologue | quantize, docs/fusion.md), bf16 "
             "input {}x{}:\n\n",
             rows, cols);
  std::vector<FusedResult> results;
  for (size_t i = 0; i < std::size(kShowcasePrologues); ++i)
    results.push_back(
        runFused(fmt::format("{} | quantize {} from=bf16",
                             kShowcasePrologues[i], kFusedSchemes[i]),
                 rows, cols, seed, jit, gpu));
  printFusedTable(results);
  size_t exact = std::count_if(results.begin(), results.end(),
                               [](auto &r) { return r.bitExact == "yes"; });
  size_t same = std::count_if(results.begin(), results.end(),
                              [](auto &r) { return r.unfusedSame == "yes"; });
  fmt::print("\n{}/{} fused kernels bit-exact against the reference "
             "(prologue, then quantize); {}/{} unfused pairs give the same "
             "codes\n",
             exact, results.size(), same, results.size());
  fmt::print("(unfused: the prologue writes its f32 result, the ordinary "
             "quantize kernel reads it;\nB/elem: bytes moved per quantized "
             "element, the fused kernel against the prologue's\nkernel "
             "writing its result in bf16 and the quantize reading it back "
             "(docs/fusion.md,\n\"Bytes per element\"); saving: unfused / "
             "fused)\n");
}

CommandResult runFormatsTour() {
  fmt::print("lowbit demo: the format model\n\n== Formats ==\n");
  printFormatsTable();
  fmt::print("\n== Round trips: f32 value -> code -> decoded value "
             "(saturating, round to nearest even) ==\n");
  for (const Format &format : namedFormats())
    printRoundTrips(format);
  fmt::print("\n== Schemes ==\n");
  printSchemesList();
  return std::nullopt;
}

} // namespace

CommandResult runDemo(Arguments args) {
  std::string error;
  CommandResult done;
  auto parsed = parseCommandLineOrHelp("demo", args, kOptions, kUsage, &done);
  if (!parsed)
    return done;
  if (!parsed->operands.empty())
    return fail(fmt::format("'demo' takes no arguments, got '{}'",
                            parsed->operands.front()));
  if (parsed->flag("formats"))
    return runFormatsTour();
  auto rows = integerOption(*parsed, "rows", 256, 1, 1 << 16, &error);
  auto cols = rows ? integerOption(*parsed, "cols", 4096, 1, 1 << 16, &error)
                   : std::nullopt;
  // std::mt19937 takes 32 bits; larger seeds are refused, not truncated.
  auto seed = cols ? integerOption(*parsed, "seed", 1, 1, UINT32_MAX, &error)
                   : std::nullopt;
  if (!seed)
    return fail(error);

  std::string ptxas = findPtxas();
  std::optional<Target> gpu = parseTarget(kDemoChip, &error);
  if (!gpu)
    return fail(error);
  // A fresh cache directory, so that the first get of each kernel is a
  // real compile; removed at the end.
  std::string cacheTemplate =
      (std::filesystem::temp_directory_path() / "lowbit-demo-cache-XXXXXX")
          .string();
  if (!mkdtemp(cacheTemplate.data()))
    return fail("cannot create a temporary cache directory under " +
                std::filesystem::temp_directory_path().string());
  std::string cacheDirectory = cacheTemplate;
  struct RemoveDirectory {
    std::string path;
    ~RemoveDirectory() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  } removeCache{cacheDirectory};
  JitOptions jitOptions;
  jitOptions.cacheDirectory = cacheDirectory;
  jitOptions.cacheMode = runtime::CacheMode::ReadWrite;
  jitOptions.target = *gpu;
  Expected<std::unique_ptr<Jit>> jit = Jit::create(jitOptions);
  if (!jit)
    return fail("lowbit::Jit: " + jit.error().message);
  std::vector<float> input = demoInput(*rows, *cols, uint32_t(*seed));
  fmt::print("lowbit demo: every named scheme JIT-compiled for this CPU and "
             "for {} (PTX),\nthe CPU kernel checked bit for bit against the "
             "reference quantizer\n(input {}x{} f32, normal(0, 1) with "
             "outliers, seed {}; registers from {})\n\n",
             kDemoChip, *rows, *cols, *seed,
             ptxas.empty() ? "nvJitLink's info log (ptxas: not found)"
                           : ptxas + " -v");
  std::vector<SchemeResult> results;
  for (const Scheme &scheme : namedSchemes())
    results.push_back(
        runScheme(scheme, input, *rows, *cols, ptxas, **jit, *gpu));
  printTable(results);
  size_t exact = std::count_if(results.begin(), results.end(),
                               [](auto &r) { return r.bitExact == "yes"; });
  size_t compiled = std::count_if(results.begin(), results.end(),
                                  [](auto &r) { return r.ptxMillis != "-"; });
  fmt::print("\n{}/{} bit-exact against the reference quantizer; {}/{} "
             "compiled to PTX for {}\n",
             exact, results.size(), compiled, results.size(), kDemoChip);
  fmt::print("(bits/elem counts scales, zero points and the global scale; "
             "GPU emu: the {} kernels\nrun on this CPU by the GPU emulator "
             "(docs/emulator.md) equal the reference; "
             "CPU ms: first compile of\nthe kernel in this process; PTX cold "
             "ms: first lowbit::Jit get, PTX + cubin (nvJitLink)\ninto an "
             "empty cache; cached ms: a second get of the same kernel, a "
             "memory hit;\nregs: per kernel of the module, a/b/c when the "
             "scheme needs several launches,\ne.g. amax then quantize)\n",
             kDemoChip);
  runFusedSection(*rows, *cols, uint32_t(*seed), **jit, *gpu);
  runMatmulDemoSection(uint32_t(*seed), kDemoChip);
  return std::nullopt;
}

} // namespace lowbit::cli
