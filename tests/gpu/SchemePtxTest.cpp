//===- SchemePtxTest.cpp - Every named scheme through the GPU tail --------===//
//
// The production path up to PTX: runtime/compiler builds the kernel module
// for a spec and runs lowbit-to-loops; lowering/GpuTail lowers it for each
// target arch; ptxas assembles it. A kernel the tail cannot map yet must
// come back as a clear refusal, never as an abort or as PTX that does not
// assemble. A refusal is about the kernel, never the chip, and a run where
// everything is refused checks nothing: so a spec refused on one arch must
// be refused on all, no dequantize (no reduction) may be refused, and at
// least every scheme's dequantize must compile and assemble everywhere.
//
//===----------------------------------------------------------------------===//

#include "GpuTestSupport.h"

#include "format/Scheme.h"
#include "lowering/GpuTail.h"
#include "lowering/Target.h"
#include "runtime/compiler/Compiler.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/Support/Error.h"

#include <catch2/catch.hpp>

#include <cstdio>

using namespace lowbit;

TEST_CASE("every named scheme's kernel lowers to PTX that assembles",
          "[ptx][scheme]") {
  mlir::DialectRegistry registry;
  compiler::registerCompilerDialects(registry);
  registerGpuTailDependencies(registry);
  mlir::MLIRContext context(registry);
  bool havePtxas = !test::ptxasPath().empty();
  INFO("ptxas not found (CUDA_HOME/bin/ptxas); the CUDA toolkit is required");
  REQUIRE(havePtxas);

  const std::vector<const char *> archs = {"sm_80", "sm_89", "sm_90a",
                                           "sm_100a", "sm_120a"};
  size_t compiled = 0, refused = 0;
  for (const Scheme &scheme : namedSchemes()) {
    for (KernelOp op : {KernelOp::Quantize, KernelOp::Dequantize}) {
      KernelSpec spec;
      spec.op = op;
      spec.scheme = scheme;
      std::string what =
          scheme.name +
          (op == KernelOp::Quantize ? " quantize" : " dequantize");
      INFO(what);
      auto module = compiler::buildKernelModule(context, spec);
      if (!module) {
        FAIL_CHECK("buildKernelModule: " << llvm::toString(module.takeError()));
        continue;
      }
      llvm::Error loops = compiler::lowerForGpu(**module);
      if (loops) {
        FAIL_CHECK("lowerForGpu: " << llvm::toString(std::move(loops)));
        continue;
      }
      size_t refusedHere = 0;
      for (const char *arch : archs) {
        INFO(arch);
        mlir::OwningOpRef<mlir::ModuleOp> copy((**module).clone());
        std::string error;
        mlir::FailureOr<PtxModule> ptx =
            lowerToPtx(*copy, *parseTarget(arch, nullptr), error);
        if (mlir::failed(ptx)) {
          // Known gaps of the tail (docs/gpu.md), refused by name.
          CHECK_THAT(error, Catch::Contains("does not yet support"));
          CHECK(op == KernelOp::Quantize);
          ++refusedHere;
          std::printf("scheme-ptx: %-12s %-10s %-7s refused: %s\n",
                      scheme.name.c_str(),
                      op == KernelOp::Quantize ? "quantize" : "dequantize",
                      arch, error.c_str());
          ++refused;
          continue;
        }
        CHECK(ptx->ptx.find("__nv_") == std::string::npos); // no libdevice
        std::string log;
        bool assembles = !havePtxas || test::ptxAssembles(ptx->ptx, arch, log);
        INFO(log);
        CHECK(assembles);
        std::printf("scheme-ptx: %-12s %-10s %-7s %zu kernel(s), ptxas %s\n",
                    scheme.name.c_str(),
                    op == KernelOp::Quantize ? "quantize" : "dequantize", arch,
                    ptx->kernelNames.size(),
                    !havePtxas  ? "skipped"
                    : assembles ? "ok"
                                : "FAILED");
        ++compiled;
      }
      // Refused everywhere or nowhere: the chip must not decide.
      CHECK((refusedHere == 0 || refusedHere == archs.size()));
    }
  }
  CHECK(compiled >= namedSchemes().size() * archs.size());
  std::printf("scheme-ptx: %zu compiled, %zu refused\n", compiled, refused);
}
