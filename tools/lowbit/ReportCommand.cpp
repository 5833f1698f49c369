//===- ReportCommand.cpp - lowbit report: static GPU kernel reports -------===//
//
// Compiles each spec for the GPU as the JIT does (PTX + launch plan), asks
// nvJitLink for registers and spills, and hands PTX, launches, resources
// and the ABI buffers' sizes to runtime/report, which reads widths,
// instruction counts and occupancy off them and estimates the fraction of
// HBM bandwidth (docs/gpu-report.md). --with-nvrtc reports runtime/nvrtc's
// CUDA C++ reference kernels beside them, through the same analysis.
//
//===----------------------------------------------------------------------===//

#include "kv/KvAttentionSpec.h"
#include "kv/KvPaged.h"
#include "runtime/aot/Bundle.h"
#include "runtime/compiler/Compiler.h"
#include "runtime/compiler/GpuCompile.h"
#include "runtime/compiler/KvAttentionCompiler.h"
#include "runtime/compiler/KvFamilyCompile.h"
#include "runtime/driver/NvJitLink.h"
#include "runtime/driver/Nvrtc.h"
#include "runtime/jit/LaunchPlan.h"
#include "runtime/nvrtc/ReferenceKernels.h"
#include "runtime/report/FusionTraffic.h"
#include "runtime/report/GpuReport.h"
#include "tools/lowbit/CommandLine.h"
#include "tools/lowbit/Commands.h"
#include "tools/lowbit/KiviAttentionReport.h"
#include "tools/lowbit/KvCacheReport.h"
#include "tools/lowbit/MatmulReport.h"
#include "tools/lowbit/ParamRoles.h"

#include <charconv>

#include <fmt/format.h>

