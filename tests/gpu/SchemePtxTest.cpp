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
#include "runtime/compiler/Compiler.h"
#include "target/Target.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/Support/Error.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <iterator>

using namespace lowbit;

TEST_CASE("every named scheme's kernel lowers to PTX that assembles",
          "[ptx][scheme]") {
  mlir::DialectRegistry registry;
  compiler::registerCompilerDialects(registry);
  registerGpuTailDependencies(registry);
  mlir::MLIRContext context(registry);
  INFO("ptxas not found (CUDA_HOME/bin/ptxas); the CUDA toolkit is required");
  REQUIRE(!test::ptxasPath().empty());

  const char *const archs[] = {"sm_80", "sm_89", "sm_90a", "sm_100a",
                               "sm_120a"};
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
      std::string error;
      mlir::OwningOpRef<mlir::ModuleOp> module =
          test::gpuLoopsModule(context, spec, error);
      if (!module) {
        FAIL_CHECK(error);
        continue;
      }
      size_t refusedHere = 0;
      for (const test::ArchPtx &result : test::ptxForArchs(*module, archs)) {
        INFO(result.arch);
        const char *opName =
            op == KernelOp::Quantize ? "quantize" : "dequantize";
        if (!result.ptx) {
          // Known gaps of the tail (docs/gpu.md), refused by name.
          CHECK_THAT(result.error, Catch::Contains("does not yet support"));
          CHECK(op == KernelOp::Quantize);
          ++refusedHere;
          std::printf("scheme-ptx: %-12s %-10s %-7s refused: %s\n",
                      scheme.name.c_str(), opName, result.arch,
                      result.error.c_str());
          ++refused;
          continue;
        }
        CHECK(result.ptx->ptx.find("__nv_") ==
              std::string::npos); // no libdevice
        bool assembles = test::checkAssembles(result.ptx->ptx, result.arch);
        std::printf("scheme-ptx: %-12s %-10s %-7s %zu kernel(s), ptxas %s\n",
                    scheme.name.c_str(), opName, result.arch,
                    result.ptx->kernelNames.size(),
                    assembles ? "ok" : "FAILED");
        ++compiled;
      }
      // Refused everywhere or nowhere: the chip must not decide.
      CHECK((refusedHere == 0 || refusedHere == std::size(archs)));
    }
  }
  CHECK(compiled >= namedSchemes().size() * std::size(archs));
  std::printf("scheme-ptx: %zu compiled, %zu refused\n", compiled, refused);
}
