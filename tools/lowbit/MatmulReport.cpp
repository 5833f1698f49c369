//===- MatmulReport.cpp - lowbit report rows of the quantized-weight matmul
//===//

#include "tools/lowbit/MatmulReport.h"

#include "lowering/GpuMatmul.h"
#include "runtime/aot/Bundle.h"
#include "runtime/compiler/MatmulCompiler.h"
#include "runtime/compiler/MatmulSignature.h"
#include "runtime/report/MatmulTraffic.h"
#include "tools/lowbit/KvCacheReport.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace lowbit::cli {

Expected<std::string> reportMatmul(const matmul::MatmulSpec &spec, int64_t n,
                                   int64_t k, int64_t m, const Target &target,
                                   const report::ChipModel &chip,
                                   bool markdown) {
  std::string error;
  if (!spec.isDynamic() && (spec.n != n || spec.k != k))
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("the spec's weights are {}x{}, not the "
                                 "--size {}x{}",
                                 spec.n, spec.k, n, k));
  if (!matmul::validateWeightShape(spec.scheme, n, k, &error))
    return makeError(ErrorCode::InvalidArgument, error);
  auto compiled = compiler::compileMatmulToPtx(spec, target);
  Expected<runtime::Cubin> cubin = linkKvReportPtx(compiled, target);
  if (!cubin)
    return cubin.error();
  report::MatmulShape shape{m, n, k};
  report::SpecInput input;
  input.title = fmt::format("{} at M={} N={} K={}",
                            matmul::printMatmulSpec(spec), m, n, k);
  input.chip = chip;
  input.ptx = compiled->ptx;
  input.resources = cubin->allKernels;
  report::addSass(input, cubin->bytes);
  std::vector<compiler::KvKernelParam> params = compiler::matmulParams(spec);
  jit::ParamShapes shapes = compiler::matmulShapes(spec, {m, n, k});
  // Twice the weights' rows: the grid of a launch that does not stride
  // grows with N.
  jit::ParamShapes doubled = compiler::matmulShapes(spec, {m, 2 * n, k});
  for (size_t i = 0; i < params.size(); ++i)
    input.buffers.push_back(report::matmulBuffer(
        params[i].name,
        shapes[i][0] * shapes[i][1] *
            int64_t(aot::elementBytes(params[i].elementType)),
        params[i].isResult));
  report::setMatmulTraffic(input, shape);
  // The workspace the JIT appends after the ABI's buffers (NVFP4's and
  // a per-tensor X scale's amax words): written by atomics, never data,
  // so not in the minimum bytes. (Behind prologues, its fixed words.)
  int64_t words = compiled->workspaceWords;
  if (words > 0) {
    input.buffers.push_back(report::matmulBuffer("workspace", words * 4, true));
    shapes.push_back({1, words});
    doubled.push_back({1, words});
  }
  for (const jit::LaunchStep &step : compiled->plan.steps) {
    Expected<report::KernelLaunch> launch = launchOfStep(step, shapes, doubled);
    if (!launch)
      return launch.error();
    // Not launched at this M (the GEMV's and the GEMM's selects).
    if (launch->grid[0] * launch->grid[1] * launch->grid[2] == 0)
      continue;
    launch->policy =
        fmt::format("grid ({}, {}, {}) x block ({}, {}, {}) at M={} N={}",
                    launch->grid[0], launch->grid[1], launch->grid[2],
                    launch->block[0], launch->block[1], launch->block[2], m, n);
    input.launches.push_back(std::move(*launch));
  }
  Expected<report::SpecReport> report = report::analyzeSpec(input);
  if (!report)
    return report.error();
  report::applyMatmulEstimates(input, *report, shape);
  if (markdown)
    return report::formatReportMarkdownRow(*report);
  std::string choice =
      spec.activation ? activationQuantizeChoice(spec.scheme, *spec.activation,
                                                 !spec.prologues.empty())
                      : "";
  // Behind prologues, the launches the choice names, in order.
  if (!spec.prologues.empty() &&
      choice.find("a front kernel") != std::string::npos) {
    std::vector<std::string> names;
    for (const jit::LaunchStep &step : compiled->plan.steps)
      names.push_back(step.kernelName);
    choice += fmt::format("\nlaunches: {} (the front quantize kernel's, "
                          "then the GEMM)",
                          fmt::join(names, ", "));
  }
  return report::matmulInputsText(input, *report, shape) +
         (choice.empty() ? "" : choice + "\n") +
         report::formatReportText(*report) + "\n";
}

} // namespace lowbit::cli
