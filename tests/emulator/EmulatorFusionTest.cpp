//===- EmulatorFusionTest.cpp - Fused GPU kernels, run on the CPU ---------===//
//
// Every prologue x named scheme at ragged shapes, the input dtype rotating
// over f32/f16/bf16 (the whole cross product under the `sweep` label, and
// the staged Hadamard blocks likewise): the fused
// kernels as lowbit-to-gpu and the GPU tail make them (sm_100a, native
// FP4/FP6/E8M0 cvts) run in the emulator, and their codes, scales, zero
// points, global scale and updated residual equal format/Prologue.h +
// format/Quantize.h bit for bit (tests/fusion/FusionCheck.h).
//
//===----------------------------------------------------------------------===//

#include "tests/emulator/EmulatorTestSupport.h"
#include "tests/fusion/FusionCheck.h"

#include "format/Scheme.h"
#include "runtime/spec/KernelSpec.h"

#include <catch2/catch.hpp>

#include <iostream>
#include <span>

using namespace lowbit;

namespace {

/// Ragged for every group size (16, 32, 64, 128) and for the warp's 32
/// strided partial sums; 272 = 8.5 warps of columns.
const std::pair<int64_t, int64_t> kShapes[] = {
    {1, 16}, {3, 48}, {5, 80}, {9, 272}};

/// Runs `text` at every shape of `shapes` (a static spec at its own shape
/// only); returns the runs that were bit-exact.
int checkSpec(const std::string &text, emulator::Device &device, int &refused,
              std::span<const std::pair<int64_t, int64_t>> shapes = kShapes) {
  std::optional<KernelSpec> spec = parseKernelSpec(text);
  INFO(text);
  REQUIRE(spec);
  auto program = emulator::EmulatedProgram::compile(
      *spec, testing::targetNamed("sm_100a"));
  if (!program)
    FAIL("compile: " << program.error().message);
  testing::KernelRunner run = testing::emulatorRunner(**program, device);
  int exact = 0;
  for (auto [rows, cols] : shapes) {
    if (spec->cols != kDynamic && spec->cols != cols)
      continue;
    std::string error;
    if (!validateSchemeForShape(spec->scheme, rows, cols, &error)) {
      ++refused;
      continue;
    }
    std::string mismatch = testing::checkFused(
        *spec, rows, cols, uint32_t(rows * 1000 + cols), run);
    INFO(rows << "x" << cols);
    CHECK(mismatch == "");
    exact += mismatch.empty();
  }
  return exact;
}

/// Every prologue x named scheme, each with one dtype or (`everyCase`) with
/// all of them (testing::takesFusedCase).
void checkFusedCases(bool everyCase) {
  emulator::Device device;
  int exact = 0, refused = 0, taken = 0;
  std::vector<Scheme> schemes = namedSchemes();
  for (size_t p = 0; p < std::size(testing::kPrologueCases); ++p)
    for (size_t s = 0; s < schemes.size(); ++s)
      for (size_t d = 0; d < std::size(testing::kFusedDtypes); ++d) {
        if (!testing::takesFusedCase(p, s, d, everyCase))
          continue;
        ++taken;
        auto [prologue, dynamic] = testing::kPrologueCases[p];
        std::string text = std::string(prologue) + " | quantize " +
                           schemes[s].name +
                           " from=" + testing::kFusedDtypes[d];
        if (dynamic) {
          exact += checkSpec(text + " dynamic", device, refused);
          continue;
        }
        for (auto [rows, cols] : kShapes)
          exact += checkSpec(text + " rows=" + std::to_string(rows) +
                                 " cols=" + std::to_string(cols),
                             device, refused);
      }
  std::cout << "emulator: " << exact << " fused kernel runs bit-exact ("
            << refused << " shapes refused by their scheme), "
            << device.stats().launches << " launches\n";
  CHECK(exact >= taken * int(std::size(kShapes)));
}

/// The staged Hadamard cases, each scheme with one dtype (rotating) or
/// (`everyCase`) with all three.
void checkStagedHadamard(bool everyCase) {
  // Blocks wider than kMaxGpuHadamardBlock run their butterflies in shared
  // memory; 4096-column rows leave room for 2 warps per block, so 3 rows
  // take two blocks. nvfp4 adds the global scale's statistics launch,
  // int8 the per-tensor scale's two launches.
  const struct {
    const char *prologue;
    int64_t rows, cols;
  } cases[] = {
      {"hadamard(64)", 5, 256},
      {"hadamard(256)", 3, 512},
      {"hadamard(row)", 3, 1024},
      {"rmsnorm(eps=1e-6) | hadamard(row) | map(x * 0.5)", 2, 1024},
      {"hadamard(128) | hadamard(64)", 3, 256},
      {"silu_mul | hadamard(64) | smooth", 9, 128},
      {"hadamard(4096)", 3, 4096},
  };
  const char *const schemes[] = {"mxfp4", "nvfp4", "int8", "int4_g128"};
  emulator::Device device;
  int exact = 0, refused = 0, runs = 0;
  for (size_t c = 0; c < std::size(cases); ++c)
    for (size_t s = 0; s < std::size(schemes); ++s)
      for (size_t d = 0; d < std::size(testing::kFusedDtypes); ++d) {
        if (!testing::takesFusedCase(c, s, d, everyCase))
          continue;
        const auto &[prologue, rows, cols] = cases[c];
        const char *scheme = schemes[s];
        const char *dtype = testing::kFusedDtypes[d];
        std::pair<int64_t, int64_t> shape = {rows, cols};
        exact +=
            checkSpec(std::string(prologue) + " | quantize " + scheme +
                          " from=" + dtype + " rows=" + std::to_string(rows) +
                          " cols=" + std::to_string(cols),
                      device, refused, {&shape, 1});
        ++runs;
      }
  std::cout << "emulator: " << exact << " of " << runs
            << " staged-Hadamard fused kernel runs bit-exact\n";
  CHECK(refused == 0);
  CHECK(exact == runs);
}

} // namespace

