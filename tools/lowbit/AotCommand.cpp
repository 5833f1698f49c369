//===- AotCommand.cpp - lowbit aot: PTX/cubin bundles for the runtime -----===//
//
// Compiles kernel specs ahead of time into a bundle directory (PTX, cubin,
// manifest.json, optional .npy data) that the MLIR-free runtime and
// tools/gpu-runner load. Each spec goes through the JIT's GPU build
// (jit::buildGpuKernel), whose launch plan (the grid computed from the
// memref descriptors' sizes, as launch-module expressions) goes into the
// manifest as it is: the runner evaluates it with the JIT's evaluator
// (runtime/aot/LaunchProgram.h) instead of a frozen tensor size.
//
// With --with-data the expected outputs are computed here by the CPU JIT
// backend and must equal the reference quantizer (format/Quantize.h) bit
// for bit before anything is written, so a GPU mismatch later can only be
// the GPU's.
//
//===----------------------------------------------------------------------===//

#include "format/Quantize.h"
#include "runtime/aot/Bundle.h"
#include "runtime/cache/Hash.h"
#include "runtime/cache/KernelCache.h"
#include "runtime/cache/KernelKey.h"
#include "runtime/compiler/Compiler.h"
#include "runtime/compiler/GpuCompile.h"
#include "runtime/core/AtomicFile.h"
#include "runtime/core/Npy.h"
#include "runtime/driver/NvJitLink.h"
#include "runtime/jit/LaunchPlan.h"
#include "runtime/jit/WorkspaceWords.h"
#include "runtime/spec/KernelSpec.h"
#include "target/Target.h"
#include "tools/lowbit/AotKvEntries.h"
#include "tools/lowbit/AotSupport.h"
#include "tools/lowbit/Commands.h"
#include "tools/lowbit/JitBackend.h"
#include "tools/lowbit/ParamRoles.h"

#include <charconv>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>

#include <fmt/format.h>

