//===- CalibrationTest.cpp - The model against published kernel times ----===//
//
// The calibration (docs/gpu-report.md, "Calibration"): the report's model
// recomputes each public kernel's time from the committed PTX, nvdisasm
// text and ptxas log (tests/data/report/calibration), and the doc's table
// must hold exactly those rows, so a model change that moves a prediction
// fails here until the table (and its stated errors) is regenerated with
// lowbit-calibration-table. Also: the model rules the calibration added
// (lanes through `neg` of a pointer, remainder loops shared by the lanes,
// a diverged warp's fallback and the slow paths not counted, the issue
// pipes' one rule: IMAD on the FMA pipe's heavy half) on small kernels,
// and the manifest's errors.
//
//===----------------------------------------------------------------------===//

#include "runtime/report/Calibration.h"
#include "runtime/report/IssuePipes.h"
#include "runtime/report/SassAnalysis.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace lowbit;
using namespace lowbit::report;

namespace {

std::string calibrationDir() {
  return std::string(LOWBIT_TEST_DATA_DIR) + "/report/calibration";
}

/// The rows of docs/gpu-report.md's calibration table (the lines between
/// the table's header and the first line that is not a row).
std::vector<std::string> docRows() {
  std::ifstream file(std::string(LOWBIT_DOCS_DIR) + "/gpu-report.md");
  REQUIRE(file);
  std::string header = calibrationTableHeader();
  std::string first = header.substr(0, header.find('\n'));
  std::vector<std::string> rows;
  bool inTable = false;
  for (std::string line; std::getline(file, line);) {
    if (line == first) {
      inTable = true;
      std::getline(file, line); // |---|
      continue;
    }
    if (inTable && !line.starts_with("| "))
      break;
    if (inTable)
      rows.push_back(line + "\n");
  }
  return rows;
}

} // namespace

TEST_CASE("calibration: the doc's table is the model's prediction",
          "[report][calibration]") {
  Expected<std::vector<CalibrationCase>> cases =
      loadCalibrationCases(calibrationDir() + "/cases.txt");
  REQUIRE(cases);
  REQUIRE(cases->size() >= 6);
  std::vector<std::string> rows = docRows();
  REQUIRE(rows.size() == cases->size());
  for (size_t i = 0; i < cases->size(); ++i) {
    const CalibrationCase &calibration = (*cases)[i];
    INFO(calibration.name << " " << calibration.shape);
    // Every case reads SASS and its ptxas record, not the PTX fallback.
    CHECK(!calibration.input.sass.empty());
    CHECK(!calibration.input.resources.empty());
    Expected<SpecReport> report = analyzeSpec(calibration.input);
    REQUIRE(report);
    for (const LaunchReport &launch : report->launches) {
      CHECK(launch.fromSass);
      CHECK(launch.resources.registers > 0);
    }
    CHECK(calibrationTableRow(calibration, *report) == rows[i]);
  }
}

TEST_CASE("calibration: manifest errors name their line",
          "[report][calibration]") {
  auto dir = std::filesystem::temp_directory_path() / "lowbit-calibration";
  std::filesystem::create_directories(dir);
  auto load = [&](const std::string &text) {
    std::ofstream(dir / "cases.txt") << text;
    return loadCalibrationCases((dir / "cases.txt").string());
  };
  auto message = [](const auto &result) {
    return result ? std::string() : result.error().message;
  };
  CHECK(message(load("part H100 SXM\n")).find(":1: a key before") !=
        std::string::npos);
  CHECK(message(load("case x\npart H900\n")).find(":2: no part 'H900'") !=
        std::string::npos);
  CHECK(message(load("case x\nptx missing.ptx\n")).find("cannot read") !=
        std::string::npos);
  CHECK(message(load("case x\nbuffer input 10\nlaunch k 1 1 1 32 1 1 0 grid "
                     "input nothing\n"))
            .find(":3: launch: no buffer 'nothing'") != std::string::npos);
  CHECK(message(load("case x\npart B200\n")).find("lacks a part, ptx") !=
        std::string::npos);
  std::filesystem::remove_all(dir);
}

