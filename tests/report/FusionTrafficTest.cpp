//===- FusionTrafficTest.cpp - Fused vs unfused bytes, by hand ------------===//

#include "runtime/report/FusionTraffic.h"

#include <catch2/catch.hpp>

using namespace lowbit;

namespace {
KernelSpec parsed(const std::string &text) {
  std::string error;
  std::optional<KernelSpec> spec = parseKernelSpec(text, &error);
  INFO(text << ": " << error);
  REQUIRE(spec);
  return *spec;
}
} // namespace

TEST_CASE("fused and unfused bytes per element", "[report][fusion]") {
  // docs/fusion.md's example: bf16 into NVFP4 at [T, 4096]: reads 2, codes
  // 1/2, ue4m3 scales 1/16, the f32 global scale and the bf16 weight row
  // once; unfused also writes and reads the bf16 intermediate (4 bytes).
  int64_t rows = 256, cols = 4096;
  double elements = double(rows * cols);
  auto nvfp4 = report::fusionTraffic(
      parsed("rmsnorm | quantize nvfp4 from=bf16"), rows, cols);
  double fused = 2 + 0.5 + 0.0625 + (4 + 2.0 * cols) / elements;
  CHECK(nvfp4.fusedPerElement == Approx(fused).epsilon(1e-12));
  CHECK(nvfp4.unfusedPerElement == Approx(fused + 4).epsilon(1e-12));
  CHECK(nvfp4.unfusedKernels == 2);

  // add_rmsnorm: the residual is read and written by both (2 x 2 bytes).
  auto add = report::fusionTraffic(
      parsed("add_rmsnorm | quantize fp8_e4m3 from=bf16"), rows, cols);
  double addFused = 2 + 2 + 2 + 1 + (4 + 2.0 * cols) / elements;
  CHECK(add.fusedPerElement == Approx(addFused).epsilon(1e-12));
  CHECK(add.unfusedPerElement == Approx(addFused + 4).epsilon(1e-12));

  // silu_mul reads two input values per quantized element; mxfp4 codes 1/2,
  // e8m0 scales 1/32.
  auto silu = report::fusionTraffic(
      parsed("silu_mul | quantize mxfp4 from=f16"), 8, 64);
  CHECK(silu.fusedPerElement == Approx(4 + 0.5 + 1.0 / 32).epsilon(1e-12));
  CHECK(silu.unfusedPerElement == Approx(8 + 0.5 + 1.0 / 32).epsilon(1e-12));

  // A chain of two prologues has two intermediates; no prologue, none.
  auto chain = report::fusionTraffic(
      parsed("smooth | hadamard(32) | quantize mxfp4 rows=4 cols=64"), 4, 64);
  CHECK(chain.unfusedKernels == 3);
  CHECK(chain.unfusedPerElement - chain.fusedPerElement ==
        Approx(2 * 2 * 4).epsilon(1e-12));
  auto plain = report::fusionTraffic(parsed("quantize mxfp4"), 4, 64);
  CHECK(plain.unfusedBytes == plain.fusedBytes);
}
