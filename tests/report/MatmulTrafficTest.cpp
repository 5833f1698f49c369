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
             blocksPerSm] : {std::tuple{int64_t(1), int64_t(1), 291, 398, 102,
                                        "issue (dispatch)", 0.570, 2},
                             std::tuple{int64_t(16), int64_t(16), 691, 1311,
                                        1043, "issue (dispatch)", 0.0889, 1}}) {
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
    // A lane's 4 chunks of K = 4096 (128 chunks over 32 lanes), one a trip
    // of each of the warp's columns (two at M = 1: N / 16 blocks of 8
    // warps).
    CHECK(gemv->columnsPerWarp == (m == 1 ? 2 : 1));
    CHECK(gemv->weightsPerTrip == (m == 1 ? 64 : 32));
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

/// A GEMV loop by hand (nvdisasm's line format): two columns' 16 code
/// bytes and 64 bytes of bf16 X a trip (96 B: one chunk of each column),
/// 8 IMAD, 4 LOP3, 2 MOV, 4 FFMA, the counter's IADD3 and ISETP and the
/// branch: 27 instructions.
constexpr const char *kGemvLoop = R"sass(
	.target	sm_90a
//--------------------- .text.gemv               --------------------------
	.section	.text.gemv,"ax",@progbits
gemv:
.text.gemv:
        /*0000*/                   S2R R0, SR_TID.X ;
.L_x_0:
        /*0010*/                   LDG.E.128 R4, desc[UR6][R2.64] ;
        /*0020*/                   LDG.E.128 R8, desc[UR6][R2.64+0x800] ;
        /*0030*/                   LDG.E.128 R12, desc[UR6][R30.64] ;
        /*0040*/                   LDG.E.128 R16, desc[UR6][R30.64+0x10] ;
        /*0050*/                   LDG.E.128 R20, desc[UR6][R30.64+0x20] ;
        /*0060*/                   LDG.E.128 R24, desc[UR6][R30.64+0x30] ;
        /*0070*/                   IMAD.U32 R40, R4, 0x10000, RZ ;
        /*0080*/                   IMAD.U32 R41, R5, 0x10000, RZ ;
        /*0090*/                   IMAD.U32 R42, R6, 0x10000, RZ ;
        /*00a0*/                   IMAD.U32 R43, R7, 0x10000, RZ ;
        /*00b0*/                   IMAD.MOV.U32 R44, RZ, RZ, R8 ;
        /*00c0*/                   IMAD.MOV.U32 R45, RZ, RZ, R9 ;
        /*00d0*/                   IMAD R46, R10, R11, 0x43004300 ;
        /*00e0*/                   IMAD.X R47, RZ, RZ, R47, P0 ;
        /*00f0*/                   LOP3.LUT R48, R12, 0xffff0000, RZ, 0xc0, !PT ;
        /*0100*/                   LOP3.LUT R49, R13, 0xffff0000, RZ, 0xc0, !PT ;
        /*0110*/                   LOP3.LUT R50, R14, 0xffff0000, RZ, 0xc0, !PT ;
        /*0120*/                   LOP3.LUT R51, R15, 0xffff0000, RZ, 0xc0, !PT ;
        /*0130*/                   MOV R52, R16 ;
        /*0140*/                   MOV R53, R17 ;
        /*0150*/                   FFMA R32, R40, R48, R32 ;
        /*0160*/                   FFMA R33, R41, R49, R33 ;
        /*0170*/                   FFMA R34, R42, R50, R34 ;
        /*0180*/                   FFMA R35, R43, R51, R35 ;
        /*0190*/                   IADD3 R2, P0, R2, 0x200, RZ ;
        /*01a0*/                   ISETP.GE.U32.AND P1, PT, R2, R60, PT ;
        /*01b0*/              @!P1 BRA `(.L_x_0) ;
        /*01c0*/                   EXIT ;
.L_x_1:
        /*01d0*/                   BRA `(.L_x_1);
)sass";

