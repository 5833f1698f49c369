//===- KiviAttentionReport.cpp - lowbit report rows of KIVI attention -----===//

#include "tools/lowbit/KiviAttentionReport.h"

#include "kv/KvPaged.h"
#include "runtime/aot/Bundle.h"
#include "runtime/compiler/KvFamilyCompile.h"
#include "runtime/compiler/KvKernelSignature.h"
#include "tools/lowbit/KvCacheReport.h"

#include <fmt/format.h>

namespace lowbit::cli {

namespace {

/// The ABI's call sizes for `batch` sequences of `tokens` tokens each.
compiler::CallSizes kiviCallSizes(const kv::KiviAttentionSpec &spec,
                                  int64_t batch, int64_t tokens) {
  int64_t blocks = (tokens + kv::kPageTokens - 1) / kv::kPageTokens;
  int64_t group = spec.keys.groupSize;
  return {
      {compiler::kBatch, batch},
      {compiler::kCacheTokens, tokens},
      {compiler::kPages, batch * blocks},
      {compiler::kMaxBlocks, blocks},
      {compiler::kGroupRows, (tokens + group - 1) / group},
      {compiler::kSplits, (tokens + spec.splitTokens - 1) / spec.splitTokens}};
}

std::vector<std::vector<int64_t>>
kiviShapes(const std::vector<compiler::KvKernelParam> &params,
           const compiler::CallSizes &sizes) {
  std::vector<std::vector<int64_t>> shapes;
  for (const compiler::KvKernelParam &param : params)
    shapes.push_back(compiler::bindShape(param, sizes));
  return shapes;
}

} // namespace

Expected<report::SpecReport>
reportKiviAttention(const kv::KiviAttentionSpec &spec, int64_t tokens,
                    const Target &target, const report::ChipModel &chip) {
  auto ptx = compiler::compileKvFamilyToPtx(spec, target);
  Expected<runtime::Cubin> cubin = linkKvReportPtx(ptx, target);
  if (!cubin)
    return cubin.error();
  report::SpecInput input;
  input.title =
      fmt::format("{} at {} tokens", kv::printKiviAttentionSpec(spec), tokens);
  // The streamed side (the codes) is loaded, as in quantize.
  input.op = KernelOp::Quantize;
  input.chip = chip;
  input.ptx = ptx->ptx;
  input.resources = cubin->allKernels;
  report::addSass(input, cubin->bytes);
  input.valueBytes = 1;
  std::vector<compiler::KvKernelParam> params =
      compiler::kiviAttentionParams(spec);
  std::vector<std::vector<int64_t>> shapes =
      kiviShapes(params, kiviCallSizes(spec, 1, tokens));
  std::vector<std::vector<int64_t>> doubled =
      kiviShapes(params, kiviCallSizes(spec, 2, tokens));
  for (size_t i = 0; i < params.size(); ++i) {
    int64_t elements = 1;
    for (int64_t size : shapes[i])
      elements *= size;
    int64_t bytes =
        elements * int64_t(aot::elementBytes(params[i].elementType));
    // analyzeSpec finds the streamed buffer by the role "input".
    std::string role = params[i].name == "key_codes" ? "input" : params[i].name;
    input.buffers.push_back({role, bytes, params[i].isResult});
    input.minimumBytes += double(bytes);
    if (params[i].name == "partials")
      input.minimumBytes += double(bytes);
  }
  input.elements = 2 * tokens * spec.kvHeads * spec.headDim;
  for (const jit::LaunchStep &step : ptx->plan.steps) {
    Expected<report::KernelLaunch> launch = kvLaunch(step, shapes, doubled);
    if (!launch)
      return launch.error();
    launch->policy = fmt::format(
        "grid ({}, {}, {}) x block ({}, {}, {}) at {} tokens", launch->grid[0],
        launch->grid[1], launch->grid[2], launch->block[0], launch->block[1],
        launch->block[2], tokens);
    input.launches.push_back(std::move(*launch));
  }
  return report::analyzeSpec(input);
}

} // namespace lowbit::cli
