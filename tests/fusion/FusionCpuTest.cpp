//===- FusionCpuTest.cpp - Fused kernels on the CPU tail vs the reference -===//
//
// Every prologue x every named scheme, its input dtype rotating over
// f32/f16/bf16 (the whole cross product under the `sweep` label), at shapes
// with ragged tails: the JIT kernel's codes, scales, zero points, global scale
// and updated residual equal format/Prologue.h + format/Quantize.h bit for
// bit. Kernels have dynamic shapes where the prologue allows it (Hadamard
// needs static columns), so one compile serves several shapes.
//
//===----------------------------------------------------------------------===//

#include "runtime/compiler/Compiler.h"
#include "runtime/spec/KernelSpec.h"
#include "tests/fusion/FusionCheck.h"

#include <catch2/catch.hpp>

#include <iostream>

using namespace lowbit;
using namespace lowbit::compiler;

namespace {

/// Ragged for every group size of the named schemes (16, 32, 128): 48 and
/// 80 are multiples of 16 (Hadamard's block) but not of 32 or 128.
const std::pair<int64_t, int64_t> kShapes[] = {{1, 16}, {3, 48}, {5, 80}};

/// Every prologue x named scheme, each with one dtype or (`everyCase`)
/// with all of them (testing::takesFusedCase).
void checkFusedCases(bool everyCase) {
  int checked = 0, refused = 0;
  std::vector<Scheme> schemes = namedSchemes();
  for (size_t p = 0; p < std::size(testing::kPrologueCases); ++p)
    for (size_t s = 0; s < schemes.size(); ++s)
      for (size_t d = 0; d < std::size(testing::kFusedDtypes); ++d)
        for (auto [rows, cols] : kShapes) {
          if (!testing::takesFusedCase(p, s, d, everyCase))
            continue;
          auto [prologue, dynamic] = testing::kPrologueCases[p];
          const Scheme &scheme = schemes[s];
          const char *dtype = testing::kFusedDtypes[d];
          std::string text = std::string(prologue) + " | quantize " +
                             scheme.name + " from=" + dtype +
                             (dynamic ? std::string(" dynamic")
                                      : " rows=" + std::to_string(rows) +
                                            " cols=" + std::to_string(cols));
          std::string error;
          std::optional<KernelSpec> spec = parseKernelSpec(text, &error);
          INFO(text);
          REQUIRE(spec);
          if (!validateSchemeForShape(spec->scheme, rows, cols, &error)) {
            ++refused; // a scheme without tails and a ragged shape
            continue;
          }
          std::string result = testing::checkFused(*spec, rows, cols,
                                                   uint32_t(rows * 1000 + cols),
                                                   testing::runOnCpuJit);
          INFO(rows << "x" << cols);
          CHECK(result == "");
          ++checked;
        }
  std::cout << "fusion: " << checked << " fused kernels bit-exact on the CPU "
            << "tail (" << refused << " shapes refused by their scheme)\n";
  CHECK(checked > 0);
}

} // namespace

TEST_CASE("fusion: every prologue x named scheme is bit-exact on the CPU "
          "tail, dtypes rotating",
          "[fusion][cpu]") {
  checkFusedCases(/*everyCase=*/false);
}

TEST_CASE("fusion: every prologue x named scheme x dtype is bit-exact on the "
          "CPU tail",
          "[.sweep][fusion][cpu]") {
  checkFusedCases(/*everyCase=*/true);
}

TEST_CASE("fusion: a chain of prologues and a static shape", "[fusion][cpu]") {
  for (const char *text :
       {"smooth | rmsnorm(eps=1e-6) | quantize nvfp4 from=bf16 rows=7 "
        "cols=96",
        "silu_mul | hadamard(row) | quantize mxfp4 from=f16 rows=3 cols=64",
        "add_rmsnorm(eps=1e-6) | map(x * 2) | quantize fp8_e4m3 from=bf16 "
        "dynamic"}) {
    INFO(text);
    std::optional<KernelSpec> spec = parseKernelSpec(text);
    REQUIRE(spec);
    int64_t rows = spec->rows == kDynamic ? 9 : spec->rows;
    int64_t cols = spec->cols == kDynamic ? 33 : spec->cols;
    CHECK(testing::checkFused(*spec, rows, cols, 7, testing::runOnCpuJit) ==
          "");
  }
}

TEST_CASE("fusion: a CPU fused kernel on a pooled context that compiled GPU "
          "kernels first",
          "[fusion][cpu]") {
  // The compiler's registry leaves out the bufferization models of tensor
  // and linalg (they load linalg with every tensor); the fusion pass adds
  // them to a context whose tensor dialect is loaded already.
  std::optional<KernelSpec> gpuSpec =
      parseKernelSpec("rmsnorm(eps=1e-6) | quantize mxfp8 from=bf16 dynamic");
  REQUIRE(gpuSpec);
  std::string error;
  std::optional<Target> target = parseTarget("sm_90a", &error);
  REQUIRE(target);
  auto ptx = compileToPtx(*gpuSpec, *target);
  REQUIRE(static_cast<bool>(ptx));
  std::optional<KernelSpec> cpuSpec =
      parseKernelSpec("add_rmsnorm(eps=1e-6) | quantize nvfp4 from=f16 "
                      "dynamic");
  REQUIRE(cpuSpec);
  CHECK(testing::checkFused(*cpuSpec, 5, 48, 11, testing::runOnCpuJit) == "");
}