TEST_CASE("matmul: the GEMV's pipes, columns and busiest SM", "[report]") {
  std::vector<SassKernel> kernels = analyzeSass(kGemvLoop);
  REQUIRE(kernels.size() == 1);
  for (auto [target, sms] : {std::pair{"sm_90a", int64_t(132)},
                             std::pair{"sm_100a", int64_t(148)}}) {
    CAPTURE(target);
    constexpr int64_t m = 1, n = 4096, k = 4096;
    SpecInput input;
    std::optional<ChipModel> chip = chipModel(target);
    REQUIRE(chip);
    REQUIRE(chip->smCount == sms);
    input.chip = *chip;
    input.minimumBytes = 8798208;
    LaunchReport launch;
    launch.sass = kernels[0];
    // Two columns a warp: N / 16 blocks of 8 warps.
    launch.launch.grid = {n / 16, 1, 1};
    launch.launch.block = {256, 1, 1};
    launch.threads = n / 16 * 256;
    launch.blocksPerSm = 2;
    std::optional<GemvEstimate> gemv =
        estimateGemv(input, launch, {m, n, k}, 16, 2);
    REQUIRE(gemv);
    CHECK(gemv->columnsPerWarp == 2);
    CHECK(gemv->loadBytesPerTrip == 96);
    CHECK(gemv->loopInstructions == 27);
    // A trip covers one chunk of each of the two columns.
    CHECK(gemv->weightsPerTrip == 64);
    CHECK(gemv->tripsPerWarp == 4);
    // IMAD (8, IMAD.X and IMAD.MOV among them) on the FMA pipe with the 4
    // FFMA; the ALU takes LOP3, IADD3, ISETP and the two MOVs.
    CHECK(gemv->fmaInteger == 8);
    CHECK(gemv->fmaPipe == 12);
    CHECK(gemv->alu == 8);
    // Dispatch 27 / 4 = 6.75 clocks a trip, above FMA 12 / 4 = 3, the
    // IMAD half 8 / 2 = 4 and the ALU 8 / 2 = 4. (IMAD read as INT32 gave
    // 14 / 2 = 7: "INT32 pipe".)
    CHECK(gemv->issueBound == "dispatch");
    // The busiest SM runs ceil(256 / SMs) = 2 blocks, 16 warps.
    CHECK(gemv->issueSeconds == Approx(16.0 * 4 * 6.75 / input.chip.clockHz));
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
    // The summary names the largest loss against the bytes at peak: the
    // GEMV's time past them, or the launch overhead where that is larger
    // (M = 1: 3.2 us against 1.8 us at peak, 1.5 us of launch).
    bool gemvLarger =
        gemv->seconds - input.minimumBytes / input.chip.hbmBytesPerSecond >
        input.chip.launchOverheadSeconds;
    CHECK(gemvLarger == (m == 16));
    CHECK(summary.find(gemvLarger ? "the GEMV's loop of " +
                                        std::to_string(gemv->bucket) + " rows"
                                  : "launch overhead (1 launches)") !=
          std::string::npos);
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
  // The SASS K loop runs the PTX's 128 trips: its trip moves 96 B to the
  // PTX's 80 (code not every trip runs, not a whole-number unroll), so
  // the 16 mma.sync of a trip issue the 2048 the shape needs (106.7 trips
  // and 1707 before).
  REQUIRE(gemm.sassLoopTrips.size() == 1);
  CHECK(gemm.sassLoopTrips[0] == 128);
  CHECK(gemm.tensorPerThread == 2048);
  // Below the peak, as any kernel must be.
  REQUIRE(gemm.mma);
  CHECK(*gemm.mma == MmaShape{MmaKind::F16, 16, 8, 16});
  double peak = mmaSyncPeakSeconds(input.chip, {m, n, k}, MmaKind::F16);
  CHECK(peak / gemm.seconds < 1.0);
  std::string text = matmulInputsText(input, *report, {m, n, k});
  CHECK(text.find("mma.sync f16/bf16 m16n8k16: K loop 128 trips, 2048 "
                  "mma.sync per warp (the shape needs 2048), 8 issue slots "
                  "each") != std::string::npos);
  // The peak it is measured against, with its inputs (sm_90a's f16 rate).
  CHECK(text.find("of the f16/bf16 mma.sync peak") != std::string::npos);
  CHECK(text.find("1024 multiply-adds per clock per SM, 50% of the tensor "
                  "peak 2048, x 132 SMs x 1.98 GHz") != std::string::npos);
}

TEST_CASE("matmul: the mma.sync peak of the GEMM's kind", "[report]") {
  std::optional<ChipModel> chip = chipModel("sm_90a");
  REQUIRE(chip);
  // 4096^3 multiply-adds at the kind's mma.sync rate per SM per clock:
  // half the H100 whitepaper's dense peaks, 2048 (f16) and 4096 (e4m3, s8).
  MatmulShape shape{4096, 4096, 4096};
  double macs = 4096.0 * 4096.0 * 4096.0;
  double sms = chip->smCount * chip->clockHz;
  CHECK(mmaSyncPeakSeconds(*chip, shape, MmaKind::F16) ==
        Approx(macs / (1024 * sms)));
  // The f16 rule agrees with the f16 m16n8k16's issue slots.
  CHECK(mmaSyncPeakSeconds(*chip, shape, MmaKind::F16) ==
        Approx(macs / 2048 * chip->mmaSyncIssueSlots /
               (chip->issuePerSmPerClock * sms)));
  CHECK(mmaSyncPeakSeconds(*chip, shape, MmaKind::Fp8) ==
        Approx(macs / (2048 * sms)));
  CHECK(mmaSyncPeakSeconds(*chip, shape, MmaKind::S8) ==
        Approx(macs / (2048 * sms)));
  // No block-scaled FP4 mma.sync on sm_90a; sm_120a's is 2048 a clock.
  CHECK(mmaSyncPeakSeconds(*chip, shape, MmaKind::Fp4BlockScaled) == 0);
  std::optional<ChipModel> rtx = chipModel("sm_120a");
  REQUIRE(rtx);
  CHECK(mmaSyncPeakSeconds(*rtx, shape, MmaKind::Fp4BlockScaled) ==
        Approx(macs / (2048 * rtx->smCount * rtx->clockHz)));
  // sm_80: no fp8; its s8 rate is twice its f16 (A100: 624 and 312 T).
  std::optional<ChipModel> a100 = chipModel("sm_80");
  REQUIRE(a100);
  CHECK(mmaSyncPeakSeconds(*a100, shape, MmaKind::Fp8) == 0);
  CHECK(mmaSyncPeakSeconds(*a100, shape, MmaKind::F16) ==
        Approx(2 * mmaSyncPeakSeconds(*a100, shape, MmaKind::S8)));
}
