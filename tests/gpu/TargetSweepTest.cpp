//===- TargetSweepTest.cpp - Every scheme for every chip and PTX version --===//
//
// LLVM aborts the process on a PTX version too old for a chip and on a cvt
// the chip lacks, so the target table (lowering/Target.h) and the native
// conversion table (lowering/NativeConversionTable.h) must never promise
// more than LLVM 22 selects. This test compiles every named scheme and the
// user schemes that use the Blackwell cvts (rceil, FP6, NVFP4-like), both
// quantize and dequantize, for the chips and PTX versions of the table, in
// this process: a promise too many is an abort, and the test fails.
//
// The default run takes each chip's oldest, default and newest PTX
// version; the `sweep` label runs every version LLVM knows for every chip.
//
//===----------------------------------------------------------------------===//

#include "format/Scheme.h"
#include "lowering/GpuTail.h"
#include "runtime/compiler/Compiler.h"
#include "runtime/spec/KernelSpec.h"
#include "target/Target.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/Support/Error.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>

using namespace lowbit;

namespace {

/// User schemes that need the FP4/FP6/E8M0 cvts, beside the named ones.
const char *const kUserSchemes[] = {
    // MXFP4 with the cuBLAS/CUTLASS rounding-up scale rule.
    "scheme(format=e2m1,scale=group(32;axis=1),type=e8m0,rule=rceil,"
    "packing=nibble)",
    // MXFP6 e2m3 with rceil, and e3m2 in groups of 16.
    "scheme(format=e2m3,scale=group(32;axis=1),type=e8m0,rule=rceil)",
    "scheme(format=e3m2,scale=group(16;axis=1),type=e8m0,rule=floor)",
    // NVFP4 with vLLM's encode convention for the second-level scale.
    "scheme(format=e2m1,scale=group(16;axis=1),type=ue4m3,global=encode,"
    "packing=nibble)",
};

std::vector<KernelSpec> sweptSpecs() {
  std::vector<Scheme> schemes = namedSchemes();
  for (const char *text : kUserSchemes) {
    std::string error;
    std::optional<Scheme> scheme = parseSchemeText(text, &error);
    INFO(text << ": " << error);
    REQUIRE(scheme);
    schemes.push_back(*scheme);
  }
  std::vector<KernelSpec> specs;
  for (const Scheme &scheme : schemes)
    for (KernelOp op : {KernelOp::Quantize, KernelOp::Dequantize}) {
      KernelSpec spec;
      spec.op = op;
      spec.scheme = scheme;
      std::string error;
      INFO(printKernelSpec(spec) << ": " << error);
      REQUIRE(validateKernelSpec(spec, &error));
      specs.push_back(spec);
    }
  return specs;
}

std::vector<Target> sweptTargets(bool everyVersion) {
  std::vector<Target> targets;
  for (const ChipInfo &chip : knownChips()) {
    std::vector<unsigned> versions = ptxVersionsFor(chip);
    REQUIRE(!versions.empty());
    if (!everyVersion) {
      std::vector<unsigned> ends = {versions.front(), defaultPtxVersion(chip),
                                    versions.back()};
      std::sort(ends.begin(), ends.end());
      ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
      versions = ends;
    }
    for (unsigned version : versions) {
      Target target;
      target.kind = Target::Kind::Nvidia;
      target.chip = std::string(chip.name);
      target.ptxVersion = version;
      std::string error;
      INFO(target.str());
      REQUIRE(validateTarget(target, &error));
      targets.push_back(target);
    }
  }
  return targets;
}

void sweep(bool everyVersion) {
  mlir::DialectRegistry registry;
  compiler::registerCompilerDialects(registry);
  registerGpuTailDependencies(registry);
  mlir::MLIRContext context(registry);
  std::vector<Target> targets = sweptTargets(everyVersion);
  size_t compiled = 0, refused = 0, blackwellCvts = 0;
  for (const KernelSpec &spec : sweptSpecs()) {
    std::string name = printKernelSpec(spec);
    INFO(name);
    auto module = compiler::buildKernelModule(context, spec);
    if (!module)
      FAIL("buildKernelModule: " << llvm::toString(module.takeError()));
    if (llvm::Error loops = compiler::lowerForGpu(**module))
      FAIL("lowerForGpu: " << llvm::toString(std::move(loops)));
    for (const Target &target : targets) {
      INFO(target.str());
      mlir::OwningOpRef<mlir::ModuleOp> copy((**module).clone());
      std::string error;
      mlir::FailureOr<PtxModule> ptx = lowerToPtx(*copy, target, error);
      if (mlir::failed(ptx)) {
        // The tail's known gaps are refused by name; nothing else may fail.
        CHECK_THAT(error, Catch::Contains("does not yet support"));
        ++refused;
        continue;
      }
      CHECK(ptx->ptx.find(".version " + ptxVersionText(target.ptxVersion)) !=
            std::string::npos);
      CHECK(ptx->ptx.find(".target " + target.chip) != std::string::npos);
      if (ptx->ptx.find("e2m1x2") != std::string::npos ||
          ptx->ptx.find("ue8m0x2") != std::string::npos)
        ++blackwellCvts;
      ++compiled;
    }
  }
  std::printf("target-sweep: %zu targets, %zu compiled, %zu refused, %zu "
              "with Blackwell cvts\n",
              targets.size(), compiled, refused, blackwellCvts);
  // The sweep reached the native cvts it exists to check.
  CHECK(compiled > refused);
  CHECK(blackwellCvts > 0);
}

} // namespace

TEST_CASE("every scheme compiles or is refused for each chip's oldest, "
          "default and newest PTX",
          "[ptx][target-sweep]") {
  sweep(/*everyVersion=*/false);
}

TEST_CASE("every scheme compiles or is refused for every chip and PTX "
          "version",
          "[.sweep][ptx][target-sweep]") {
  sweep(/*everyVersion=*/true);
}

TEST_CASE("PTX versions LLVM 22 does not know are refused", "[target]") {
  std::string error;
  // LLVM would ignore +ptx89 with a warning and emit 8.0 instead.
  CHECK_FALSE(validateTarget("sm_89", 89, &error));
  CHECK_THAT(error, Catch::Contains("not a PTX version LLVM 22 knows"));
  CHECK_FALSE(validateTarget("sm_90a", 79, &error));
  CHECK(validateTarget("sm_89", 81, &error));
  CHECK(validateTarget("sm_101a", 90, &error));
}