namespace lowbit::cli {

namespace {

constexpr std::string_view kUsage =
    "usage: lowbit report (SPEC... | --all) [--target CHIP[,CHIP...]]\n"
    "                     [--size ROWSxCOLS] [--m M[,M...]] [--markdown]\n"
    "                     [--with-nvrtc]\n"
    "Static report of each GPU kernel of a spec: launches, grid and block,\n"
    "global load/store widths, bytes per element against the format's\n"
    "minimum, PTX instructions per element, registers, spills, occupancy\n"
    "and an estimated fraction of HBM bandwidth with its limiting factor\n"
    "(model: docs/gpu-report.md).\n"
    "  SPEC          a kernel spec in quotes, e.g. 'quantize mxfp4 from=f16',\n"
    "                or a decode-attention spec, 'kv_attend kv_fp8_e4m3 ...'\n"
    "                (batch 1 at 32768 tokens; --size does not apply)\n"
    "                or 'kivi_attend kv_kivi_int4 ...' (the same shape)\n"
    "                or a KV-cache spec, 'kv_append kv_int8_g64 ...' (batch\n"
    "                64 at 1 and 256 new tokens; --size does not apply)\n"
    "                or a matmul spec, 'matmul int4_g128 from=bf16' (weights\n"
    "                N x K from --size, default 4096x4096, or the spec's n, "
    "k)\n"
    "  --all         every named scheme, quantize and dequantize, f32\n"
    "  --target      sm_80, sm_89, sm_90a (default), sm_100a, sm_120a,\n"
    "                comma-separated (chip constants: docs/gpu-report.md)\n"
    "  --size        the reference tensor (default 8192x8192)\n"
    "  --m           a matmul's rows of X, comma-separated (default 1,16)\n"
    "  --markdown    one table row per kernel instead of the long form\n"
    "  --with-nvrtc  also the NVRTC reference kernels of the named schemes\n";

constexpr OptionSpec kOptions[] = {{"all", false},      {"target", true},
                                   {"size", true},      {"m", true},
                                   {"markdown", false}, {"with-nvrtc", false}};

/// A launch size as a function of the tensor's rows and cols, read off the
/// plan by evaluating it at the reference size and at twice the rows and
/// twice the cols: "rows", "cols/4096", "128", or the value when the size
/// is no such simple function (e.g. a capped grid-stride launch).
std::string describeSize(const std::string &expression,
                         const std::array<jit::ParamShapes, 3> &probes,
                         int64_t rows, int64_t cols) {
  std::array<int64_t, 3> value{};
  for (size_t i = 0; i < 3; ++i) {
    Expected<int64_t> v = jit::evaluateSize(expression, probes[i]);
    if (!v)
      return "?";
    value[i] = *v;
  }
  auto [base, twiceRows, twiceCols] = value;
  if (base == twiceRows && base == twiceCols)
    return std::to_string(base);
  auto ratio = [&](int64_t size, const char *name) -> std::string {
    if (base <= 0 || size % base != 0)
      return {};
    int64_t divisor = size / base;
    return divisor == 1 ? name : fmt::format("{}/{}", name, divisor);
  };
  std::string text;
  if (base == twiceCols && twiceRows == 2 * base)
    text = ratio(rows, "rows");
  else if (base == twiceRows && twiceCols == 2 * base)
    text = ratio(cols, "cols");
  else if (twiceRows == 2 * base && twiceCols == 2 * base)
    text = ratio(rows * cols, "rows*cols");
  return text.empty() ? fmt::format("{} at this size", base) : text;
}

} // namespace

/// One step of a launch plan evaluated at `shapes`: grid, block, shared
/// bytes, which parameter slots hold which buffer, and whether the grid
/// strides (it does not double when every buffer's rows do: `doubled`).
Expected<report::KernelLaunch> launchOfStep(const jit::LaunchStep &step,
                                            const jit::ParamShapes &shapes,
                                            const jit::ParamShapes &doubled) {
  report::KernelLaunch launch;
  launch.kernel = step.kernelName;
  std::array<int64_t, 7> values{};
  for (size_t i = 0; i < 7; ++i) {
    Expected<int64_t> value = jit::evaluateSize(step.sizes[i], shapes);
    if (!value)
      return value.error();
    values[i] = *value;
  }
  launch.grid = {values[0], values[1], values[2]};
  launch.block = {values[3], values[4], values[5]};
  launch.dynamicSharedBytes = values[6];
  int64_t threads = 1, threadsWhenDoubled = 1;
  for (size_t i = 0; i < 6; ++i) {
    Expected<int64_t> twice = jit::evaluateSize(step.sizes[i], doubled);
    if (!twice)
      return twice.error();
    threads *= values[i];
    threadsWhenDoubled *= *twice;
  }
  launch.gridStride = threadsWhenDoubled < 2 * threads;
  // m:P is MLIR's expanded descriptor (allocated, aligned, offset, sizes,
  // strides): its two pointers are buffer P; sW:EXPR is one scalar.
  // The descriptor's offset, sizes and strides (row-major) and the
  // scalars are the launch's arguments: the report's address and loop-bound
  // analysis reads them (KernelLaunch::parameterValues).
  for (const std::string &argument : step.arguments) {
    int slot = int(launch.bufferOfParameter.size());
    if (argument.starts_with("m:")) {
      int param = std::stoi(argument.substr(2));
      launch.bufferOfParameter.insert(launch.bufferOfParameter.end(),
                                      {param, param, -1, -1, -1, -1, -1});
      if (size_t(param) < shapes.size()) {
        auto [rows, cols] = shapes[size_t(param)];
        const std::array<int64_t, 5> descriptor{0, rows, cols, cols, 1};
        for (size_t i = 0; i < descriptor.size(); ++i)
          launch.parameterValues[slot + 2 + int(i)] = descriptor[i];
      }
    } else {
      launch.bufferOfParameter.push_back(-1);
      size_t colon = argument.find(':');
      if (argument.starts_with('s') && colon != std::string::npos)
        if (Expected<int64_t> value =
                jit::evaluateSize(argument.substr(colon + 1), shapes))
          launch.parameterValues[slot] = *value;
    }
  }
  return launch;
}

namespace {

struct ReportOptions {
  std::vector<report::ChipModel> chips;
  std::vector<Target> targets;
  int64_t rows = 8192, cols = 8192;
};

Expected<report::SpecReport> reportLowbit(const KernelSpec &spec,
                                          const Target &target,
                                          const report::ChipModel &chip,
                                          const ReportOptions &options) {
  Expected<jit::GpuBuild> build = jit::buildGpuKernel(spec, target);
  if (!build)
    return build.error();
  if (!build->plan.unsupported.empty())
    return makeError(ErrorCode::Unsupported,
                     "no launch plan: " + build->plan.unsupported);
  Expected<runtime::Cubin> cubin = runtime::linkPtx(build->ptx, target.chip);
  if (!cubin)
    return makeError(cubin.error().code, "nvJitLink (registers and spills): " +
                                             cubin.error().message);

  report::SpecInput input;
  std::string prologues;
  for (const Prologue &prologue : spec.prologues)
    prologues += printPrologue(prologue) + " | ";
  input.title =
      fmt::format("{}{} {} {}", prologues,
                  spec.op == KernelOp::Quantize ? "quantize" : "dequantize",
                  spec.scheme.name.empty() ? printSchemeText(spec.scheme)
                                           : spec.scheme.name,
                  valueTypeName(spec.valueType));
  input.op = spec.op;
  input.chip = chip;
  input.ptx = build->ptx;
  input.resources = cubin->allKernels;
  report::addSass(input, cubin->bytes);
  input.elements = options.rows * options.cols;
  std::vector<compiler::KernelParam> params = compiler::kernelParams(spec);
  std::vector<Shape2D> shapes =
      compiler::bufferShapes(spec, options.rows, options.cols);
  jit::ParamShapes planShapes;
  for (size_t i = 0; i < params.size(); ++i) {
    int64_t elementBytes = int64_t(aot::elementBytes(params[i].elementType));
    // A fused kernel's side tensors by their side ("weight", "residual").
    input.buffers.push_back(
        {params[i].side.empty() ? std::string(paramRoleName(params[i].role))
                                : params[i].side,
         shapes[i].rows * shapes[i].cols * elementBytes, params[i].isResult});
    planShapes.push_back({shapes[i].rows, shapes[i].cols});
    using Role = compiler::KernelParam::Role;
    if (params[i].role ==
        (spec.op == KernelOp::Quantize ? Role::Input : Role::Output))
      input.valueBytes = int(elementBytes);
  }
  // The workspace the JIT appends after the spec's buffers (the per-tensor
  // amax's words, docs/gpu.md): written by atomics, never read as data.
  if (build->workspaceWords > 0) {
    input.buffers.push_back({"workspace", build->workspaceWords * 4, true});
    planShapes.push_back({1, build->workspaceWords});
  }
  input.minimumBytes = report::minimumBytes(spec.scheme, input.valueBytes,
                                            options.rows, options.cols);
  if (!spec.prologues.empty()) {
    // The fused kernel's minimum (its side tensors included) and the
    // unfused sequence's (docs/fusion.md, "Bytes per element").
    report::FusionTraffic traffic =
        report::fusionTraffic(spec, options.rows, options.cols);
    input.minimumBytes = traffic.fusedBytes;
    input.unfusedBytes = traffic.unfusedBytes;
    input.prologueKernels = traffic.unfusedKernels - 1;
  }
  std::array<jit::ParamShapes, 3> probes;
  const std::array<std::pair<int64_t, int64_t>, 3> probeSizes = {
      {{options.rows, options.cols},
       {2 * options.rows, options.cols},
       {options.rows, 2 * options.cols}}};
  for (size_t p = 0; p < 3; ++p)
    for (const Shape2D &shape : compiler::bufferShapes(
             spec, probeSizes[p].first, probeSizes[p].second))
      probes[p].push_back({shape.rows, shape.cols});
  for (jit::ParamShapes &probe : probes)
    if (build->workspaceWords > 0)
      probe.push_back({1, build->workspaceWords});
  for (const jit::LaunchStep &step : build->plan.steps) {
    Expected<report::KernelLaunch> launch =
        launchOfStep(step, planShapes, probes[1]);
    if (!launch)
      return launch.error();
    std::array<std::string, 6> described;
    for (size_t i = 0; i < 6; ++i)
      described[i] =
          describeSize(step.sizes[i], probes, options.rows, options.cols);
    launch->policy = fmt::format("grid ({}, {}, {}) x block ({}, {}, {})",
                                 described[0], described[1], described[2],
                                 described[3], described[4], described[5]);
    input.launches.push_back(std::move(*launch));
  }
  return report::analyzeSpec(input);
}

/// Tokens per sequence of a kv_attend report: one long sequence, the case
/// split-K is for (docs/decode-attention.md).
constexpr int64_t kKvReportTokens = 32768;

/// A kv_attend spec's two launches (splits, merge) at batch 1 and
/// kKvReportTokens tokens. An element is one K or V code, the streamed
/// side; the minimum is every byte the computation must move: K and V
/// codes and scales, q and the output once, and the partials written by
/// the splits and read by the merge.
Expected<report::SpecReport> reportKvAttention(const kv::KvAttentionSpec &spec,
                                               const Target &target,
                                               const report::ChipModel &chip) {
  auto ptx = compiler::compileKvFamilyToPtx(spec, target);
  Expected<runtime::Cubin> cubin = linkKvReportPtx(ptx, target);
  if (!cubin)
    return cubin.error();
  const jit::LaunchPlan &plan = ptx->plan;
  report::SpecInput input;
  input.title = fmt::format("{} at {} tokens", kv::printKvAttentionSpec(spec),
                            kKvReportTokens);
  // The streamed side is loaded, as in quantize.
  input.op = KernelOp::Quantize;
  input.chip = chip;
  input.ptx = ptx->ptx;
  input.resources = cubin->allKernels;
  report::addSass(input, cubin->bytes);
  input.valueBytes = 1;
  auto shapesAt = [&](int64_t tokens) {
    compiler::KvAttentionSizes sizes;
    sizes.batch = 1;
    sizes.maxTokens = tokens;
    sizes.pages = spec.paged ? tokens / kv::kPageTokens : 0;
    sizes.maxBlocks = spec.paged ? tokens / kv::kPageTokens : 0;
    return jit::ParamShapes(compiler::kvAttentionShapes(spec, sizes));
  };
  jit::ParamShapes shapes = shapesAt(kKvReportTokens);
  std::vector<compiler::KvKernelParam> params =
      compiler::kvAttentionParams(spec);
  for (size_t i = 0; i < params.size(); ++i) {
    int64_t bytes = shapes[i][0] * shapes[i][1] *
                    int64_t(aot::elementBytes(params[i].elementType));
    // analyzeSpec finds the streamed buffer by the role "input".
    std::string role = params[i].name == "key_codes" ? "input" : params[i].name;
    input.buffers.push_back({role, bytes, params[i].isResult});
    input.minimumBytes += double(bytes);
    if (params[i].name == "key_codes" || params[i].name == "value_codes")
      input.elements += shapes[i][0] * shapes[i][1];
    if (params[i].name == "partials")
      input.minimumBytes += double(bytes);
  }
  jit::ParamShapes twice = shapesAt(2 * kKvReportTokens);
  for (const jit::LaunchStep &step : plan.steps) {
    Expected<report::KernelLaunch> launch = launchOfStep(step, shapes, twice);
    if (!launch)
      return launch.error();
    launch->policy = fmt::format(
        "grid ({}, {}, {}) x block ({}, {}, {}) at {} tokens", launch->grid[0],
        launch->grid[1], launch->grid[2], launch->block[0], launch->block[1],
        launch->block[2], kKvReportTokens);
    input.launches.push_back(std::move(*launch));
  }
  return report::analyzeSpec(input);
}

Expected<report::SpecReport> reportReference(const KernelSpec &spec,
                                             const report::ChipModel &chip,
                                             const ReportOptions &options) {
  Expected<runtime::ReferenceKernelSource> source =
      runtime::referenceKernelSource(spec.scheme.name,
                                     valueTypeName(spec.valueType));
  if (!source)
    return source.error();
  Expected<const runtime::NvrtcApi *> nvrtc = runtime::nvrtcLibrary();
  if (!nvrtc)
    return nvrtc.error();
  Expected<runtime::ReferenceKernelBuild> build =
      runtime::buildReferenceKernel(**nvrtc, nullptr, *source, chip.chip);
  if (!build)
    return build.error();
  Expected<runtime::Cubin> cubin = runtime::linkPtx(build->ptx, chip.chip);
  if (!cubin)
    return makeError(cubin.error().code, "nvJitLink (registers and spills): " +
                                             cubin.error().message);
  report::SpecInput input;
  input.title =
      fmt::format("nvrtc {} {} {}",
                  spec.op == KernelOp::Quantize ? "quantize" : "dequantize",
                  spec.scheme.name, valueTypeName(spec.valueType));
  input.op = spec.op;
  input.chip = chip;
  input.ptx = build->ptx;
  input.resources = cubin->allKernels;
  report::addSass(input, cubin->bytes);
  input.elements = options.rows * options.cols;
  // Quantize reads the input dtype; dequantize always writes f32.
  input.valueBytes = spec.op == KernelOp::Quantize
                         ? int(aot::elementBytes(valueTypeName(spec.valueType)))
                         : 4;
  input.buffers = report::formatBuffers(spec.scheme, spec.op, input.valueBytes,
                                        options.rows, options.cols);
  input.buffers.push_back({"scratch", 4, true});
  input.minimumBytes = report::minimumBytes(spec.scheme, input.valueBytes,
                                            options.rows, options.cols);
  input.launches = report::referenceKernelLaunches(spec.op, source->groupSize,
                                                   source->needsTensorAmax,
                                                   options.rows, options.cols);
  return report::analyzeSpec(input);
}

} // namespace

std::vector<KernelSpec> allNamedSchemeSpecs() {
  std::vector<KernelSpec> specs;
  for (const Scheme &scheme : namedSchemes())
    for (KernelOp op : {KernelOp::Quantize, KernelOp::Dequantize}) {
      KernelSpec spec;
      spec.op = op;
      spec.scheme = scheme;
      specs.push_back(spec);
    }
  return specs;
}

CommandResult runReport(Arguments args) {
  CommandResult done;
  auto parsed = parseCommandLineOrHelp("report", args, kOptions, kUsage, &done);
  if (!parsed)
    return done;
  bool all = parsed->flag("all");
  if (all == !parsed->operands.empty())
    return fail(
        fmt::format("report: give SPECs or --all (not both)\n{}", kUsage));
  ReportOptions options;
  std::vector<int64_t> matmulRows(kMatmulReportRows.begin(),
                                  kMatmulReportRows.end());
  if (const std::string *rows = parsed->value("m")) {
    matmulRows.clear();
    for (size_t start = 0; start <= rows->size();) {
      size_t comma = std::min(rows->find(',', start), rows->size());
      std::string_view text =
          std::string_view(*rows).substr(start, comma - start);
      start = comma + 1;
      int64_t value = 0;
      auto [end, ec] =
          std::from_chars(text.data(), text.data() + text.size(), value);
      if (ec != std::errc() || end != text.data() + text.size() || value < 1)
        return fail(fmt::format("--m: '{}' is not a positive row count", text));
      matmulRows.push_back(value);
    }
  }
  if (const std::string *size = parsed->value("size")) {
    std::string reason;
    if (!parseRowsByCols(*size, kMaxBenchElements, options.rows, options.cols,
                         reason))
      return fail(fmt::format("--size: {}", reason));
  }
  std::string targets = "sm_90a";
  if (const std::string *value = parsed->value("target"))
    targets = *value;
  std::string error;
  for (size_t start = 0; start <= targets.size();) {
    size_t comma = targets.find(',', start);
    if (comma == std::string::npos)
      comma = targets.size();
    std::string text = targets.substr(start, comma - start);
    start = comma + 1;
    std::optional<Target> target = parseTarget(text, &error);
    if (!target)
      return fail(error);
    if (!target->isNvidia())
      return fail("report: the target must be an NVIDIA chip, got '" + text +
                  "'");
    if (!validateTarget(*target, &error))
      return fail(error);
    std::optional<report::ChipModel> chip = report::chipModel(target->chip);
    if (!chip)
      return fail(fmt::format("report: no SM and memory model for {}; known: "
                              "{}",
                              target->chip, report::knownReportChips()));
    options.targets.push_back(*target);
    options.chips.push_back(*chip);
  }

  std::vector<KernelSpec> specs;
  std::vector<kv::KvAttentionSpec> attentionSpecs;
  std::vector<kv::KiviAttentionSpec> kiviAttentionSpecs;
  std::vector<kv::KvKernelSpec> cacheSpecs;
  std::vector<matmul::MatmulSpec> matmulSpecs;
  if (all)
    specs = allNamedSchemeSpecs();
  for (std::string_view text : parsed->operands) {
    if (text.starts_with("kv_append") || text.starts_with("kv_dequantize")) {
      std::optional<kv::KvKernelSpec> cache =
          kv::parseKvKernelSpec(text, &error);
      if (!cache)
        return fail(fmt::format("spec '{}': {}", text, error));
      cacheSpecs.push_back(*cache);
      continue;
    }
    // A matmul, also behind a prologue chain ('rmsnorm | matmul ...').
    std::string_view op = text;
    if (size_t bar = op.rfind('|'); bar != std::string_view::npos)
      op.remove_prefix(bar + 1);
    op.remove_prefix(std::min(op.find_first_not_of(" \t"), op.size()));
    if (op.starts_with("matmul")) {
      std::optional<matmul::MatmulSpec> matmulSpec =
          matmul::parseMatmulSpec(text, &error);
      if (!matmulSpec)
        return fail(fmt::format("spec '{}': {}", text, error));
      matmulSpecs.push_back(*matmulSpec);
      continue;
    }
    if (text.starts_with("kivi_attend")) {
      std::optional<kv::KiviAttentionSpec> attention =
          kv::parseKiviAttentionSpec(text, &error);
      if (!attention)
        return fail(fmt::format("spec '{}': {}", text, error));
      kiviAttentionSpecs.push_back(*attention);
      continue;
    }
    if (text.starts_with("kv_attend")) {
      std::optional<kv::KvAttentionSpec> attention =
          kv::parseKvAttentionSpec(text, &error);
      if (!attention)
        return fail(fmt::format("spec '{}': {}", text, error));
      attentionSpecs.push_back(*attention);
      continue;
    }
    std::optional<KernelSpec> spec = parseKernelSpec(text, &error);
    if (!spec || !validateKernelSpec(*spec, &error))
      return fail(fmt::format("spec '{}': {}", text, error));
    if (!validateSchemeForShape(spec->scheme, options.rows, options.cols,
                                &error))
      return fail(fmt::format("spec '{}' at {}x{}: {}", text, options.rows,
                              options.cols, error));
    specs.push_back(*spec);
  }
  bool withNvrtc = parsed->flag("with-nvrtc");
  if (withNvrtc)
    for (const KernelSpec &spec : specs)
      if (spec.scheme.name.empty() || spec.isStatic())
        return fail(fmt::format("--with-nvrtc: the NVRTC reference kernels "
                                "cover the named schemes with dynamic "
                                "scales only, not '{}'",
                                printKernelSpec(spec)));

  // Everything is computed before anything is printed.
  bool markdown = parsed->flag("markdown");
  std::string output = markdown ? report::markdownHeader() : "";
  auto add = [&](const report::SpecReport &spec) {
    output += markdown ? report::formatReportMarkdownRow(spec)
                       : report::formatReportText(spec) + "\n";
  };
  for (size_t t = 0; t < options.targets.size(); ++t)
    for (const KernelSpec &spec : specs) {
      Expected<report::SpecReport> lowbit =
          reportLowbit(spec, options.targets[t], options.chips[t], options);
      if (!lowbit)
        return fail(fmt::format("'{}' on {}: {}", printKernelSpec(spec),
                                options.targets[t].chip,
                                lowbit.error().message));
      add(*lowbit);
      if (!withNvrtc)
        continue;
      Expected<report::SpecReport> reference =
          reportReference(spec, options.chips[t], options);
      if (!reference)
        return fail(fmt::format("NVRTC reference of '{}' on {}: {}",
                                printKernelSpec(spec), options.targets[t].chip,
                                reference.error().message));
      add(*reference);
    }
  for (size_t t = 0; t < options.targets.size(); ++t)
    for (const kv::KvAttentionSpec &spec : attentionSpecs) {
      Expected<report::SpecReport> attention =
          reportKvAttention(spec, options.targets[t], options.chips[t]);
      if (!attention)
        return fail(
            fmt::format("'{}' on {}: {}", kv::printKvAttentionSpec(spec),
                        options.targets[t].chip, attention.error().message));
      add(*attention);
    }
  for (size_t t = 0; t < options.targets.size(); ++t)
    for (const kv::KiviAttentionSpec &spec : kiviAttentionSpecs) {
      Expected<report::SpecReport> attention = reportKiviAttention(
          spec, kKvReportTokens, options.targets[t], options.chips[t]);
      if (!attention)
        return fail(
            fmt::format("'{}' on {}: {}", kv::printKiviAttentionSpec(spec),
                        options.targets[t].chip, attention.error().message));
      add(*attention);
    }
  for (size_t t = 0; t < options.targets.size(); ++t)
    for (const kv::KvKernelSpec &spec : cacheSpecs)
      for (int64_t tokens : kKvCacheReportTokens) {
        Expected<report::SpecReport> cache =
            reportKvCache(spec, tokens, options.targets[t], options.chips[t]);
        if (!cache)
          return fail(
              fmt::format("'{}' on {}: {}", kv::formatKvKernelSpec(spec),
                          options.targets[t].chip, cache.error().message));
        add(*cache);
      }
  for (size_t t = 0; t < options.targets.size(); ++t)
    for (const matmul::MatmulSpec &spec : matmulSpecs) {
      // The weights: --size, else the spec's static [n, k], else the
      // default.
      int64_t n = parsed->value("size") ? options.rows
                  : spec.isDynamic()    ? kMatmulReportN
                                        : spec.n;
      int64_t k = parsed->value("size") ? options.cols
                  : spec.isDynamic()    ? kMatmulReportK
                                        : spec.k;
      for (int64_t m : matmulRows) {
        Expected<std::string> rows = reportMatmul(
            spec, n, k, m, options.targets[t], options.chips[t], markdown);
        if (!rows)
          return fail(
              fmt::format("'{}' on {}: {}", matmul::printMatmulSpec(spec),
                          options.targets[t].chip, rows.error().message));
        output += *rows;
      }
    }
  fmt::print("{}", output);
  return std::nullopt;
}

} // namespace lowbit::cli
