//===- PtxCompileBench.cpp - spec -> PTX: lowbit's JIT vs NVRTC -----------===//
//
// How long a caller waits for a quantize kernel's PTX: lowbit (kernel spec
// -> lowbit dialect -> loops -> GPU tail -> PTX, in process) next to NVRTC
// compiling the CUDA C++ reference kernel of the same scheme
// (runtime/nvrtc) to PTX, measured in the same run. PTX to PTX: neither
// side includes ptxas/nvJitLink (lowbit-bench-nvrtc reports NVRTC's link).
//
// lowbit is measured three ways, because they differ a lot:
//   first  - the first compile in the process (dialect registration, pass
//            and LLVM target initialization included);
//   fresh  - median of later compileToPtx calls, each with a new
//            MLIRContext (what compileToPtx does today);
//   reused - median of later compiles on one MLIRContext kept alive, as a
//            long-running JIT would do.
// Numbers only: never a test, never pass/fail on timing.
//
// usage: lowbit-bench-ptx [chip] [runs]
//
//===----------------------------------------------------------------------===//

#include "lowering/GpuTail.h"
#include "runtime/compiler/Compiler.h"
#include "runtime/nvrtc/ReferenceKernels.h"
#include "runtime/spec/KernelSpec.h"
#include "target/Target.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include "BenchTiming.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace lowbit;
using namespace lowbit::bench;

namespace {

struct Case {
  const char *label;
  const char *spec;   ///< lowbit's kernel spec text
  const char *scheme; ///< the NVRTC reference kernel's scheme
};

/// One compile on a context that outlives it.
bool compileOnContext(mlir::MLIRContext &context, const KernelSpec &spec,
                      const Target &target, std::string *error) {
  mlir::ScopedDiagnosticHandler quiet(
      &context, [](mlir::Diagnostic &) { return mlir::success(); });
  auto module = compiler::buildKernelModule(context, spec);
  if (!module) {
    *error = llvm::toString(module.takeError());
    return false;
  }
  if (llvm::Error lowerError = compiler::lowerForGpu(**module)) {
    *error = llvm::toString(std::move(lowerError));
    return false;
  }
  mlir::FailureOr<PtxModule> ptx = lowerToPtx(**module, target, *error);
  return mlir::succeeded(ptx);
}

} // namespace

int main(int argc, char **argv) {
  std::string chip = argc > 1 ? argv[1] : "sm_90a";
  int runs = argc > 2 ? std::max(1, std::atoi(argv[2])) : 7;
  std::string error;
  std::optional<Target> target = parseTarget(chip, &error);
  if (!target || !validateTarget(*target, &error) || !target->isNvidia()) {
    std::fprintf(stderr, "bad chip '%s': %s\n", chip.c_str(), error.c_str());
    return 1;
  }
  const Case cases[] = {
      {"mxfp4 dynamic", "quantize mxfp4 from=f32", "mxfp4"},
      {"fp8_e4m3 static", "quantize fp8_e4m3 from=f32 scale=static",
       "fp8_e4m3"},
      {"fp8_e4m3 dynamic", "quantize fp8_e4m3 from=f32 scale=dynamic",
       "fp8_e4m3"},
  };

  auto nvrtc = runtime::nvrtcLibrary();
  std::printf("spec -> PTX for %s (%s), f32 input; later = median of %d; "
              "ms\n",
              chip.c_str(), target->str().c_str(), runs);
  if (!nvrtc)
    std::printf("NVRTC: not available (%s)\n", nvrtc.error().message.c_str());
  std::printf("%-18s %9s %9s %9s %9s %9s %12s\n", "kernel", "lowbit 1st",
              "fresh ctx", "reused", "nvrtc 1st", "nvrtc", "fresh/nvrtc");

  std::unique_ptr<mlir::MLIRContext> shared = compiler::makeContext();
  for (const Case &c : cases) {
    std::optional<KernelSpec> spec = parseKernelSpec(c.spec, &error);
    if (!spec) {
      std::fprintf(stderr, "%s: %s\n", c.spec, error.c_str());
      return 1;
    }
    std::vector<double> fresh, reused;
    double first = 0;
    std::string refusal;
    for (int run = 0; run <= runs && refusal.empty(); ++run) {
      Clock::time_point start = Clock::now();
      auto ptx = compiler::compileToPtx(*spec, *target);
      double millis = millisSince(start);
      if (!ptx) {
        refusal = llvm::toString(ptx.takeError());
        break;
      }
      if (run == 0)
        first = millis;
      else
        fresh.push_back(millis);
    }
    for (int run = 0; run < runs && refusal.empty(); ++run) {
      Clock::time_point start = Clock::now();
      if (!compileOnContext(*shared, *spec, *target, &error)) {
        refusal = error;
        break;
      }
      reused.push_back(millisSince(start));
    }

    std::vector<double> nvrtcMillis;
    std::string nvrtcNote;
    if (nvrtc) {
      auto source = runtime::referenceKernelSource(c.scheme, "f32");
      for (int run = 0; source && run <= runs; ++run) {
        auto build =
            runtime::buildReferenceKernel(**nvrtc, nullptr, *source, chip);
        if (!build) {
          nvrtcNote = build.error().message;
          break;
        }
        nvrtcMillis.push_back(build->nvrtcMillis);
      }
      if (!source)
        nvrtcNote = source.error().message;
    }
    double nvrtcFirst = nvrtcMillis.empty() ? 0 : nvrtcMillis.front();
    double nvrtcLater =
        nvrtcMillis.size() > 1
            ? median({nvrtcMillis.begin() + 1, nvrtcMillis.end()})
            : 0;

    if (!refusal.empty()) {
      std::printf("%-18s refused: %s\n", c.label,
                  refusal.substr(0, refusal.find('\n')).c_str());
      continue;
    }
    double freshMedian = median(fresh);
    std::printf(
        "%-18s %9.1f %9.1f %9.1f %9.1f %9.1f %12s\n", c.label, first,
        freshMedian, median(reused), nvrtcFirst, nvrtcLater,
        nvrtcLater > 0
            ? (std::to_string(freshMedian / nvrtcLater).substr(0, 5) + "x")
                  .c_str()
            : "-");
    if (!nvrtcNote.empty())
      std::printf("  nvrtc: %s\n", nvrtcNote.c_str());
  }
  return 0;
}