namespace lowbit::cli {

namespace {

using aot::BundleData;
using aot::BundleEntry;
using aot::Launch;
using aot::Shape;
using aot::SizeInstance;

constexpr std::string_view kUsage =
    "usage: lowbit aot (SPEC... | --all) [--target CHIP] --out DIR\n"
    "                  [--with-data ROWSxCOLS] [--bench ROWSxCOLS] "
    "[--no-cubin]\n"
    "                  [--kv-data BxN] [--attention-data BxN] "
    "[--kv-bench BxN]\n"
    "  SPEC       a kernel spec in quotes, e.g. 'quantize mxfp4', or a KV or\n"
    "             decode-attention spec as lowbit report takes it:\n"
    "             'kv_append kv_int8_g64 heads=8 head_dim=128',\n"
    "             'kv_attend kv_fp8_e4m3 scale=per_head q_heads=32 kv_heads=8 "
    "head_dim=128'\n"
    "  --all      every named scheme, quantize and dequantize, f32 (and\n"
    "             the SPECs given with it)\n"
    "  --target   NVIDIA target (default sm_90a)\n"
    "  --with-data  also write inputs and expected outputs (.npy) computed\n"
    "             by the CPU JIT, checked equal to the reference quantizer\n"
    "  --bench    the size the runner times (default 8192x8192)\n"
    "  --no-cubin PTX only (the driver JIT-compiles it at load)\n"
    "  --kv-data  KV specs' data: B sequences of N new tokens (default "
    "3x40)\n"
    "  --attention-data  attention data: B ragged sequences, the longest N\n"
    "             tokens (default 3x600)\n"
    "  --kv-bench the size the runner times KV and attention kernels at\n"
    "             (default 1x32768)\n";

/// The largest --with-data tensor: 2^24 f32 elements (64 MiB of input),
/// since the data is written here, checked against the reference and
/// shipped to the GPU machine with the bundle.
constexpr int64_t kMaxDataElements = int64_t(1) << 24;
/// The largest --kv-data / --attention-data: 2^16 sequence tokens in all
/// (the data is written here and shipped with the bundle).
constexpr int64_t kMaxKvDataTokens = int64_t(1) << 16;

} // namespace

bool parseRowsByCols(std::string_view text, int64_t maxElements, int64_t &rows,
                     int64_t &cols, std::string &error) {
  size_t x = text.find('x');
  auto number = [](std::string_view part, int64_t &value) {
    auto [end, ec] =
        std::from_chars(part.data(), part.data() + part.size(), value);
    return ec == std::errc() && end == part.data() + part.size() && value > 0;
  };
  if (x == std::string_view::npos || !number(text.substr(0, x), rows) ||
      !number(text.substr(x + 1), cols)) {
    error = fmt::format("expected ROWSxCOLS of positive 64-bit integers, got "
                        "'{}'",
                        text);
    return false;
  }
  int64_t elements = 0;
  if (__builtin_mul_overflow(rows, cols, &elements) || elements > maxElements) {
    error = fmt::format("{} is more than {} elements", text, maxElements);
    return false;
  }
  return true;
}

namespace {

// --- data -------------------------------------------------------------------

/// Test input: values over 9 binades per row, signs mixed, an exact zero
/// every 97 elements, from a fixed seed (the files, not the generator, are
/// the reference).
std::vector<float> makeInput(int64_t rows, int64_t cols) {
  std::mt19937 generator(20240601u);
  std::vector<float> values(size_t(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      uint32_t bits = generator();
      float unit = float(bits >> 8) * (1.0f / 16777216.0f); // [0, 1)
      float magnitude = std::ldexp(unit, int(r % 9) - 4);
      size_t i = size_t(r * cols + c);
      values[i] = (i % 97 == 0) ? 0.0f : ((bits & 1) ? -magnitude : magnitude);
    }
  return values;
}

bool sameTensor(const QuantizedTensor &a, const QuantizedTensor &b) {
  return a.codes == b.codes && a.scaleCodes == b.scaleCodes &&
         a.zeros == b.zeros &&
         std::memcmp(&a.globalScale, &b.globalScale, 4) == 0;
}

/// The ABI bytes of one parameter (docs/kernel-abi.md) from a quantized
/// tensor, or from the f32 values for input/output.
std::vector<uint8_t> parameterBytes(const compiler::KernelParam &param,
                                    const Shape2D &shape,
                                    const QuantizedTensor &tensor,
                                    const std::vector<float> &values) {
  using Role = compiler::KernelParam::Role;
  size_t count = size_t(shape.rows * shape.cols);
  std::vector<uint8_t> bytes(count * aot::elementBytes(param.elementType), 0);
  auto copy = [&](const void *source, size_t size) {
    std::memcpy(bytes.data(), source, std::min(size, bytes.size()));
  };
  switch (param.role) {
  case Role::Input:
  case Role::Output:
    copy(values.data(), values.size() * 4);
    break;
  case Role::Codes:
    copy(tensor.codes.data(), tensor.codes.size());
    break;
  case Role::Zeros:
    copy(tensor.zeros.data(), tensor.zeros.size());
    break;
  case Role::Global:
    copy(&tensor.globalScale, 4);
    break;
  case Role::Scales: {
    size_t width = size_t(scaleStorageBits(tensor.scheme.scale.type) / 8);
    for (size_t i = 0; i < std::min(count, tensor.scaleCodes.size()); ++i)
      std::memcpy(bytes.data() + i * width, &tensor.scaleCodes[i], width);
    break;
  }
  case Role::Workspace:
    // Never in kernelParams' list: the runtime owns the workspace.
    break;
  }
  return bytes;
}

} // namespace

std::string_view paramRoleName(compiler::KernelParam::Role role) {
  using Role = compiler::KernelParam::Role;
  switch (role) {
  case Role::Input:
    return "input";
  case Role::Scales:
    return "scales";
  case Role::Zeros:
    return "zeros";
  case Role::Global:
    return "global";
  case Role::Codes:
    return "codes";
  case Role::Output:
    return "output";
  case Role::Workspace:
    return "workspace";
  }
  return "?";
}

namespace {

SizeInstance sizeInstance(const KernelSpec &spec, int64_t rows, int64_t cols) {
  SizeInstance size;
  size.rows = rows;
  size.cols = cols;
  for (const Shape2D &shape : compiler::bufferShapes(spec, rows, cols))
    size.shapes.push_back({shape.rows, shape.cols});
  return size;
}

/// Inputs and expected outputs for `spec` at rows x cols; files are staged
/// under `directory` with `stem`. The CPU JIT and the reference quantizer
/// must agree bit for bit, or nothing is written.
std::optional<BundleData> makeData(const KernelSpec &spec,
                                   const std::string &directory,
                                   const std::string &stem, int64_t rows,
                                   int64_t cols, runtime::StagedFiles &staged,
                                   std::string &error) {
  if (spec.valueType != ValueType::F32) {
    error = "--with-data covers f32 kernels only";
    return std::nullopt;
  }
  if (!validateSchemeForShape(spec.scheme, rows, cols, &error))
    return std::nullopt;
  std::vector<float> input = makeInput(rows, cols);

  // Static scales (and a given global scale) come from the dynamic
  // reference quantizer of the same data, so they are valid ones.
  StaticScales given;
  if (spec.isStatic() || spec.globalSource == GlobalSource::Given) {
    Scheme dynamic = spec.scheme;
    dynamic.scale.mode = ScaleMode::Dynamic;
    std::optional<QuantizedTensor> source =
        quantize(dynamic, input, rows, cols, &error);
    if (!source)
      return std::nullopt;
    if (spec.isStatic()) {
      given.scaleCodes = source->scaleCodes;
      if (spec.scheme.scale.zeroPoint)
        given.zeros = source->zeros;
    }
    if (spec.hasGlobal())
      given.globalScale = source->globalScale;
  }
  std::optional<QuantizedTensor> reference =
      quantize(spec.scheme, input, rows, cols, given, &error);
  if (!reference)
    return std::nullopt;
  std::vector<float> output;
  if (spec.op == KernelOp::Quantize) {
    std::optional<QuantizedTensor> jit = jitQuantize(
        spec.scheme, spec.valueType, input.data(), rows, cols, given, &error);
    if (!jit)
      return std::nullopt;
    if (!sameTensor(*jit, *reference)) {
      error = "the CPU JIT and the reference quantizer disagree";
      return std::nullopt;
    }
  } else {
    std::optional<std::vector<float>> expected = dequantize(*reference, &error);
    std::optional<std::vector<uint8_t>> jit =
        jitDequantize(*reference, spec.valueType, &error);
    if (!expected || !jit)
      return std::nullopt;
    if (jit->size() != expected->size() * 4 ||
        std::memcmp(jit->data(), expected->data(), jit->size()) != 0) {
      error = "the CPU JIT and the reference dequantizer disagree";
      return std::nullopt;
    }
    output = std::move(*expected);
  }

  std::vector<compiler::KernelParam> params = compiler::kernelParams(spec);
  std::vector<Shape2D> shapes = compiler::bufferShapes(spec, rows, cols);
  BundleData data;
  data.size = sizeInstance(spec, rows, cols);
  for (size_t i = 0; i < params.size(); ++i) {
    const auto &param = params[i];
    std::string file =
        fmt::format("{}.{}.{}.{}.npy", stem, i, paramRoleName(param.role),
                    param.isResult ? "expected" : "in");
    std::vector<uint8_t> bytes = parameterBytes(
        param, shapes[i], *reference,
        param.role == compiler::KernelParam::Role::Output ? output : input);
    if (!stageNpy(directory, file, npyTypeFor(param.elementType),
                  {shapes[i].rows, shapes[i].cols}, std::move(bytes), staged,
                  error))
      return std::nullopt;
    data.files.push_back(file);
  }
  return data;
}

// --- one spec ---------------------------------------------------------------

/// The entry's file stem; keyed (a `-<key8>` suffix) for a custom scheme
/// or a static-size spec.
std::string stemFor(const KernelSpec &spec, bool &keyed) {
  std::string stem = fmt::format(
      "{}-{}-{}", spec.op == KernelOp::Quantize ? "quantize" : "dequantize",
      spec.scheme.name.empty() ? "custom" : spec.scheme.name,
      valueTypeName(spec.valueType));
  if (spec.isStatic())
    stem += "-static";
  if (spec.globalSource == GlobalSource::Given && spec.hasGlobal())
    stem += "-given";
  keyed = spec.scheme.name.empty() || spec.rows != kDynamic;
  return stem;
}

std::optional<BundleEntry> buildEntry(const KernelSpec &spec,
                                      const AotOptions &options,
                                      std::set<std::string> &usedStems,
                                      runtime::StagedFiles &staged,
                                      std::string &error) {
  // The JIT's own build: the PTX and the launch plan the JIT caches, so
  // the bundle's launches are the JIT's, in the same syntax.
  Expected<jit::GpuBuild> build = jit::buildGpuKernel(spec, options.target);
  if (!build) {
    error = build.error().message;
    return std::nullopt;
  }
  // The build's own count: the same lowering decided it.
  int64_t workspaceWords = jit::overriddenWorkspaceWords(build->workspaceWords);
  const std::string &ptx = build->ptx;
  std::optional<std::vector<Launch>> launches = checkedLaunchesFromPlan(
      build->plan, ptx, [](int) { return size_t(7); }, error);
  if (!launches)
    return std::nullopt;

  BundleEntry entry;
  entry.spec = printKernelSpec(spec);
  entry.op = spec.op == KernelOp::Quantize ? "quantize" : "dequantize";
  entry.scheme = printSchemeText(spec.scheme);
  entry.valueType = std::string(valueTypeName(spec.valueType));
  entry.launches = std::move(*launches);
  entry.workspaceWords = workspaceWords;
  for (const compiler::KernelParam &param : compiler::kernelParams(spec))
    entry.params.push_back({std::string(paramRoleName(param.role)),
                            param.elementType, param.isResult});
  bool keyed = false;
  std::string stem = stemFor(spec, keyed);
  if (!stageKernelImages(entry, stem, keyed, ptx, options, usedStems, staged,
                         error))
    return std::nullopt;
  std::string directory = options.outDirectory;
  if (spec.rows == kDynamic)
    entry.bench = sizeInstance(spec, options.benchRows, options.benchCols);
  if (options.dataSize) {
    std::optional<BundleData> data =
        makeData(spec, directory, entry.name, options.dataSize->first,
                 options.dataSize->second, staged, error);
    if (!data)
      return std::nullopt;
    entry.data = std::move(*data);
  }
  return entry;
}

} // namespace

CommandResult runAot(Arguments args) {
  AotOptions options;
  std::string targetText = "sm_90a";
  bool all = false;
  std::vector<std::string_view> specTexts;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    auto value = [&]() -> std::optional<std::string_view> {
      if (i + 1 >= args.size())
        return std::nullopt;
      return args[++i];
    };
    if (arg == "--help" || arg == "-h") {
      fmt::print("{}", kUsage);
      return std::nullopt;
    }
    if (arg == "--all") {
      all = true;
    } else if (arg == "--no-cubin") {
      options.cubin = false;
    } else if (arg == "--kv-data" || arg == "--attention-data" ||
               arg == "--kv-bench") {
      std::optional<std::string_view> text = value();
      if (!text)
        return fail(fmt::format("{} needs a value", arg));
      KvAotSize size;
      std::string reason;
      if (!parseRowsByCols(
              *text, arg == "--kv-bench" ? kMaxBenchElements : kMaxKvDataTokens,
              size.batch, size.tokens, reason))
        return fail(fmt::format("{}: {}", arg, reason));
      (arg == "--kv-data"          ? options.kvData
       : arg == "--attention-data" ? options.attentionData
                                   : options.kvBench) = size;
    } else if (arg == "--target" || arg == "--out" || arg == "--with-data" ||
               arg == "--bench") {
      std::optional<std::string_view> text = value();
      if (!text)
        return fail(fmt::format("{} needs a value", arg));
      if (arg == "--target") {
        targetText = *text;
      } else if (arg == "--out") {
        options.outDirectory = *text;
      } else {
        int64_t rows = 0, cols = 0;
        std::string reason;
        if (!parseRowsByCols(
                *text, arg == "--bench" ? kMaxBenchElements : kMaxDataElements,
                rows, cols, reason))
          return fail(fmt::format("{}: {}", arg, reason));
        if (arg == "--bench") {
          options.benchRows = rows;
          options.benchCols = cols;
        } else {
          options.dataSize = std::make_pair(rows, cols);
        }
      }
    } else if (arg.starts_with("--")) {
      return fail(fmt::format("aot: unknown option '{}'\n{}", arg, kUsage));
    } else {
      specTexts.push_back(arg);
    }
  }
  if (options.outDirectory.empty())
    return fail(fmt::format("aot: --out DIR is required\n{}", kUsage));
  // --all may come with SPECs (the GPU check adds its KV and attention
  // specs to the scheme kernels, one bundle per chip).
  if (!all && specTexts.empty())
    return fail(fmt::format("aot: give SPECs or --all\n{}", kUsage));
  std::string error;
  std::optional<Target> target = parseTarget(targetText, &error);
  if (!target)
    return fail(error);
  if (!target->isNvidia())
    return fail("aot: the target must be an NVIDIA chip, got '" +
                target->str() + "'");
  if (!validateTarget(*target, &error))
    return fail(error);
  options.target = *target;
  // aot does not use the kernel cache, but LOWBIT_CACHE is checked by
  // every command: a typo is an error, not a silent default. Its CPU JIT
  // (--with-data) honours must-hit through JitBackend.
  if (Expected<runtime::CacheOptions> cacheOptions =
          runtime::CacheOptions::fromEnvironment();
      !cacheOptions)
    return fail(cacheOptions.error().message);

