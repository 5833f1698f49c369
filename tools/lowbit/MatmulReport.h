//===- MatmulReport.h - lowbit report rows of the quantized-weight matmul -===//
//
// `lowbit report 'matmul int4_g128 from=bf16' --size NxK --m 1,16`: the
// matmul's GPU module (compiler::compileMatmulToPtx: the GEMV, and the
// GEMM once it is emitted) through the shared analysis (runtime/report,
// docs/gpu-report.md) at each M, with the launches whose grid is not
// empty at that M (the others are skipped at run time too) and the
// model's inputs (runtime/report/MatmulTraffic.h).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TOOLS_LOWBIT_MATMULREPORT_H
#define LOWBIT_TOOLS_LOWBIT_MATMULREPORT_H

#include "lowbit/Expected.h"
#include "matmul/MatmulSpec.h"
#include "runtime/jit/LaunchPlan.h"
#include "runtime/report/GpuReport.h"
#include "target/Target.h"

#include <cstdint>
#include <string>

namespace lowbit::cli {

/// The default weights and rows of a matmul report: the first
/// shape, a decode step and a skinny batch.
constexpr int64_t kMatmulReportN = 4096, kMatmulReportK = 4096;
constexpr std::array<int64_t, 2> kMatmulReportRows = {1, 16};

/// One step of a launch plan at `shapes` (ReportCommand.cpp); the grid
/// strides when it does not double with `doubled`.
Expected<report::KernelLaunch> launchOfStep(const jit::LaunchStep &step,
                                            const jit::ParamShapes &shapes,
                                            const jit::ParamShapes &doubled);

/// The report of `spec` (its n and k dynamic, or n x k) with weights
/// [n, k] at m rows of X: the model's inputs line, then the report text
/// (or one markdown row).
Expected<std::string> reportMatmul(const matmul::MatmulSpec &spec, int64_t n,
                                   int64_t k, int64_t m, const Target &target,
                                   const report::ChipModel &chip,
                                   bool markdown);

} // namespace lowbit::cli

#endif // LOWBIT_TOOLS_LOWBIT_MATMULREPORT_H