namespace {

/// vLLM's vectorize_with_alignment, reduced: the base is aligned by
/// arithmetic on the pointer parameter (neg, and: lane-uniform), a wide
/// loop loads 16 B per lane 16 B apart, and a scalar tail loads 2 B per
/// lane 2 B apart: the lanes share the tail, which runs once per lane.
constexpr const char *kPeeledPtx = R"ptx(
.visible .entry peeled(
	.param .u64 peeled_param_0
)
{
	ld.param.u64 	%rd1, [peeled_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	neg.s64 	%rd3, %rd1;
	and.b64 	%rd4, %rd3, 30;
	add.s64 	%rd5, %rd2, %rd4;
	mov.u32 	%r1, %tid.x;
	mul.wide.u32 	%rd6, %r1, 16;
	add.s64 	%rd7, %rd5, %rd6;
$L__BB0_1:
	ld.global.v4.b32 	{%r2, %r3, %r4, %r5}, [%rd7];
	add.s64 	%rd7, %rd7, 4096;
	setp.lt.u32 	%p1, %r2, 100;
	@%p1 bra 	$L__BB0_1;
	mul.wide.u32 	%rd8, %r1, 2;
	add.s64 	%rd9, %rd5, %rd8;
$L__BB0_2:
	ld.global.u16 	%rs1, [%rd9];
	add.s64 	%rd9, %rd9, 512;
	setp.lt.u16 	%p2, %rs1, 100;
	@%p2 bra 	$L__BB0_2;
	ret;
}
)ptx";

} // namespace

TEST_CASE("calibration rules: uniform alignment arithmetic, shared tails",
          "[report][calibration]") {
  Expected<std::vector<PtxKernel>> kernels = analyzePtx(kPeeledPtx);
  REQUIRE(kernels);
  const PtxKernel &kernel = kernels->front();
  REQUIRE(kernel.accesses.size() == 2);
  // The aligned base is lane-uniform, so the lanes are known: 512 B per
  // warp load (4 lines, more with the unknown alignment taken as 0), and
  // 64 B for the tail, each lane next to its neighbour.
  CHECK(kernel.accesses[0].warpLines == 4);
  CHECK(kernel.accesses[1].warpLines == 1);
  CHECK(kernel.accesses[0].lanesContiguous);
  CHECK(kernel.accesses[1].lanesContiguous);

  std::optional<ChipModel> chip = partModel("H100 SXM");
  REQUIRE(chip);
  CHECK(chip->chip == "sm_90a");
  CHECK(chip->hbmBytesPerSecond == Approx(3.35e12));
  SpecInput input;
  input.title = "peeled";
  input.chip = *chip;
  input.ptx = kPeeledPtx;
  input.valueBytes = 2;
  input.buffers = {{"input", int64_t(64) << 20, false}};
  input.elements = (int64_t(64) << 20) / 2;
  input.minimumBytes = double(int64_t(64) << 20);
  KernelLaunch launch;
  launch.kernel = "peeled";
  launch.block = {256, 1, 1};
  launch.grid = {1024, 1, 1};
  launch.bufferOfParameter = {0};
  input.launches = {launch};
  Expected<SpecReport> report = analyzeSpec(input);
  REQUIRE(report);
  const LaunchReport &out = report->launches[0];
  REQUIRE(out.loopTrips.size() == 2);
  // 256 B a thread at 16 B a trip; the tail covers fewer than 8 of its
  // 2-byte trips, shared by the warp's lanes: one each, not (8 - 1) / 2.
  CHECK(out.loopTrips[0] == Approx(16.0));
  CHECK(out.loopTrips[1] == Approx(1.0));
  CHECK(out.mainLoop == 0);
}

namespace {

/// A shuffle reduction in a loop, as ptxas lays it out: `BRA.DIV` sends a
/// warp whose lanes have diverged to an out-of-line fallback after the
/// EXIT, which rejoins the loop with an unconditional BRA (TensorRT-LLM's
/// scale_1x128_kernel has this shape).
constexpr const char *kDivergentSass = R"sass(
	.target	sm_100a
.text.reduce:
        /*0000*/                   S2R R0, SR_TID.X ;
.L_x_0:
        /*0010*/                   LDG.E R4, desc[UR8][R2.64] ;
        /*0020*/                   BRA.DIV UR5, `(.L_x_2) ;
        /*0030*/                   SHFL.DOWN PT, R5, R4, 0x10, 0x1f ;
.L_x_3:
        /*0040*/                   FMNMX R4, R4, R5, !PT ;
        /*0050*/                   STG.E desc[UR8][R6.64], R4 ;
        /*0060*/                   IADD3 R2, P1, R2, 0x100, RZ ;
        /*0070*/               @P1 BRA `(.L_x_0) ;
        /*0080*/                   EXIT ;
.L_x_2:
        /*0090*/                   WARPSYNC.ALL ;
        /*00a0*/                   SHFL.DOWN P0, R5, R4, R26, R29 ;
        /*00b0*/                   MOV R8, R5 ;
        /*00c0*/                   BRA `(.L_x_3) ;
.L_x_4:
        /*00d0*/                   BRA `(.L_x_4);
)sass";

} // namespace