  // Every spec is checked before anything is compiled or written.
  std::vector<KernelSpec> specs;
  std::vector<KvAotSpec> kvSpecs;
  if (all)
    specs = allNamedSchemeSpecs();
  for (std::string_view text : specTexts) {
    if (isKvAotSpecText(text)) {
      std::optional<KvAotSpec> spec = parseKvAotSpec(text, error);
      if (!spec)
        return fail(fmt::format("spec '{}': {}", text, error));
      kvSpecs.push_back(*spec);
      continue;
    }
    std::optional<KernelSpec> spec = parseKernelSpec(text, &error);
    if (!spec)
      return fail(fmt::format("spec '{}': {}", text, error));
    if (!validateKernelSpec(*spec, &error))
      return fail(fmt::format("spec '{}': {}", text, error));
    specs.push_back(*spec);
  }
  // A kernel compiled for fixed sizes runs only at those sizes: data of
  // another shape would be checked here but could never be launched.
  if (options.dataSize)
    for (const KernelSpec &spec : specs) {
      auto [rows, cols] = *options.dataSize;
      if ((spec.rows != kDynamic && spec.rows != rows) ||
          (spec.cols != kDynamic && spec.cols != cols))
        return fail(fmt::format(
            "--with-data {}x{} does not fit '{}', compiled for {}x{}", rows,
            cols, printKernelSpec(spec),
            spec.rows == kDynamic ? "ROWS" : std::to_string(spec.rows),
            spec.cols == kDynamic ? "COLS" : std::to_string(spec.cols)));
    }

