//===- OptLevelTest.cpp - The GPU tail's LLVM level gives O3's PTX --------===//
//
// The GPU tail chooses LLVM's level per module: O2 for loop-free kernels,
// O3 for kernels with loops, the cheapest levels found to give the same PTX
// as O3 (GpuTail.h, docs/pipeline.md). This checks that claim byte for byte
// for every named scheme's quantize and dequantize kernels on sm_90a
// (H100/H200) and sm_100a (B200), so a change to the kernels or to LLVM
// that makes the cheaper level emit different code fails here instead of
// silently shipping slower kernels. O1 must differ from O3 for some kernel,
// or the comparison could not see a difference. Since the grid-stride
// loops of lowbit-to-gpu every named kernel has a loop and gets O3; the
// count of kernels at the cheaper level is printed, not required.
//
//===----------------------------------------------------------------------===//

#include "GpuTestSupport.h"

#include "format/Scheme.h"
#include "lowering/GpuTail.h"
#include "lowering/Target.h"
#include "runtime/compiler/Compiler.h"

#include "mlir/IR/MLIRContext.h"

#include "llvm/Support/Error.h"

#include <catch2/catch.hpp>

#include <cstdio>

using namespace lowbit;

namespace {

/// The PTX of a loops-level module (cloned, so the caller can reuse it) at
/// one LLVM level.
PtxModule ptxAt(mlir::ModuleOp loops, const char *arch,
                std::optional<int> level) {
  mlir::OwningOpRef<mlir::ModuleOp> copy(loops.clone());
  std::string error;
  PtxOptions options;
  options.optLevel = level;
  mlir::FailureOr<PtxModule> ptx =
      lowerToPtx(*copy, *parseTarget(arch, nullptr), error, options);
  INFO(error);
  REQUIRE(mlir::succeeded(ptx));
  return std::move(*ptx);
}

} // namespace

TEST_CASE("the chosen LLVM level gives O3's PTX for every named kernel",
          "[ptx][optlevel]") {
  compiler::ContextLease context = compiler::borrowContext();
  size_t compared = 0, cheaper = 0, differentAtO1 = 0;
  for (const Scheme &scheme : namedSchemes()) {
    for (KernelOp op : {KernelOp::Quantize, KernelOp::Dequantize}) {
      KernelSpec spec;
      spec.op = op;
      spec.scheme = scheme;
      std::string what =
          scheme.name +
          (op == KernelOp::Quantize ? " quantize" : " dequantize");
      INFO(what);
      std::string error;
      mlir::OwningOpRef<mlir::ModuleOp> module =
          test::gpuLoopsModule(*context, spec, error);
      if (!module)
        FAIL(error);
      for (const char *arch : {"sm_90a", "sm_100a"}) {
        INFO(arch);
        std::string reference = ptxAt(*module, arch, 3).ptx;
        PtxModule chosen = ptxAt(*module, arch, std::nullopt);
        CHECK(chosen.ptx == reference);
        ++compared;
        if (chosen.optLevel < 3)
          ++cheaper;
        // One kernel is enough to show that a difference is seen (O1 differs
        // from O3 on several; since the grid-stride loops every named kernel
        // has a loop, so the chosen level is O3 for all of them).
        if (differentAtO1 == 0 && ptxAt(*module, arch, 1).ptx != reference)
          ++differentAtO1;
      }
    }
  }
  CHECK(compared == namedSchemes().size() * 2 * 2);
  CHECK(differentAtO1 > 0);
  std::printf("opt-level: chosen-level PTX == O3 PTX for %zu kernels, %zu of "
              "them at O%d\n",
              compared, cheaper, kLoopFreePtxOptLevel);
}

TEST_CASE("an LLVM level outside 0..3 is an error, not an abort",
          "[ptx][optlevel]") {
  compiler::ContextLease context = compiler::borrowContext();
  KernelSpec spec;
  std::string error;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      test::gpuLoopsModule(*context, spec, error);
  if (!module)
    FAIL(error);
  for (int level : {-1, 4}) {
    PtxOptions options;
    options.optLevel = level;
    mlir::FailureOr<PtxModule> ptx =
        lowerToPtx(*module, *parseTarget("sm_90a", nullptr), error, options);
    CHECK(mlir::failed(ptx));
    CHECK_THAT(error, Catch::Contains("must be 0..3"));
  }
}