TEST_CASE("fused kernels: every prologue x named scheme is bit-exact in the "
          "emulator, dtypes rotating",
          "[emulator][fusion]") {
  checkFusedCases(/*everyCase=*/false);
}

TEST_CASE("fused kernels: every prologue x named scheme x dtype is bit-exact "
          "in the emulator",
          "[.sweep][emulator][fusion]") {
  checkFusedCases(/*everyCase=*/true);
}

TEST_CASE("fused kernels: Hadamard blocks from 64 to 4096 columns, staged in "
          "shared memory, are bit-exact in the emulator, dtypes rotating",
          "[emulator][fusion]") {
  checkStagedHadamard(/*everyCase=*/false);
}

TEST_CASE("fused kernels: Hadamard blocks from 64 to 4096 columns, staged in "
          "shared memory, x dtype are bit-exact in the emulator",
          "[.sweep][emulator][fusion]") {
  checkStagedHadamard(/*everyCase=*/true);
}

TEST_CASE("fused kernels: rows that are not whole 16-byte chunks take the "
          "column-by-column path, bit-exact in the emulator",
          "[emulator][fusion]") {
  // Rows of whole 16-byte chunks read each input's chunk with one vector
  // load. 42 columns (and 20 of a 16-bit input) are not whole chunks: the
  // rows are not 16-byte aligned, so every chunk is evaluated column by
  // column, guarded, and the last is partial; 40 columns take the vector
  // path in the same kernel. The schemes cover the row-group launch
  // (nvfp4 with its statistics launch, mxfp8, int4_g128 with its zero
  // points; silu_mul's input rows are twice its codes' rows) and the
  // per-tensor launches.
  const char *const specs[] = {
      "rmsnorm(eps=1e-6) | quantize nvfp4 from=bf16",
      "add_rmsnorm(eps=1e-5) | quantize mxfp8 from=f32",
      "silu_mul | quantize int4_g128 from=f16",
      "smooth | quantize fp8_e4m3 from=bf16",
      "map(x * 0.5) | quantize int8 from=f32",
  };
  const std::pair<int64_t, int64_t> shapes[] = {{2, 42}, {3, 20}, {2, 40}};
  emulator::Device device;
  int exact = 0, refused = 0;
  for (const char *spec : specs)
    exact += checkSpec(std::string(spec) + " dynamic", device, refused, shapes);
  CHECK(refused == 0);
  CHECK(exact == int(std::size(specs) * std::size(shapes)));
}

TEST_CASE("fused kernels: per-token scales are bit-exact in the emulator",
          "[emulator][fusion]") {
  // One scale per row (no named scheme has it): the warp's statistics
  // meet in xor shuffles over all 32 lanes and lane 0 stores the scale
  // and zero point (GpuReductionBuilder::pickLaneGroupScale).
  const char *const specs[] = {
      "rmsnorm(eps=1e-6) | quantize scheme(format=e4m3,scale=per_token) "
      "from=bf16",
      "add_rmsnorm(eps=1e-5) | quantize "
      "scheme(format=int4,scale=per_token,packing=nibble) from=f16",
      "smooth | quantize scheme(format=uint8,scale=per_token,rule=minmax,"
      "zero_point=true) from=f32",
  };
  emulator::Device device;
  int exact = 0, refused = 0;
  for (const char *spec : specs)
    exact += checkSpec(std::string(spec) + " dynamic", device, refused);
  CHECK(refused == 0);
  CHECK(exact == int(std::size(specs) * std::size(kShapes)));
}
