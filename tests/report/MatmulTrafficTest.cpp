//===- MatmulTrafficTest.cpp - The matmul's inputs to the report model ----===//
//
// runtime/report/MatmulTraffic.h on the committed PTX and SASS of
// `matmul int4_g128 from=bf16` (the GEMV, sm_90a; `lowbit report` compiled
// them): the bytes, the loop of M's row bucket and the estimate it gives,
// pinned, so that a change of the model or of its inputs shows here.
//
//===----------------------------------------------------------------------===//

#include "runtime/report/MatmulTraffic.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <array>
#include <fstream>
#include <sstream>

using namespace lowbit;
using namespace lowbit::report;

namespace {

std::string readReportData(const std::string &name) {
  std::ifstream file(std::string(LOWBIT_TEST_DATA_DIR) + "/report/" + name);
  REQUIRE(file);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

/// One row-bucket kernel of the GEMV of int4_g128 (asymmetric, f16
/// scales, i8 zeros) for a bf16 X [m, 4096] and 4096 x 4096 weights, as
/// `lowbit report` builds it: the ABI's five 2-D buffers, each a 7-slot
/// descriptor, blocks of 8 warps. The committed PTX and SASS hold the whole
/// module (the three GEMV kernels and the GEMM); M = 1 runs kernel_kernel
/// (two columns a warp: N / 16 blocks, 126 registers, 3,136 B of shared
/// memory per nvJitLink), M = 16 kernel_kernel_1 (one column a warp: N / 8
/// blocks, 255 registers, 17,920 B).
SpecInput gemvInput(int64_t m) {
  constexpr int64_t n = 4096, k = 4096;
  bool single = m == 1;
  SpecInput input;
  input.title = "matmul int4_g128 from=bf16";
  std::optional<ChipModel> chip = chipModel("sm_90a");
  REQUIRE(chip);
  input.chip = *chip;
  input.ptx = readReportData("matmul_int4_g128_bf16.ptx");
  input.sass = readReportData("matmul_int4_g128_bf16.sm_90a.sass");
  input.buffers = {matmulBuffer("x", m * k * 2, false),
                   matmulBuffer("codes", n * k / 2, false),
                   matmulBuffer("scales", n * (k / 128) * 2, false),
                   matmulBuffer("zeros", n * (k / 128), false),
                   matmulBuffer("y", m * n * 2, true)};
  setMatmulTraffic(input, {m, n, k});
  KernelLaunch launch;
  launch.kernel = single ? "kernel_kernel" : "kernel_kernel_1";
  launch.grid = {single ? n / 16 : n / 8, 1, 1};
  launch.block = {256, 1, 1};
  for (int buffer = 0; buffer < 5; ++buffer)
    launch.bufferOfParameter.insert(launch.bufferOfParameter.end(),
                                    {buffer, buffer, -1, -1, -1, -1, -1});
  input.launches = {launch};
  runtime::KernelResources resources;
  resources.function = launch.kernel;
  resources.registers = single ? 126 : 255;
  resources.sharedBytes = single ? 3136 : 17920;
  input.resources = {resources};
  return input;
}

} // namespace

TEST_CASE("matmul: every ABI buffer once, the codes streamed", "[report]") {
  SpecInput input = gemvInput(1);
  CHECK(input.buffers[1].role == "input");
  CHECK(input.op == KernelOp::Quantize);
  CHECK(input.elements == 4096 * 4096);
  // x 8 KiB, codes 8 MiB, scales 256 KiB, zeros 128 KiB, y 8 KiB.
  CHECK(input.minimumBytes == 8192 + 8388608 + 262144 + 131072 + 8192);
}

TEST_CASE("matmul: the GEMV's loop of M's row bucket from the SASS",
          "[report]") {
  // M = 1: the loop reads two columns' 16 code bytes and X's 64 bytes (102
  // B with the group's scale and zero point); M = 16: one column's codes
  // and 16 rows of X.
  for (auto [m, bucket, first, instructions, loadBytes, binding, fraction,
             blocksPerSm] :
       {std::tuple{int64_t(1), int64_t(1), 291, 398, 102, "issue (INT32 pipe)",
                   0.544, 2},
        std::tuple{int64_t(16), int64_t(16), 691, 1311, 1043,
                   "issue (INT32 pipe)", 0.090, 1}}) {
    CAPTURE(m);
    SpecInput input = gemvInput(m);
    Expected<SpecReport> report = analyzeSpec(input);
    REQUIRE(report);
    REQUIRE(report->launches.size() == 1);
    const LaunchReport &launch = report->launches[0];
    REQUIRE(launch.sass);
    CHECK(launch.blocksPerSm == blocksPerSm); // registers
    std::optional<GemvEstimate> gemv =
        estimateGemv(input, launch, {m, 4096, 4096}, 16, 2);
    REQUIRE(gemv);
    CHECK(gemv->bucket == bucket);
    CHECK(gemv->firstInstruction == first);
    CHECK(gemv->loopInstructions == instructions);
    CHECK(gemv->loadBytesPerTrip == loadBytes);
    // A lane's 4 chunks of K = 4096 (128 chunks over 32 lanes), one a trip.
    CHECK(gemv->weightsPerTrip == 32);
    CHECK(gemv->tripsPerWarp == 4);
    CHECK(gemv->binding == binding);
    CHECK(gemv->fraction == Approx(fraction).margin(0.001));
    CHECK(gemv->fractionWithLaunch < gemv->fraction);
    // The bytes at peak over the larger of the two terms.
    CHECK(gemv->fraction ==
          Approx(input.minimumBytes / input.chip.hbmBytesPerSecond /
                 std::max(gemv->issueSeconds, gemv->memorySeconds)));
    std::string text = matmulInputsText(input, *report, {m, 4096, 4096});
    CHECK(text.find("X re-read by every block (L2, not counted): " +
                    std::to_string((m == 1 ? 256 : 512) * m * 4096 * 2) +
                    " bytes") != std::string::npos);
  }
}

TEST_CASE("matmul: the summary line is the GEMV's estimate", "[report]") {
  // The shared model's loop weighting does not describe the GEMV (its row
  // buckets), and read the codes' lanes as 128 B apart: the summary once
  // said "estimated 0% ..., limited by uncoalesced access" under a GEMV
  // line of 13%.
  for (int64_t m : {int64_t(1), int64_t(16)}) {
    CAPTURE(m);
    SpecInput input = gemvInput(m);
    Expected<SpecReport> report = analyzeSpec(input);
    REQUIRE(report);
    std::optional<GemvEstimate> gemv =
        estimateGemv(input, report->launches[0], {m, 4096, 4096}, 16, 2);
    REQUIRE(gemv);
    applyMatmulEstimates(input, *report, {m, 4096, 4096});
    const LaunchReport &launch = report->launches[0];
    CHECK(launch.l1Seconds == 0);
    CHECK(launch.seconds ==
          Approx(gemv->seconds + input.chip.launchOverheadSeconds));
    CHECK(report->bandwidthFraction == Approx(gemv->fractionWithLaunch));
    std::string summary = formatReportText(*report);
    summary = summary.substr(0, summary.find('\n'));
    CHECK(summary.find(fmt::format("estimated {:.0f}% of HBM bandwidth",
                                   100 * gemv->fractionWithLaunch)) !=
          std::string::npos);
    CHECK(summary.find("uncoalesced") == std::string::npos);
    CHECK(summary.find("the GEMV's loop of " + std::to_string(gemv->bucket) +
                       " rows") != std::string::npos);
  }
}

TEST_CASE("matmul: the GEMM's K loop runs ceil(K / 32) trips", "[report]") {
  // The GEMM of int4_g128 from bf16 at M = N = K = 4096 (the PTX `lowbit
  // report ... --m 4096` compiles, its kernel_kernel_0 alone; ptxas 13.0
  // -arch=sm_90a and nvdisasm -c of it: 179 registers, 10240 B of shared
  // memory). Its chunk loop's bound is ceil(K / 32) of X's descriptor
  // size, which the launch gives; before the stated trips the report took
  // the trips from the codes' bytes per thread (3.3), although every
  // block walks all of K, and read 214% of the mma.sync peak.
  constexpr int64_t m = 4096, n = 4096, k = 4096;
  SpecInput input = gemvInput(m);
  input.ptx = readReportData("matmul_int4_g128_bf16_gemm.ptx");
  input.sass = readReportData("matmul_int4_g128_bf16_gemm.sm_90a.sass");
  KernelLaunch launch;
  launch.kernel = "kernel_kernel_0";
  launch.grid = {(m / 64) * (n / 128), 1, 1};
  launch.block = {256, 1, 1};
  // The plan's arguments: m:4 m:0 m:1 m:2 m:3 (y, x, codes, scales, zeros),
  // each descriptor's offset, sizes and row-major strides given.
  const std::array<std::array<int64_t, 2>, 5> shapes{
      {{m, k}, {n, k / 2}, {n, k / 128}, {n, k / 128}, {m, n}}};
  for (int buffer : {4, 0, 1, 2, 3}) {
    int slot = int(launch.bufferOfParameter.size());
    launch.bufferOfParameter.insert(launch.bufferOfParameter.end(),
                                    {buffer, buffer, -1, -1, -1, -1, -1});
    auto [rows, cols] = shapes[size_t(buffer)];
    for (auto [offset, value] : std::array<std::pair<int, int64_t>, 5>{
             {{2, 0}, {3, rows}, {4, cols}, {5, cols}, {6, 1}}})
      launch.parameterValues[slot + offset] = value;
  }
  input.launches = {launch};
  input.resources[0].function = "kernel_kernel_0";
  input.resources[0].registers = 179;
  input.resources[0].sharedBytes = 10240;
  Expected<SpecReport> report = analyzeSpec(input);
  REQUIRE(report);
  const LaunchReport &gemm = report->launches[0];
  REQUIRE(gemm.mainLoop >= 0);
  CHECK(gemm.loopTrips[size_t(gemm.mainLoop)] == 128);
  // Every warp issues exactly the mma.sync the shape needs.
  double warps = double(gemm.threads) / 32;
  CHECK(gemm.mmaPerThread == Approx(double(m * n * k) / 2048 / warps));
  CHECK(gemm.mmaPerThread == 2048);
  REQUIRE(gemm.fromSass);
  CHECK(gemm.tensorPerThread > 0);
  // Below the peak, as any kernel must be.
  double peak = mmaSyncPeakSeconds(input.chip, {m, n, k});
  CHECK(peak / gemm.seconds < 1.0);
  std::string text = matmulInputsText(input, *report, {m, n, k});
  CHECK(text.find("K loop 128 trips, 2048 mma.sync per warp (the shape "
                  "needs 2048)") != std::string::npos);
}

TEST_CASE("matmul: the dense mma.sync peak", "[report]") {
  std::optional<ChipModel> chip = chipModel("sm_90a");
  REQUIRE(chip);
  // 4096^3 / 2048 multiplies, each mmaSyncIssueSlots slots of one of the
  // SM's issuePerSmPerClock sub-partitions.
  MatmulShape shape{4096, 4096, 4096};
  double mmas = 4096.0 * 4096.0 * 4096.0 / 2048.0;
  CHECK(mmaSyncPeakSeconds(*chip, shape) ==
        Approx(mmas * chip->mmaSyncIssueSlots /
               (chip->issuePerSmPerClock * chip->smCount * chip->clockHz)));
}
