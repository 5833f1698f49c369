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
#include "runtime/compiler/Compiler.h"
#include "runtime/spec/KernelSpec.h"
#include "target/Target.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/Support/Error.h"

#include <catch2/catch.hpp>

#include <iostream>
#include <iterator>
#include <memory>
#include <span>
#include <vector>

using namespace lowbit;

namespace {

/// `text` through the production path to PTX for each of `archs`, each
/// assembled by ptxas; returns the PTX texts that assembled.
std::vector<std::string> assembleFused(mlir::MLIRContext &context,
                                       const std::string &text,
                                       std::span<const char *const> archs) {
  INFO(text);
  std::optional<KernelSpec> spec = parseKernelSpec(text);
  REQUIRE(spec);
  std::string error;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      test::gpuLoopsModule(context, *spec, error);
  if (!module)
    FAIL(error);
  std::vector<std::string> assembled;
  for (test::ArchPtx &result : test::ptxForArchs(*module, archs)) {
    INFO(result.arch << ": " << result.error);
    REQUIRE(result.ptx);
    CHECK(result.ptx->ptx.find("__nv_") == std::string::npos); // no libdevice
    if (test::checkAssembles(result.ptx->ptx, result.arch))
      assembled.push_back(std::move(result.ptx->ptx));
  }
  return assembled;
}

struct PtxContext {
  PtxContext() {
    compiler::registerCompilerDialects(registry);
    registerGpuTailDependencies(registry);
    context = std::make_unique<mlir::MLIRContext>(registry);
  }
  mlir::DialectRegistry registry;
  std::unique_ptr<mlir::MLIRContext> context;
};

} // namespace

TEST_CASE("fusion: every prologue x named scheme assembles for the five "
          "targets",
          "[fusion][ptx]") {
  PtxContext ptx;
  INFO("ptxas not found (CUDA_HOME/bin/ptxas); the CUDA toolkit is required");
  REQUIRE(!test::ptxasPath().empty());

  const char *const archs[] = {"sm_80", "sm_89", "sm_90a", "sm_100a",
                               "sm_120a"};
  size_t assembled = 0;
  size_t schemes = 0;
  for (const Scheme &scheme : namedSchemes()) {
    const char *prologue =
        testing::kPrologueCases[schemes++ % std::size(testing::kPrologueCases)]
            .text;
    assembled += assembleFused(*ptx.context,
                               std::string(prologue) + " | quantize " +
                                   scheme.name + " from=bf16 rows=4 cols=256",
                               archs)
                     .size();
  }
  std::cout << "fusion: " << assembled << " fused kernels assemble (ptxas)\n";
  CHECK(assembled == 10 * 5);
}

TEST_CASE("fusion: Hadamard rotations staged in shared memory assemble for "
          "sm_80 and sm_90a",
          "[fusion][ptx]") {
  PtxContext ptx;
  REQUIRE(!test::ptxasPath().empty());
  const char *const archs[] = {"sm_80", "sm_90a"};
  const char *specs[] = {
      "hadamard(row) | quantize mxfp4 from=bf16 rows=4 cols=1024",
      "hadamard(4096) | quantize nvfp4 from=f16 rows=4 cols=4096",
      "hadamard(64) | hadamard(256) | quantize int8 from=f32 rows=4 cols=512",
      ("rmsnorm(eps=1e-6) | hadamard(128) | quantize int4_g128 rows=4 "
       "cols=256")};
  size_t assembled = 0;
  for (const char *text : specs)
    for (const std::string &kernelPtx :
         assembleFused(*ptx.context, text, archs)) {
      INFO(text);
      // The butterflies run in shared memory between warp syncs.
      CHECK(kernelPtx.find("bar.warp.sync") != std::string::npos);
      CHECK(kernelPtx.find("st.shared.") != std::string::npos);
      ++assembled;
    }
  CHECK(assembled == std::size(specs) * std::size(archs));
}