  std::error_code created;
  std::filesystem::create_directories(options.outDirectory, created);
  if (created)
    return fail(fmt::format("{}: {}", options.outDirectory, created.message()));

  aot::Manifest manifest;
  manifest.target = options.target.chip;
  manifest.lowbitVersion = std::string(runtime::lowbitVersion());
  runtime::StagedFiles staged;
  std::set<std::string> usedStems;
  for (const KernelSpec &spec : specs) {
    std::optional<BundleEntry> entry =
        buildEntry(spec, options, usedStems, staged, error);
    if (!entry)
      return fail(fmt::format("'{}': {}", printKernelSpec(spec), error));
    manifest.entries.push_back(std::move(*entry));
  }
  for (const KvAotSpec &spec : kvSpecs) {
    std::optional<BundleEntry> entry =
        buildKvAotEntry(spec, options, usedStems, staged, error);
    if (!entry)
      return fail(fmt::format("'{}': {}", spec.text(), error));
    manifest.entries.push_back(std::move(*entry));
  }
  // The manifest is staged last and everything is renamed together: a
  // reader never sees a manifest naming files that are not there yet.
  if (!staged.stage(options.outDirectory + "/manifest.json",
                    aot::toJson(manifest).serialize(), &error) ||
      !staged.commit(&error))
    return fail(error);
  for (const BundleEntry &entry : manifest.entries)
    fmt::print("{:<44} {} kernel(s){}{}\n", entry.name, entry.launches.size(),
               entry.cubinFile.empty() ? "" : ", cubin",
               entry.data ? ", data" : "");
  fmt::print("wrote {} entries to {}/manifest.json\n", manifest.entries.size(),
             options.outDirectory);
  return std::nullopt;
}

} // namespace lowbit::cli
