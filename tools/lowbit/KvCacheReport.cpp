//===- KvCacheReport.cpp - lowbit report rows of the KV-cache kernels -----===//

#include "tools/lowbit/KvCacheReport.h"

#include "kv/KvPaged.h"
#include "runtime/aot/Bundle.h"
#include "runtime/compiler/KvCompiler.h"
#include "runtime/compiler/KvFamilyCompile.h"
#include "runtime/driver/NvJitLink.h"
#include "runtime/jit/LaunchPlan.h"

#include <algorithm>

#include <fmt/format.h>

namespace lowbit::cli {

namespace {

using Shapes = std::vector<std::vector<int64_t>>;

/// The ABI buffers' shapes (docs/kv-kernels.md, "Compile entry") for
/// `batch` sequences of `tokens` new tokens written from position 0: a
/// contiguous cache of exactly `tokens` slots, or the pages they fill.
Shapes kvShapes(const kv::KvKernelSpec &spec, int64_t batch, int64_t tokens) {
  bool paged = spec.layout == kv::KvLayout::Paged;
  int64_t blocks = (tokens + kv::kPageTokens - 1) / kv::kPageTokens;
  int64_t rows = paged ? batch * blocks : batch;
  int64_t slots = paged ? kv::kPageTokens : tokens;
  std::vector<int64_t> values = {batch, spec.heads, tokens, spec.headDim};
  std::vector<int64_t> codes = {rows, spec.heads, slots, spec.headDim};
  std::vector<int64_t> scales =
      spec.scheme.isInt8()
          ? std::vector<int64_t>{rows, spec.heads, slots, spec.scaleWidth()}
          : std::vector<int64_t>{spec.scaleWidth()};
  Shapes shapes = spec.op == kv::KvKernelOp::Append
                      ? Shapes{values, codes, scales, {batch}}
                      : Shapes{codes, scales, {batch}, values};
  if (paged)
    shapes.push_back({batch, blocks});
  return shapes;
}

/// The launch's sizes at `shapes`: the ranked evaluation a KV kernel's
/// launch runs (aot::RankedLaunch, through evaluateLaunchFor).
Expected<aot::LaunchSizes> kvSizes(const aot::Launch &launch,
                                   const Shapes &shapes) {
  std::string error;
  aot::SizeInstance size;
  size.dims = shapes;
  std::optional<aot::LaunchSizes> sizes =
      aot::evaluateLaunchFor(launch, size, &error);
  if (!sizes)
    return makeError(ErrorCode::Unsupported, error);
  return *sizes;
}

} // namespace

Expected<report::KernelLaunch> kvLaunch(const jit::LaunchStep &step,
                                        const Shapes &shapes,
                                        const Shapes &doubled) {
  report::KernelLaunch launch;
  launch.kernel = step.kernelName;
  std::string error;
  std::optional<aot::Launch> ranked = aot::fromLaunchStep(step, &error);
  if (!ranked)
    return makeError(ErrorCode::Unsupported, error);
  Expected<aot::LaunchSizes> sizes = kvSizes(*ranked, shapes);
  if (!sizes)
    return sizes.error();
  Expected<aot::LaunchSizes> twice = kvSizes(*ranked, doubled);
  if (!twice)
    return twice.error();
  int64_t threads = 1, threadsWhenDoubled = 1;
  for (size_t i = 0; i < 3; ++i) {
    threads *= sizes->grid[i] * sizes->block[i];
    threadsWhenDoubled *= twice->grid[i] * twice->block[i];
  }
  launch.grid = sizes->grid;
  launch.block = sizes->block;
  launch.dynamicSharedBytes = sizes->sharedBytes;
  launch.gridStride = threadsWhenDoubled < 2 * threads;
  // m:P is MLIR's expanded descriptor: allocated and aligned pointers
  // (buffer P), offset, sizes and strides.
  for (const std::string &argument : step.arguments) {
    if (!argument.starts_with("m:")) {
      launch.bufferOfParameter.push_back(-1);
      continue;
    }
    int param = std::stoi(argument.substr(2));
    launch.bufferOfParameter.insert(launch.bufferOfParameter.end(),
                                    {param, param});
    launch.bufferOfParameter.insert(launch.bufferOfParameter.end(),
                                    1 + 2 * shapes[param].size(), -1);
  }
  return launch;
}

Expected<runtime::Cubin>
linkKvReportPtx(llvm::Expected<compiler::GpuCompilation> &compiled,
                const Target &target) {
  if (!compiled)
    return makeError(ErrorCode::CompileFailed,
                     llvm::toString(compiled.takeError()));
  if (!compiled->plan.unsupported.empty())
    return makeError(ErrorCode::Unsupported,
                     "no launch plan: " + compiled->plan.unsupported);
  Expected<runtime::Cubin> cubin = runtime::linkPtx(compiled->ptx, target.chip);
  if (!cubin)
    return makeError(cubin.error().code, "nvJitLink (registers and spills): " +
                                             cubin.error().message);
  return cubin;
}

Expected<report::SpecReport> reportKvCache(const kv::KvKernelSpec &spec,
                                           int64_t tokens, const Target &target,
                                           const report::ChipModel &chip) {
  auto ptx = compiler::compileKvFamilyToPtx(spec, target);
  Expected<runtime::Cubin> cubin = linkKvReportPtx(ptx, target);
  if (!cubin)
    return cubin.error();
  const jit::LaunchPlan &plan = ptx->plan;
  int64_t batch = kKvCacheReportBatch;
  bool append = spec.op == kv::KvKernelOp::Append;
  report::SpecInput input;
  input.title = fmt::format("{} at batch {} x {} token(s)",
                            kv::formatKvKernelSpec(spec), batch, tokens);
  // The values are the streamed side: loaded by the append (as quantize),
  // stored by dequantize.
  input.op = append ? KernelOp::Quantize : KernelOp::Dequantize;
  input.chip = chip;
  input.ptx = ptx->ptx;
  input.resources = cubin->allKernels;
  report::addSass(input, cubin->bytes);
  input.valueBytes = spec.valueType == kv::KvValueType::F32 ? 4 : 2;
  input.elements = batch * spec.heads * tokens * spec.headDim;
  int64_t rows = batch * spec.heads * tokens;
  int64_t blocks = (tokens + kv::kPageTokens - 1) / kv::kPageTokens;
  int64_t scaleBytes = spec.scheme.isInt8() ? rows * spec.scaleWidth() * 4
                                            : spec.scaleWidth() * 4;
  std::vector<report::Buffer> buffers = {
      {append ? "input" : "output", input.elements * input.valueBytes, !append},
      {"codes", input.elements, append},
      {"scales", scaleBytes, append && spec.scheme.isInt8()},
      {"positions", batch * 4, false}};
  if (!append)
    std::rotate(buffers.begin(), buffers.begin() + 1, buffers.end());
  if (spec.layout == kv::KvLayout::Paged)
    buffers.push_back({"block_table", batch * blocks * 4, false});
  for (const report::Buffer &buffer : buffers)
    input.minimumBytes += double(buffer.bytes);
  input.buffers = buffers;
  Shapes shapes = kvShapes(spec, batch, tokens);
  Shapes doubled = kvShapes(spec, 2 * batch, tokens);
  for (const jit::LaunchStep &step : plan.steps) {
    Expected<report::KernelLaunch> launch = kvLaunch(step, shapes, doubled);
    if (!launch)
      return launch.error();
    launch->policy = fmt::format(
        "grid ({}, {}, {}) x block ({}, {}, {}): one warp per (sequence, "
        "head, token) row",
        launch->grid[0], launch->grid[1], launch->grid[2], launch->block[0],
        launch->block[1], launch->block[2]);
    input.launches.push_back(std::move(*launch));
  }
  return report::analyzeSpec(input);
}

} // namespace lowbit::cli
