//===- FusionPtxTest.cpp - Fused GPU kernels assemble for every target ----===//
//
// Every named scheme, each behind one of the prologues in turn (so every
// prologue is seen; bf16 input), through the production path to PTX
// (buildKernelModule, lowerForGpu, the GPU tail) for the five targets the
// project tests; ptxas assembles each. A fused kernel is never refused
// here: every named scheme has a fused GPU lowering. (The emulator test
// runs every prologue x scheme x dtype through the same tail.)
//
//===----------------------------------------------------------------------===//

#include "tests/fusion/FusionCheck.h"
#include "tests/gpu/GpuTestSupport.h"

#include "format/Scheme.h"
#include "lowering/GpuTail.h"
#include "lowering/Target.h"
#include "runtime/compiler/Compiler.h"
#include "runtime/spec/KernelSpec.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/Support/Error.h"

#include <catch2/catch.hpp>

#include <iostream>
#include <iterator>

using namespace lowbit;

TEST_CASE("fusion: every prologue x named scheme assembles for the five "
          "targets",
          "[fusion][ptx]") {
  mlir::DialectRegistry registry;
  compiler::registerCompilerDialects(registry);
  registerGpuTailDependencies(registry);
  mlir::MLIRContext context(registry);
  INFO("ptxas not found (CUDA_HOME/bin/ptxas); the CUDA toolkit is required");
  REQUIRE(!test::ptxasPath().empty());

  const char *archs[] = {"sm_80", "sm_89", "sm_90a", "sm_100a", "sm_120a"};
  int assembled = 0;
  size_t schemes = 0;
  for (const Scheme &scheme : namedSchemes()) {
    const char *prologue =
        testing::kPrologueCases[schemes++ % std::size(testing::kPrologueCases)]
            .text;
    std::string text = std::string(prologue) + " | quantize " + scheme.name +
                       " from=bf16 rows=4 cols=256";
    INFO(text);
    std::optional<KernelSpec> spec = parseKernelSpec(text);
    REQUIRE(spec);
    auto module = compiler::buildKernelModule(context, *spec);
    if (!module)
      FAIL("buildKernelModule: " << llvm::toString(module.takeError()));
    llvm::Error lowered = compiler::lowerForGpu(**module);
    if (lowered)
      FAIL("lowerForGpu: " << llvm::toString(std::move(lowered)));
    for (const char *arch : archs) {
      INFO(arch);
      mlir::OwningOpRef<mlir::ModuleOp> copy((**module).clone());
      std::string error;
      mlir::FailureOr<PtxModule> ptx =
          lowerToPtx(*copy, *parseTarget(arch, nullptr), error);
      INFO(error);
      REQUIRE(mlir::succeeded(ptx));
      CHECK(ptx->ptx.find("__nv_") == std::string::npos); // no libdevice
      std::string log;
      bool assembles = test::ptxAssembles(ptx->ptx, arch, log);
      INFO(log);
      CHECK(assembles);
      assembled += assembles;
    }
  }
  std::cout << "fusion: " << assembled << " fused kernels assemble (ptxas)\n";
  CHECK(assembled == 10 * 5);
}