TEST_CASE("SASS: a diverged warp's fallback is not run and is no loop",
          "[report][calibration]") {
  std::vector<SassKernel> kernels = analyzeSass(kDivergentSass);
  REQUIRE(kernels.size() == 1);
  const SassKernel &kernel = kernels[0];
  REQUIRE(kernel.instructions == 14);
  // Instructions 9-12 (WARPSYNC to the BRA back) are the fallback.
  std::vector<bool> fallback(14, false);
  for (int i = 9; i <= 12; ++i)
    fallback[size_t(i)] = true;
  CHECK(kernel.coldPath == fallback);
  // One loop, 1-7: the fallback's branch back to .L_x_3 makes none.
  REQUIRE(kernel.loops.size() == 1);
  CHECK(kernel.loops[0].firstInstruction == 1);
  CHECK(kernel.loops[0].lastInstruction == 7);
}

namespace {

/// An f32 division as ptxas emits it: the fast path, then a block that
/// calls the slow-path subroutine (for denormal, infinite or zero
/// operands), and the subroutine after the kernel body.
constexpr const char *kSlowPathSass = R"sass(
	.target	sm_90a
.text.divide:
        /*0000*/                   MUFU.RCP R0, R3 ;
        /*0010*/                   FCHK P0, R2, R3 ;
        /*0020*/                   FFMA R4, R0, R2, RZ ;
        /*0030*/              @!P0 BRA `(.L_x_1) ;
        /*0040*/                   MOV R5, 0x60 ;
        /*0050*/                   CALL.REL.NOINC `($__internal_0_$__cuda_sm3x_div_rn_noftz_f32_slowpath) ;
        /*0060*/                   MOV R4, R6 ;
.L_x_1:
        /*0070*/                   STG.E desc[UR8][R8.64], R4 ;
        /*0080*/                   EXIT ;
.L_x_2:
        /*0090*/                   BRA `(.L_x_2);
$__internal_0_$__cuda_sm3x_div_rn_noftz_f32_slowpath:
        /*00a0*/                   SHF.R.U32.HI R7, RZ, 0x17, R3 ;
.L_x_3:
        /*00b0*/                   IADD3 R7, R7, -0x1, RZ ;
        /*00c0*/               @P1 BRA `(.L_x_3) ;
        /*00d0*/                   RET.REL.NODEC R5 `(divide) ;
)sass";

} // namespace

TEST_CASE("SASS: a division's slow path and its call are not run",
          "[report][calibration]") {
  std::vector<SassKernel> kernels = analyzeSass(kSlowPathSass);
  REQUIRE(kernels.size() == 1);
  const SassKernel &kernel = kernels[0];
  REQUIRE(kernel.instructions == 14);
  // The call's block (4-6) and the subroutine (10-13); the fast path, the
  // store, the EXIT and the trap are run.
  std::vector<bool> cold(14, false);
  for (int i : {4, 5, 6, 10, 11, 12, 13})
    cold[size_t(i)] = true;
  CHECK(kernel.coldPath == cold);
  // The subroutine's loop is no loop of the kernel.
  CHECK(kernel.loops.empty());
}

namespace {

/// A lane's offset scaled by a runtime size (a .param): lane-uniform
/// unknown times the lane index, unknown lanes, unless the launch gives
/// the size.
constexpr const char *kScaledPtx = R"ptx(
.visible .entry scaled(
	.param .u64 scaled_param_0,
	.param .u32 scaled_param_1
)
{
	ld.param.u64 	%rd1, [scaled_param_0];
	ld.param.u32 	%r1, [scaled_param_1];
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u32 	%r2, %tid.x;
	mul.wide.u32 	%rd3, %r2, %r1;
	add.s64 	%rd4, %rd2, %rd3;
	ld.global.v4.b32 	{%r3, %r4, %r5, %r6}, [%rd4];
	ret;
}
)ptx";

} // namespace

TEST_CASE("a launch's scalar arguments bind into the address analysis",
          "[report][calibration]") {
  Expected<std::vector<PtxKernel>> unbound = analyzePtx(kScaledPtx);
  REQUIRE(unbound);
  CHECK(unbound->front().accesses[0].warpLines == 0);
  Expected<std::vector<PtxKernel>> bound =
      analyzePtx(kScaledPtx, {{"scaled", {{1, 16}}}});
  REQUIRE(bound);
  // Lanes 16 B apart, 16 B each: 4 lines, adjacent.
  CHECK(bound->front().accesses[0].warpLines == 4);
  CHECK(bound->front().accesses[0].lanesContiguous);
  // Another kernel's binding does not apply.
  Expected<std::vector<PtxKernel>> other =
      analyzePtx(kScaledPtx, {{"another", {{1, 16}}}});
  REQUIRE(other);
  CHECK(other->front().accesses[0].warpLines == 0);

  // Through a launch: the manifest's `=VALUE` entries.
  auto dir = std::filesystem::temp_directory_path() / "lowbit-scaled";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "scaled.ptx") << kScaledPtx;
  std::ofstream(dir / "cases.txt")
      << "case scaled\npart B200\nptx scaled.ptx\nelements 1024\n"
         "buffer input 4096\nlaunch scaled 8 1 1 32 1 1 0 grid input =16\n"
         "published 1 test\n";
  Expected<std::vector<CalibrationCase>> cases =
      loadCalibrationCases((dir / "cases.txt").string());
  std::filesystem::remove_all(dir);
  REQUIRE(cases);
  const KernelLaunch &launch = cases->front().input.launches.front();
  CHECK(launch.bufferOfParameter == std::vector<int>{0, -1});
  CHECK(launch.parameterValues == std::map<int, int64_t>{{1, 16}});
  Expected<SpecReport> report = analyzeSpec(cases->front().input);
  REQUIRE(report);
  CHECK(report->launches[0].ptx.accesses[0].warpLines == 4);
}

namespace {

/// Integer index math as ptxas emits it: IMAD (and its IMAD.MOV alias),
/// IADD3, LOP3, a MOV and one FFMA.
constexpr const char *kIndexMathSass = R"sass(
	.target	sm_90a
.text.index:
        /*0000*/                   IMAD R0, R1, R2, R3 ;
        /*0010*/                   IMAD.WIDE R4, R0, 0x4, R6 ;
        /*0020*/                   IMAD.MOV.U32 R8, RZ, RZ, R9 ;
        /*0030*/                   IMAD.SHL.U32 R10, R0, 0x2, RZ ;
        /*0040*/                   IADD3 R11, R0, 0x1, RZ ;
        /*0050*/                   LOP3.LUT R12, R11, 0xff, RZ, 0xc0, !PT ;
        /*0060*/                   MOV R13, R12 ;
        /*0070*/                   FFMA R14, R13, R13, R14 ;
        /*0080*/                   EXIT ;
)sass";

} // namespace

TEST_CASE("issue pipes: IMAD on the FMA pipe's heavy half, one rule",
          "[report][calibration]") {
  std::vector<SassKernel> kernels = analyzeSass(kIndexMathSass);
  REQUIRE(kernels.size() == 1);
  const SassKernel &kernel = kernels[0];
  PipeCounts pipes;
  for (size_t i = 0; i < kernel.classes.size(); ++i)
    pipes.add(kernel, i, 2.0);
  // 4 IMAD and 1 FFMA on the FMA pipe, IADD3, LOP3 and MOV on the ALU.
  CHECK(pipes.fmaInteger == 8.0);
  CHECK(pipes.fmaPipe == 10.0);
  CHECK(pipes.alu == 6.0);
  CHECK(pipes.mufu == 0.0);
  std::optional<ChipModel> hopper = chipModel("sm_90a");
  REQUIRE(hopper);
  const ChipConstants &row = *hopper->constants;
  // 128 FP32 lanes, 64 of them for IMAD, 64 ALU lanes per SM: 8 IMAD a
  // thread take 4 clocks a warp, the ALU's 6 take 3; dispatch 2.
  BusiestPipe busiest = busiestPipe(pipes, row, 2.0);
  CHECK(busiest.name == "FMA pipe's IMAD half");
  CHECK(busiest.clocks == Approx(8.0 * 32 / (row.fp32LanesPerClock.value / 2)));
  CHECK(busiestPipe(pipes, row, 9.0).name == "dispatch");
}

TEST_CASE("issue pipes: the shared model counts IMAD on the FMA pipe",
          "[report][calibration]") {
  Expected<std::vector<CalibrationCase>> cases =
      loadCalibrationCases(calibrationDir() + "/cases.txt");
  REQUIRE(cases);
  for (const CalibrationCase &calibration : *cases) {
    INFO(calibration.name << " " << calibration.shape);
    Expected<SpecReport> report = analyzeSpec(calibration.input);
    REQUIRE(report);
    for (const LaunchReport &launch : report->launches) {
      const PipeCounts &pipes = launch.pipesPerThread;
      // Every kernel here computes addresses with IMAD.
      CHECK(pipes.fmaInteger > 0);
      CHECK(launch.fp32PerThread == pipes.fmaPipe);
      CHECK(launch.intPerThread == pipes.alu);
      // FMA, ALU and the rest partition what the SASS issues.
      CHECK(pipes.fmaPipe + pipes.alu + pipes.mufu <= launch.sassPerThread);
    }
  }
}
