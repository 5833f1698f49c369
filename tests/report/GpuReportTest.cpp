//===- GpuReportTest.cpp - runtime/report on known kernels ----------------===//
//
// Hand-written PTX whose widths, loops and atomics are known, the format
// model's minimum bytes against hand-computed values, and the occupancy and
// bandwidth model on launches whose answers follow from the SM limits.
//
//===----------------------------------------------------------------------===//

#include "runtime/report/GpuReport.h"
#include "target/ChipCapabilities.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

using namespace lowbit;
using namespace lowbit::report;

namespace {

/// A vectorized copy-like quantize body: one 16-byte load and one 4-byte
/// store per trip of a loop. A second kernel holds a system-scope CAS, a
/// shuffle, a division and loads through generic, shared and local
/// addresses.
constexpr const char *kVectorPtx = R"ptx(
.version 8.0
.target sm_90a
.address_size 64

	// .globl	copy_kernel
.visible .entry copy_kernel(
	.param .u64 copy_kernel_param_0,
	.param .u64 copy_kernel_param_1,
	.param .u64 copy_kernel_param_2
)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<12>;
	.reg .b64 	%rd<8>;

	ld.param.u64 	%rd1, [copy_kernel_param_0];
	ld.param.u64 	%rd2, [copy_kernel_param_2];
	mov.u32 	%r1, %tid.x;
$L__BB0_1:
	ld.global.nc.v4.b32 	{%r2, %r3, %r4, %r5}, [%rd1];
	cvt.rn.satfinite.e4m3x2.f32 	%r6, %r3, %r2;
	cvt.rn.satfinite.e4m3x2.f32 	%r7, %r5, %r4;
	st.global.b32 	[%rd2], %r6;
	add.s64 	%rd1, %rd1, 16;
	add.s64 	%rd2, %rd2, 4;
	setp.lt.u32 	%p1, %r1, 100;
	@%p1 bra 	$L__BB0_1;
	ret;

}
	// .globl	other
.visible .entry other(
	.param .u64 other_param_0
)
{
	ld.global.u8 	%rs1, [%rd1];
	{ // inline asm scope
	.reg .b32 %tmp;
	atom.sys.global.cas.b32 	%r8, [%rd2], 0, 1;
	}
	shfl.sync.bfly.b32 	%r9, %r8, 1, 31, -1;
	div.rn.f32 	%r10, %r9, %r8;
	ld.v2.f32 	{%r1, %r2}, [%rd1];
	ld.shared.b32 	%r3, [%rd1];
	st.local.b32 	[%rd1], %r3;
	ret;
}
)ptx";

ChipModel h200() {
  std::optional<ChipModel> chip = chipModel("sm_90a");
  REQUIRE(chip);
  return *chip;
}

/// A copy-like kernel `copy_kernel` of `ptx` (and its SASS, if any),
/// grid-stride over 2^26 f32 values at 64 registers (half occupancy).
SpecInput copyInput(std::string ptx, std::string sass = "") {
  SpecInput input;
  input.title = "copy";
  input.chip = h200();
  input.ptx = std::move(ptx);
  input.sass = std::move(sass);
  input.elements = int64_t(1) << 26;
  input.valueBytes = 4;
  input.buffers = {{"input", input.elements * 4, false},
                   {"codes", input.elements, true},
                   {"unused", 1 << 20, false}};
  input.minimumBytes = double(input.elements) * 5;
  KernelLaunch launch;
  launch.kernel = "copy_kernel";
  launch.block = {256, 1, 1};
  launch.grid = {132 * 8 * 4, 1, 1};
  launch.bufferOfParameter = {0, 2, 1};
  launch.gridStride = true;
  input.launches = {launch};
  runtime::KernelResources resources;
  resources.function = "copy_kernel";
  resources.registers = 64;
  resources.sharedBytes = 0;
  input.resources = {resources};
  return input;
}

/// A committed file of tests/data/report.
std::string readTestData(const std::string &name) {
  std::ifstream file(std::string(LOWBIT_TEST_DATA_DIR) + "/report/" + name);
  REQUIRE(file);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

} // namespace

TEST_CASE("PTX: widths, loops, atomics and parameters", "[report]") {
  Expected<std::vector<PtxKernel>> kernels = analyzePtx(kVectorPtx);
  REQUIRE(kernels);
  REQUIRE(kernels->size() == 2);
  const PtxKernel &copy = (*kernels)[0];
  CHECK(copy.name == "copy_kernel");
  // ld.global.nc.v4.b32 is one 128-bit load; st.global.b32 one 32-bit store.
  CHECK(copy.loadWidths == std::map<int, int>{{128, 1}});
  CHECK(copy.storeWidths == std::map<int, int>{{32, 1}});
  CHECK(copy.globalLoadBytes == 16);
  CHECK(copy.genericAccesses == 0);
  // 3 before the loop, 8 in it, then ret.
  CHECK(copy.instructions == 12);
  REQUIRE(copy.loops.size() == 1);
  CHECK(copy.loops[0].firstInstruction == 3);
  CHECK(copy.loops[0].lastInstruction == 10);
  CHECK(copy.loops[0].globalLoadBytes == 16);
  CHECK(copy.loops[0].globalStoreBytes == 4);
  CHECK(copy.atomics == 0);
  CHECK(copy.parametersRead == std::vector<int>{0, 2});

  // Generic accesses count (flagged); shared and local ones do not.
  const PtxKernel &other = (*kernels)[1];
  CHECK(other.loadWidths == std::map<int, int>{{8, 1}, {64, 1}});
  CHECK(other.storeWidths.empty());
  CHECK(other.genericAccesses == 1);
  CHECK(other.loops.empty());
  CHECK(other.instructions == 8);
  CHECK(other.atomics == 1);
  CHECK(other.casAtomics == 1);
  CHECK(other.sysScopeOps == 1);
  CHECK(other.shuffles == 1);
  CHECK(other.divisions == 1);
}

TEST_CASE("PTX without an entry is an error", "[report]") {
  Expected<std::vector<PtxKernel>> kernels =
      analyzePtx(".version 8.0\n.target sm_90a\n");
  REQUIRE_FALSE(kernels);
  CHECK(kernels.error().message.find("no .entry") != std::string::npos);
  CHECK_FALSE(analyzePtx(".visible .entry broken(\n) {\n ret;\n"));
}

TEST_CASE("minimum bytes come from the format model", "[report]") {
  const Scheme *mxfp4 = nullptr, *nvfp4 = nullptr, *int4 = nullptr;
  for (const Scheme &scheme : namedSchemes()) {
    if (scheme.name == "mxfp4")
      mxfp4 = &scheme;
    if (scheme.name == "nvfp4")
      nvfp4 = &scheme;
    if (scheme.name == "int4_g128")
      int4 = &scheme;
  }
  REQUIRE((mxfp4 && nvfp4 && int4));
  const int64_t rows = 256, cols = 4096, n = rows * cols;
  // mxfp4 from f16: 2 B of input, a nibble of code, one E8M0 byte per 32.
  CHECK(minimumBytes(*mxfp4, 2, rows, cols) / double(n) ==
        Approx(2.0 + 0.5 + 1.0 / 32).epsilon(1e-12));
  // nvfp4 from f32: 4 + 1/2 + one UE4M3 byte per 16 + the f32 global scale.
  CHECK(minimumBytes(*nvfp4, 4, rows, cols) ==
        Approx(4.0 * n + n / 2.0 + n / 16.0 + 4).epsilon(1e-12));
  // int4_g128: f16 scale and a u8 zero point per 128.
  CHECK(minimumBytes(*int4, 4, rows, cols) / double(n) ==
        Approx(4.0 + 0.5 + 3.0 / 128).epsilon(1e-12));
}

TEST_CASE("occupancy and the bandwidth estimate", "[report]") {
  SpecInput input = copyInput(kVectorPtx);
  const KernelLaunch &launch = input.launches[0];

  Expected<SpecReport> report = analyzeSpec(input);
  REQUIRE(report);
  REQUIRE(report->launches.size() == 1);
  const LaunchReport &out = report->launches[0];
  // 64 registers x 32 lanes = 2048 per warp; 8 warps per block: 4 blocks
  // fill the 64K registers, 1024 of 2048 threads.
  CHECK(out.blocksPerSm == 4);
  CHECK(out.occupancyLimiter.rfind("registers", 0) == 0);
  CHECK(out.occupancy == Approx(0.5));
  // Slots 0 and 2 are read: input and codes move, "unused" does not.
  CHECK(out.bytesMoved == input.elements * 5);
  CHECK(report->bytesPerElement == Approx(5.0));
  // 4 elements per 16-byte trip: 8 instructions per 4 elements.
  CHECK(out.elementsPerThread ==
        Approx(double(input.elements) / double(launch.grid[0] * 256)));
  CHECK(out.loopInstructionsPerElement == Approx(2.0));
  // 132 x 4 x 256 threads x 16 B = 2.06 MiB in flight, below the 3.36 MB
  // that 4.8 TB/s x 700 ns needs: limited by memory-level parallelism.
  CHECK(out.bytesInFlight == Approx(132.0 * 4 * 256 * 16));
  CHECK(out.limiter.find("memory-level parallelism") != std::string::npos);
  // The reads take input bytes / (bytes in flight / latency); the writes
  // fit under them; plus one launch overhead.
  double seconds =
      double(input.elements) * 4 / (out.bytesInFlight / 700e-9) + 1.5e-6;
  CHECK(report->seconds == Approx(seconds));
  CHECK(report->bandwidthFraction ==
        Approx(input.minimumBytes / 4.8e12 / seconds));
  CHECK(report->bandwidthFraction < 0.85);

  // 32 registers: 8 blocks of 256 = the full 2048 threads; the same kernel
  // then has twice the bytes in flight, enough for the bandwidth-delay
  // product, and lands at the HBM roof less one launch overhead.
  input.resources[0].registers = 32;
  Expected<SpecReport> wide = analyzeSpec(input);
  REQUIRE(wide);
  CHECK(wide->launches[0].blocksPerSm == 8);
  CHECK(wide->launches[0].occupancy == Approx(1.0));
  CHECK(wide->launches[0].limiter == "HBM bandwidth");
  CHECK(wide->bandwidthFraction > 0.9);
  CHECK(wide->bandwidthFraction > report->bandwidthFraction);
  // Grid-stride: adjacent lanes load adjacent 16-byte vectors, 4 lines per
  // warp access for the loads, 1 for the 4-byte stores.
  CHECK(wide->launches[0].laneStrideBytes == 0);
  CHECK(wide->launches[0].wavefrontsPerAccess == Approx(2.5));

  // The same body with each thread owning its 62 consecutive elements:
  // lanes 248 B apart, every warp load touches 32 lines (512 useful bytes
  // in 32 L1 clocks: just under the HBM rate per SM, so not yet the limit).
  input.launches[0].gridStride = false;
  Expected<SpecReport> chunked = analyzeSpec(input);
  REQUIRE(chunked);
  const LaunchReport &strided = chunked->launches[0];
  CHECK(strided.laneStrideBytes == Approx(strided.elementsPerThread * 4));
  CHECK(strided.wavefrontsPerAccess == Approx((32.0 + 1.0) / 2));
  CHECK(strided.l1Seconds ==
        Approx(wide->launches[0].l1Seconds * (32.0 + 1.0) / (4.0 + 1.0)));
  CHECK(strided.l1Seconds > 0.9 * strided.memorySeconds);
  CHECK(strided.l1Seconds < strided.memorySeconds);

  // Scalar loads in the same layout: 32 lines for 128 useful bytes per
  // warp access, and L1 limits.
  input.ptx = std::string(kVectorPtx);
  size_t at = input.ptx.find("ld.global.nc.v4.b32");
  input.ptx.replace(at, 19, "ld.global.nc.b32   ");
  input.valueBytes = 4;
  Expected<SpecReport> scalar = analyzeSpec(input);
  REQUIRE(scalar);
  CHECK(scalar->launches[0].limiter.rfind("uncoalesced access", 0) == 0);
  CHECK(scalar->bandwidthFraction < 0.5);
}

TEST_CASE("a launch of a kernel the PTX lacks is an error", "[report]") {
  SpecInput input;
  input.chip = h200();
  input.ptx = kVectorPtx;
  input.elements = 1024;
  KernelLaunch launch;
  launch.kernel = "missing_kernel";
  input.launches = {launch};
  Expected<SpecReport> report = analyzeSpec(input);
  REQUIRE_FALSE(report);
  CHECK(report.error().message.find("missing_kernel") != std::string::npos);
}

TEST_CASE("chip models: the five targets of the chip table", "[report]") {
  CHECK(chipModel("sm_90a")->smCount == 132);
  CHECK(chipModel("sm_100a")->smCount == 148);
  CHECK(chipModel("sm_100a")->registersPerSm == 65536);
  CHECK(chipModel("sm_80")->maxThreadsPerSm == 2048);
  CHECK(chipModel("sm_89")->maxThreadsPerSm == 1536);
  CHECK(chipModel("sm_120a")->smCount == 170);
  // A portable name reads its arch-specific row.
  CHECK(chipModel("sm_90")->constants == chipModel("sm_90a")->constants);
  CHECK_FALSE(chipModel("sm_86"));
  CHECK(knownReportChips() == "sm_80, sm_89, sm_90a, sm_100a, sm_120a");
  // A row of limits alone (no part, no bandwidth) has no model.
  CHECK_FALSE(chipModel("sm_103a"));
  // The occupancy limits are the target floor's, the same the lowering
  // reads (target/ChipTable.h).
  CHECK(chipModel("sm_89")->maxBlocksPerSm ==
        chipResources(*lookupChip("sm_89"))->maxBlocksPerSm);
}

TEST_CASE("a fused spec's report shows the unfused sequence", "[report]") {
  SpecInput input;
  input.title = "rmsnorm(eps=1e-06) | quantize copy f32";
  input.chip = h200();
  input.ptx = kVectorPtx;
  input.elements = int64_t(1) << 20;
  input.buffers = {{"input", input.elements * 4, false},
                   {"codes", input.elements, true},
                   {"weight", 4096, false}};
  input.minimumBytes = double(input.elements) * 5;
  input.unfusedBytes = double(input.elements) * 13;
  input.prologueKernels = 1;
  KernelLaunch launch;
  launch.kernel = "copy_kernel";
  launch.block = {256, 1, 1};
  launch.grid = {1024, 1, 1};
  launch.bufferOfParameter = {0, 2, 1};
  input.launches = {launch};
  Expected<SpecReport> report = analyzeSpec(input);
  REQUIRE(report);
  CHECK(report->unfusedBytesPerElement == Approx(13.0));
  CHECK(report->prologueKernels == 1);
  std::string text = formatReportText(*report);
  CHECK(text.find("\n  fused     1 launch(es), minimum 5.00 B/elem; unfused 1 "
                  "prologue kernel(s) + 1 launch(es), minimum 13.00 B/elem "
                  "(2.60x)\n") != std::string::npos);
  std::string row = formatReportMarkdownRow(*report);
  CHECK(row.find("| 1 (unfused 1+1) |") != std::string::npos);
  CHECK(row.find("(5.00; unfused 13.00)") != std::string::npos);

  // Not fused: no such line or cell.
  input.unfusedBytes = 0;
  input.prologueKernels = 0;
  Expected<SpecReport> plain = analyzeSpec(input);
  REQUIRE(plain);
  CHECK(formatReportText(*plain).find("unfused") == std::string::npos);
  CHECK(formatReportMarkdownRow(*plain).find("unfused") == std::string::npos);
}

namespace {

/// Two streaming loops, as decode attention's pass K and pass V: each
/// thread loads 16 bytes per trip from its own buffer (slot 0, then slot
/// 1), lane l at 16 l (tid.x x 16 through a 64-bit widening and a shift),
/// and a lane-uniform 4-byte load of slot 2 before them.
constexpr const char *kTwoPassPtx = R"ptx(
.visible .entry two_pass(
	.param .u64 two_pass_param_0,
	.param .u64 two_pass_param_1,
	.param .u64 two_pass_param_2
)
{
	ld.param.u64 	%rd1, [two_pass_param_0];
	ld.param.u64 	%rd2, [two_pass_param_1];
	ld.param.u64 	%rd3, [two_pass_param_2];
	cvta.to.global.u64 	%rd4, %rd1;
	mov.u32 	%r1, %tid.x;
	cvt.u64.u32 	%rd5, %r1;
	shl.b64 	%rd6, %rd5, 4;
	add.s64 	%rd7, %rd4, %rd6;
	add.s64 	%rd8, %rd2, %rd6;
	ld.global.b32 	%r9, [%rd3];
$L__BB0_1:
	ld.global.v4.b32 	{%r2, %r3, %r4, %r5}, [%rd7];
	add.s64 	%rd7, %rd7, 4096;
	setp.lt.u32 	%p1, %r2, 100;
	@%p1 bra 	$L__BB0_1;
$L__BB0_2:
	ld.global.v4.b32 	{%r2, %r3, %r4, %r5}, [%rd8+16];
	add.s64 	%rd8, %rd8, 4096;
	setp.lt.u32 	%p1, %r2, 100;
	@%p1 bra 	$L__BB0_2;
	ret;
}
)ptx";

} // namespace

TEST_CASE("addresses: each loop's own buffer and the lanes' lines",
          "[report]") {
  Expected<std::vector<PtxKernel>> kernels = analyzePtx(kTwoPassPtx);
  REQUIRE(kernels);
  const PtxKernel &kernel = kernels->front();
  REQUIRE(kernel.accesses.size() == 3);
  // The uniform load: its slot, and no lane pattern.
  CHECK(kernel.accesses[0].addressParameters == std::vector<int>{2});
  CHECK(kernel.accesses[0].warpLines == 0);
  // Lanes 16 B apart: 512 B per warp load, 4 lines; the +16 offset moves
  // them off the line boundary (5 lines).
  CHECK(kernel.accesses[1].addressParameters == std::vector<int>{0});
  CHECK(kernel.accesses[1].warpLines == 4);
  CHECK(kernel.accesses[2].addressParameters == std::vector<int>{1});
  CHECK(kernel.accesses[2].warpLines == 5);

  // Buffers of 64 MiB (slot 0) and 16 MiB (slot 1) over 2^18 threads: the
  // loops take 256 and 64 B per thread at 16 B a trip, 16 and 4 trips, not
  // the thread's share of both (80 MiB / 2^18 / 16 = 20 trips each).
  SpecInput input;
  input.title = "two passes";
  input.chip = h200();
  input.ptx = kTwoPassPtx;
  input.valueBytes = 1;
  input.buffers = {{"input", int64_t(64) << 20, false},
                   {"values", int64_t(16) << 20, false},
                   {"scale", 4, false}};
  input.elements = (int64_t(64) << 20) + (int64_t(16) << 20);
  input.minimumBytes = double(input.elements);
  KernelLaunch launch;
  launch.kernel = "two_pass";
  launch.block = {128, 1, 1};
  launch.grid = {2048, 1, 1};
  launch.bufferOfParameter = {0, 1, 2};
  input.launches = {launch};
  Expected<SpecReport> report = analyzeSpec(input);
  REQUIRE(report);
  const LaunchReport &out = report->launches[0];
  REQUIRE(out.loopTrips.size() == 2);
  CHECK(out.loopTrips[0] == Approx(16.0));
  CHECK(out.loopTrips[1] == Approx(4.0));
  // The launch grows with the tensor (lanes 320 B apart by its shape), but
  // the loops' addresses say 16: 4 and 5 lines. The uniform load shows no
  // lane pattern and keeps the launch shape's rule (32 lines).
  CHECK(out.laneStrideBytes == Approx(320.0));
  CHECK(out.wavefrontsPerAccess == Approx((32.0 + 16 * 4 + 4 * 5) / 21));
}

namespace {

/// A tensor-core loop as decode attention's pass K: lane (g = lane / 4 % 8
/// through bfe, t = lane % 4) loads 16 bytes at row g (128 B) + 16 t, and
/// each trip issues one mma.sync.
constexpr const char *kQuadMmaPtx = R"ptx(
.visible .entry quad_mma(
	.param .u64 quad_mma_param_0
)
{
	ld.param.u64 	%rd1, [quad_mma_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u32 	%r1, %tid.x;
	cvt.u64.u32 	%rd3, %r1;
	bfe.u64 	%rd4, %rd3, 2, 3;
	and.b64 	%rd5, %rd3, 3;
	shl.b64 	%rd6, %rd4, 7;
	shl.b64 	%rd7, %rd5, 4;
	add.s64 	%rd8, %rd2, %rd6;
	add.s64 	%rd9, %rd8, %rd7;
$L__BB0_1:
	ld.global.v4.b32 	{%r2, %r3, %r4, %r5}, [%rd9];
	mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1, %f2, %f3, %f4}, {%r2, %r3, %r4, %r5}, {%r2, %r3}, {%f1, %f2, %f3, %f4};
	add.s64 	%rd9, %rd9, 4096;
	setp.lt.u32 	%p1, %r2, 100;
	@%p1 bra 	$L__BB0_1;
	ret;
}
)ptx";

/// The quad mma kernel `ptx` over 64 MiB on `chip`: 2048 blocks of 128.
SpecInput quadMmaInput(std::string ptx, const ChipModel &chip) {
  SpecInput input;
  input.title = "quad mma";
  input.chip = chip;
  input.ptx = std::move(ptx);
  input.valueBytes = 1;
  input.buffers = {{"input", int64_t(64) << 20, false}};
  input.elements = int64_t(64) << 20;
  input.minimumBytes = double(input.elements);
  KernelLaunch launch;
  launch.kernel = "quad_mma";
  launch.block = {128, 1, 1};
  launch.grid = {2048, 1, 1};
  launch.bufferOfParameter = {0};
  input.launches = {launch};
  return input;
}

} // namespace

TEST_CASE("mma.sync takes its issue slots; bfe lane indices are followed",
          "[report]") {
  Expected<std::vector<PtxKernel>> kernels = analyzePtx(kQuadMmaPtx);
  REQUIRE(kernels);
  const PtxKernel &kernel = kernels->front();
  CHECK(kernel.mmaInstructions == std::vector<int>{11});
  REQUIRE(kernel.accesses.size() == 1);
  // 8 rows (g) of 64 B each (4 lanes x 16 B): 8 lines per warp load.
  CHECK(kernel.accesses[0].warpLines == 8);

  SpecInput input = quadMmaInput(kQuadMmaPtx, h200());
  REQUIRE(input.chip.mmaSyncIssueSlots == 8);
  Expected<SpecReport> report = analyzeSpec(input);
  REQUIRE(report);
  const LaunchReport &out = report->launches[0];
  // 64 MiB over 2^18 threads at 16 B a trip: 16 trips, one mma each.
  CHECK(out.mmaPerThread == Approx(16.0));
  double warps = 2048.0 * 128 / 32;
  CHECK(out.issueSeconds ==
        Approx(warps * (out.instructionsPerThread + 7 * out.mmaPerThread) /
               (132 * 4 * 1.98e9)));
  CHECK(formatReportText(*report).find(
            ", 1 mma.sync (16/thread, 8 issue slots each)") !=
        std::string::npos);
}

TEST_CASE("an mma.sync is charged by its operand kind", "[report]") {
  // The four kinds the chip table gives a rate for, and one it does not.
  CHECK(mmaShapeOf("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32") ==
        MmaShape{MmaKind::F16, 16, 8, 16});
  CHECK(mmaShapeOf("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32") ==
        MmaShape{MmaKind::Fp8, 16, 8, 32});
  CHECK(mmaShapeOf("mma.sync.aligned.m16n8k32.row.col.f16.e5m2.e5m2.f16") ==
        MmaShape{MmaKind::Fp8, 16, 8, 32});
  CHECK(mmaShapeOf("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32") ==
        MmaShape{MmaKind::S8, 16, 8, 32});
  CHECK(mmaShapeOf("mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4."
                   "block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3") ==
        MmaShape{MmaKind::Fp4BlockScaled, 16, 8, 64});
  CHECK_FALSE(mmaShapeOf("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"));

  // sm_90a: f16 at 1024 multiply-adds per clock per SM, e4m3 and s8 at
  // 2048 (half the H100 whitepaper's dense peaks): an m16n8k32 of 8-bit
  // operands holds the slots of an f16 m16n8k16, not twice them.
  ChipModel chip = h200();
  CHECK(mmaIssueSlots(chip, {MmaKind::F16, 16, 8, 16}) == 8);
  CHECK(mmaIssueSlots(chip, {MmaKind::Fp8, 16, 8, 32}) == 8);
  CHECK(mmaIssueSlots(chip, {MmaKind::S8, 16, 8, 32}) == 8);
  // No block-scaled FP4 mma.sync before sm_120a; on it, 2048 per clock.
  CHECK(mmaIssueSlots(chip, {MmaKind::Fp4BlockScaled, 16, 8, 64}) == 0);
  std::optional<ChipModel> rtx = chipModel("sm_120a");
  REQUIRE(rtx);
  CHECK(mmaIssueSlots(*rtx, {MmaKind::Fp4BlockScaled, 16, 8, 64}) == 16);
  CHECK(mmaIssueSlots(*rtx, {MmaKind::F16, 16, 8, 16}) == 16);

  // The quad mma kernel with an e4m3 m16n8k32 instead: its issue term
  // charges 8 slots per mma (16 were the kind ignored and k counted).
  std::string ptx = kQuadMmaPtx;
  std::string f16 = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32";
  ptx.replace(ptx.find(f16), f16.size(),
              "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32");
  SpecInput input = quadMmaInput(ptx, *rtx);
  Expected<SpecReport> report = analyzeSpec(input);
  REQUIRE(report);
  const LaunchReport &out = report->launches[0];
  REQUIRE(out.mma);
  CHECK(out.mma->kind == MmaKind::Fp8);
  // sm_120a: e4m3 at 1024 multiply-adds per clock per SM, 16 slots.
  CHECK(out.mmaSlotsPerThread == Approx(16 * out.mmaPerThread));
  CHECK(formatReportText(*report).find(
            ", 1 mma.sync (16/thread, 16 issue slots each)") !=
        std::string::npos);
}

namespace {

/// A paged cache's reads (docs/decode-attention.md): thread tid is lane
/// j = tid % 8 of row r = tid / 8, reading 16 bytes at j * 16 of a 128-byte
/// row. Loop 1: one page per trip, its number loaded from the block table
/// at a lane-uniform address (token t = block * 256 + 16 k + r, the word
/// at (t >> 2) & 0x3ff...fc as LLVM writes t / 16 * 4), the row r * 128 of
/// that page plus the block's (an `or` of two bases). Loop 2: each
/// row r in a page of its own, the number at table[r]: four pages per warp.
constexpr const char *kPagedPtx = R"ptx(
.visible .entry paged(
	.param .u64 paged_param_0,
	.param .u64 paged_param_1
)
{
	ld.param.u64 	%rd1, [paged_param_0];
	ld.param.u64 	%rd2, [paged_param_1];
	cvta.to.global.u64 	%rd3, %rd1;
	cvta.to.global.u64 	%rd4, %rd2;
	mov.u32 	%r1, %tid.x;
	cvt.u64.u32 	%rd5, %r1;
	and.b64 	%rd6, %rd5, 7;
	shr.u64 	%rd7, %rd5, 3;
	shl.b64 	%rd8, %rd6, 4;
	shl.b64 	%rd9, %rd7, 7;
	add.s64 	%rd10, %rd8, %rd9;
	mov.u64 	%rd11, 0;
	mov.u32 	%r8, %ctaid.x;
	mul.wide.u32 	%rd22, %r8, 256;
	add.s64 	%rd23, %rd22, %rd7;
	mul.wide.u32 	%rd24, %r8, 512;
$L__BB0_1:
	shl.b64 	%rd12, %rd11, 4;
	add.s64 	%rd25, %rd23, %rd12;
	shr.u64 	%rd26, %rd25, 2;
	and.b64 	%rd27, %rd26, 4611686018427387900;
	add.s64 	%rd13, %rd4, %rd27;
	ld.global.u32 	%r2, [%rd13];
	mul.wide.s32 	%rd14, %r2, 2048;
	or.b64 	%rd28, %rd14, %rd24;
	add.s64 	%rd15, %rd3, %rd28;
	add.s64 	%rd16, %rd15, %rd10;
	ld.global.v4.b32 	{%r3, %r4, %r5, %r6}, [%rd16];
	add.s64 	%rd11, %rd11, 1;
	setp.lt.u64 	%p1, %rd11, 100;
	@%p1 bra 	$L__BB0_1;
	shl.b64 	%rd17, %rd7, 2;
	add.s64 	%rd18, %rd4, %rd17;
$L__BB0_2:
	ld.global.u32 	%r7, [%rd18];
	mul.wide.s32 	%rd19, %r7, 2048;
	add.s64 	%rd20, %rd3, %rd19;
	add.s64 	%rd21, %rd20, %rd8;
	ld.global.v4.b32 	{%r3, %r4, %r5, %r6}, [%rd21];
	add.s64 	%rd18, %rd18, 64;
	setp.lt.u64 	%p1, %rd18, 100;
	@%p1 bra 	$L__BB0_2;
	ret;
}
)ptx";

} // namespace

TEST_CASE("paged reads: page numbers from the table, loads that wait",
          "[report]") {
  Expected<std::vector<PtxKernel>> kernels = analyzePtx(kPagedPtx);
  REQUIRE(kernels);
  const PtxKernel &kernel = kernels->front();
  REQUIRE(kernel.accesses.size() == 4);
  // Loop 1: the table word is lane-uniform; the four rows of one page are
  // 512 contiguous bytes, 4 lines, and wait for the table load.
  CHECK(kernel.accesses[0].warpLines == 0);
  CHECK(kernel.accesses[0].feedingLoad == -1);
  CHECK(kernel.accesses[1].warpLines == 4);
  CHECK(kernel.accesses[1].addressParameters == std::vector<int>{0});
  CHECK(kernel.accesses[1].feedingLoad == kernel.accesses[0].instruction);
  // Loop 2: four table words in one line; four pages, each row's 128 B
  // at offset 0 of its own page: 4 lines, not 1 (one base) nor 32
  // (an unknown address).
  CHECK(kernel.accesses[2].warpLines == 1);
  CHECK(kernel.accesses[3].warpLines == 4);
  CHECK(kernel.accesses[3].feedingLoad == kernel.accesses[2].instruction);

  // A trip's KV load waits a latency for its page number: the bytes in
  // flight serve half the bandwidth.
  SpecInput input;
  input.title = "paged";
  input.chip = h200();
  input.ptx = kPagedPtx;
  input.valueBytes = 1;
  input.buffers = {{"codes", int64_t(64) << 20, false}, {"table", 4096, false}};
  input.elements = int64_t(64) << 20;
  input.minimumBytes = double(input.elements);
  KernelLaunch launch;
  launch.kernel = "paged";
  launch.block = {128, 1, 1};
  launch.grid = {64, 1, 1};
  launch.bufferOfParameter = {0, 1};
  input.launches = {launch};
  Expected<SpecReport> report = analyzeSpec(input);
  REQUIRE(report);
  const LaunchReport &out = report->launches[0];
  CHECK(out.latenciesPerTrip == 2);
  CHECK(out.memorySeconds ==
        Approx(double(input.buffers[0].bytes + input.buffers[1].bytes) /
               (out.bytesInFlight / (2 * input.chip.memoryLatencySeconds))));
  CHECK(out.limiter.find("each trip's loads wait for a loaded address") !=
        std::string::npos);
  CHECK(formatReportText(*report).find("2 latencies per trip") !=
        std::string::npos);

  // The two-pass kernel's loads take their addresses from parameters only.
  input.ptx = kTwoPassPtx;
  input.buffers = {{"input", int64_t(64) << 20, false},
                   {"values", int64_t(16) << 20, false},
                   {"scale", 4, false}};
  launch.kernel = "two_pass";
  launch.bufferOfParameter = {0, 1, 2};
  input.launches = {launch};
  Expected<SpecReport> unpaged = analyzeSpec(input);
  REQUIRE(unpaged);
  CHECK(unpaged->launches[0].latenciesPerTrip == 1);
}

namespace {

/// Atomics under the guards LLVM writes for a block reduction: one per warp
/// (tid % 32 == 0, a branch around it), one per block (tid == 0, a
/// predicate on the atomic), one in warp 0's lane 0 under a data-dependent
/// test (the analysis cannot read data: it counts the thread that may run
/// it), and one that every thread executes.
constexpr const char *kGuardedPtx = R"ptx(
.visible .entry guarded(
	.param .u64 guarded_param_0
)
{
	ld.param.u64 	%rd1, [guarded_param_0];
	mov.u32 	%r1, %tid.x;
	and.b32 	%r2, %r1, 31;
	setp.ne.s32 	%p1, %r2, 0;
	@%p1 bra 	$L__BB0_2;
	red.global.max.u32 	[%rd1], %r1;
$L__BB0_2:
	setp.eq.s32 	%p2, %r1, 0;
	@%p2 atom.global.add.u32 	%r3, [%rd1+4], 1;
	shr.u32 	%r4, %r1, 5;
	setp.ne.s32 	%p3, %r4, 0;
	@%p3 bra 	$L__BB0_4;
	setp.ne.s32 	%p4, %r2, 0;
	@%p4 bra 	$L__BB0_4;
	ld.global.u32 	%r5, [%rd1];
	setp.eq.s32 	%p5, %r5, 7;
	@!%p5 bra 	$L__BB0_4;
	atom.global.exch.b32 	%r6, [%rd1], 0;
$L__BB0_4:
	red.global.add.u32 	[%rd1+8], 1;
	ret;
}
)ptx";

/// kGuardedPtx launched as 4096 blocks of 256 threads.
SpecInput guardedInput() {
  SpecInput input;
  input.title = "guarded";
  input.chip = h200();
  input.ptx = kGuardedPtx;
  input.elements = 1 << 20;
  input.buffers = {{"scratch", 16, true}};
  input.minimumBytes = 16;
  KernelLaunch launch;
  launch.kernel = "guarded";
  launch.block = {256, 1, 1};
  launch.grid = {4096, 1, 1};
  launch.bufferOfParameter = {0};
  input.launches = {launch};
  return input;
}

} // namespace

TEST_CASE("atomics count as executed: per block under a tid guard",
          "[report]") {
  Expected<std::vector<PtxKernel>> kernels = analyzePtx(kGuardedPtx);
  REQUIRE(kernels);
  const PtxKernel &kernel = kernels->front();
  REQUIRE(kernel.atomics == 4);
  REQUIRE(kernel.atomicThreads.size() == 4);
  // Of a block of 256: lanes 0 of the 8 warps, thread 0, thread 0, all.
  auto running = [](const ThreadSet &threads, int blockX) {
    int count = 0;
    for (int x = 0; x < blockX; ++x)
      count += threads[size_t(x)];
    return count;
  };
  CHECK(running(kernel.atomicThreads[0], 256) == 8);
  CHECK(kernel.atomicThreads[0][32]);
  CHECK_FALSE(kernel.atomicThreads[0][1]);
  CHECK(running(kernel.atomicThreads[1], 256) == 1);
  CHECK(kernel.atomicThreads[1][0]);
  CHECK(running(kernel.atomicThreads[2], 256) == 1);
  CHECK(running(kernel.atomicThreads[3], 256) == 256);

  SpecInput input = guardedInput();
  Expected<SpecReport> report = analyzeSpec(input);
  REQUIRE(report);
  const LaunchReport &out = report->launches[0];
  // 8 + 1 + 1 + 256 per block, not 4 atomics x 256 threads.
  CHECK(out.atomicsPerBlock == 266);
  CHECK(out.atomicsExecuted == 266 * 4096);
  CHECK(out.atomicSeconds == Approx(266.0 * 4096 * 0.5e-9));
  CHECK(out.limiter.find("266 per block x 4096 blocks") != std::string::npos);

  // Without the every-thread reduction the block runs 10, and a 2D block
  // runs its x guard once per y row.
  input.ptx = std::string(kGuardedPtx);
  size_t at = input.ptx.find("\tred.global.add.u32 \t[%rd1+8], 1;");
  REQUIRE(at != std::string::npos);
  input.ptx.erase(at, input.ptx.find('\n', at) - at);
  input.launches[0].block = {128, 2, 1};
  Expected<SpecReport> guarded = analyzeSpec(input);
  REQUIRE(guarded);
  CHECK(guarded->launches[0].atomicsPerBlock == (4 + 1 + 1) * 2);
}

namespace {

/// `nvdisasm -c` of ptxas's sm_90a code for a guarded reduction, a loop
/// that loads 16 bytes a trip, a spill and a shared store (shortened by
/// hand; the line format is nvdisasm's).
constexpr const char *kSass = R"sass(
	.target	sm_90a
//--------------------- .text.looped             --------------------------
	.section	.text.looped,"ax",@progbits
looped:
.text.looped:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   S2R R0, SR_TID.X ;
        /*0020*/                   ISETP.NE.AND P0, PT, R0, RZ, PT ;
.L_x_0:
        /*0030*/                   LDG.E.128.CONSTANT R4, desc[UR8][R2.64] ;
        /*0040*/                   FFMA R8, R4, R5, R6 ;
        /*0050*/                   MUFU.RCP R9, R8 ;
        /*0060*/                   F2FP.BF16.F32.PACK_AB R10, R9, R8 ;
        /*0070*/                   STG.E.U16 desc[UR8][R12.64], R10 ;
        /*0080*/                   IADD3 R2, P1, R2, 0x10, RZ ;
        /*0090*/               @P1 BRA `(.L_x_0) ;
        /*00a0*/                   STL [R1], R23 ;
        /*00b0*/                   LDL R23, [R1] ;
        /*00c0*/                   STS [R0], R8 ;
        /*00d0*/                   SHFL.BFLY PT, R11, R8, 0x1, 0x1f ;
        /*00e0*/               @P0 BRA `(.L_x_1) ;
        /*00f0*/                   REDG.E.MAX.STRONG.GPU desc[UR8][R2.64], R7 ;
        /*0100*/                   ATOMG.E.EXCH.STRONG.GPU PT, R3, desc[UR8][R2.64], RZ ;
.L_x_1:
        /*0110*/                   EXIT ;
.L_x_2:
        /*0120*/                   BRA `(.L_x_2);
        /*0130*/                   NOP;
)sass";

} // namespace

TEST_CASE("SASS: mix, widths, atomics, spills and the critical loop",
          "[report]") {
  std::vector<SassKernel> kernels = analyzeSass(kSass);
  REQUIRE(kernels.size() == 1);
  const SassKernel &kernel = kernels[0];
  CHECK(kernel.name == "looped");
  // 19 instructions: the NOP padding is not one.
  CHECK(kernel.instructions == 19);
  CHECK(kernel.mix.at("fp32") == 1);
  CHECK(kernel.mix.at("mufu") == 1);
  CHECK(kernel.mix.at("conversion") == 1);
  CHECK(kernel.mix.at("int") == 2);
  CHECK(kernel.mix.at("control") == 4);
  CHECK(kernel.loadWidths == std::map<int, int>{{128, 1}});
  CHECK(kernel.storeWidths == std::map<int, int>{{16, 1}});
  CHECK(kernel.atomics ==
        std::map<std::string, int>{{"ATOMG.EXCH", 1}, {"REDG.MAX", 1}});
  CHECK(kernel.atomicCount() == 2);
  CHECK(kernel.sharedStoreBytes == 4);
  CHECK(kernel.localLoads == 1);
  CHECK(kernel.localStores == 1);
  CHECK(kernel.highestRegister == 23);
  // One loop (the trap branching to itself is none): 16 B in, 2 B out.
  REQUIRE(kernel.loops.size() == 1);
  CHECK(kernel.criticalLoop == 0);
  CHECK(kernel.loops[0].firstInstruction == 3);
  CHECK(kernel.loops[0].lastInstruction == 9);
  CHECK(kernel.loops[0].globalLoadBytes == 16);
  CHECK(kernel.loops[0].globalStoreBytes == 2);
  CHECK(sassMixText(kernel).starts_with("fp32 1, mufu 1, int 2"));
  CHECK(analyzeSass("no code here").empty());
}

TEST_CASE("the report says where SASS is missing", "[report]") {
  SpecInput input = guardedInput();
  input.sassUnavailable = "no nvdisasm (test)";
  Expected<SpecReport> bare = analyzeSpec(input);
  REQUIRE(bare);
  CHECK_FALSE(bare->launches[0].sass);
  CHECK(formatReportText(*bare).find(
            "sass      unavailable (no nvdisasm (test)); the counts are PTX") !=
        std::string::npos);

  // SASS of another kernel: the launch has none, and the report says so.
  input.sassUnavailable.clear();
  input.sass = kSass;
  Expected<SpecReport> other = analyzeSpec(input);
  REQUIRE(other);
  CHECK_FALSE(other->launches[0].sass);
  CHECK(other->sassUnavailable == "no SASS of guarded");

  std::string renamed(kSass);
  for (size_t at; (at = renamed.find("looped")) != std::string::npos;)
    renamed.replace(at, 6, "guarded");
  input.sass = renamed;
  Expected<SpecReport> read = analyzeSpec(input);
  REQUIRE(read);
  REQUIRE(read->launches[0].sass);
  std::string text = formatReportText(*read);
  CHECK(text.find("    sass      19 instr (fp32 1, mufu 1, int 2") !=
        std::string::npos);
  CHECK(text.find("atomics ATOMG.EXCH x1 REDG.MAX x1") != std::string::npos);
  CHECK(text.find("critical loop 7 instr, 16 B loaded and 2 B stored") !=
        std::string::npos);
}

TEST_CASE("the report names the assumptions its estimate rests on",
          "[report]") {
  // The guarded kernel at 4096 blocks: bound by its every-thread atomic,
  // so the contended-atomic cost and the launch overhead are what it rests
  // on; both are ASSUMED in the table.
  SpecInput input = guardedInput();
  Expected<SpecReport> report = analyzeSpec(input);
  REQUIRE(report);
  CHECK(report->assumptions ==
        std::vector<std::string>{"launch overhead 1.5 us",
                                 "contended atomic 0.5 ns"});
  CHECK(formatReportText(*report).find(
            "  assumes   launch overhead 1.5 us, contended atomic 0.5 ns "
            "(ASSUMED in the chip table") != std::string::npos);
}

TEST_CASE("a launch naming a buffer the spec lacks is an error", "[report]") {
  // The per-tensor amax's workspace was once left out of the buffers, and
  // the model read past their end.
  SpecInput input = guardedInput();
  input.launches[0].bufferOfParameter = {1};
  Expected<SpecReport> report = analyzeSpec(input);
  REQUIRE_FALSE(report);
  CHECK(report.error().message.find("names buffer 1, but the spec has 1") !=
        std::string::npos);
}

TEST_CASE("SASS in the estimate: ptxas's unroll, loads in flight and pipes",
          "[report]") {
  // PTX only: one loop of 16 B a trip.
  Expected<SpecReport> ptx =
      analyzeSpec(copyInput(readTestData("copy_kernel.ptx")));
  REQUIRE(ptx);
  const LaunchReport &fromPtx = ptx->launches[0];
  CHECK_FALSE(fromPtx.fromSass);
  CHECK(fromPtx.bytesInFlight == Approx(132.0 * 1024 * 16));
  CHECK(formatReportText(*ptx).find("    issue     from PTX (no SASS): ") !=
        std::string::npos);

  // ptxas unrolled the loop 4 times (copy_kernel.sm_90a.sass): 64 B a trip,
  // a quarter of the PTX loop's trips, four times the loads in flight.
  Expected<SpecReport> sass =
      analyzeSpec(copyInput(readTestData("copy_kernel.ptx"),
                            readTestData("copy_kernel.sm_90a.sass")));
  REQUIRE(sass);
  const LaunchReport &out = sass->launches[0];
  REQUIRE(out.sass);
  CHECK(out.fromSass);
  REQUIRE(out.sass->loops.size() == 1);
  CHECK(out.sass->loops[0].globalLoadBytes == 64);
  CHECK(out.sassMainLoopLoadBytes == 64);
  REQUIRE(out.sassLoopTrips.size() == 1);
  CHECK(out.sassLoopTrips[0] == Approx(out.loopTrips[0] / 4));
  CHECK(out.bytesInFlight == Approx(132.0 * 1024 * 64));
  // The loop's 23 instructions per trip, the rest once.
  int loopSize = out.sass->loops[0].instructions();
  CHECK(out.sassPerThread == Approx(out.sass->instructions - loopSize +
                                    loopSize * out.sassLoopTrips[0]));
  // 8 conversions and no fp32, MUFU or tensor work: dispatch binds.
  CHECK(out.issueBinding == "dispatch");
  CHECK(out.mufuPerThread == 0);
  double warps = double(out.threads) / 32;
  CHECK(out.issueSeconds ==
        Approx(warps * out.sassPerThread / 4 / (132 * 1.98e9)));
  CHECK(formatReportText(*sass).find("    issue     from SASS: ") !=
        std::string::npos);
  // 2.1 MiB in flight from the PTX's view, 8.3 MiB from ptxas's: the
  // latency (3.4 MB at 4.8 TB/s x 700 ns) no longer limits the reads.
  CHECK(out.limiter == "HBM bandwidth");
  CHECK(fromPtx.limiter.starts_with("memory-level parallelism"));

  // The same loop on the MUFU pipe (16 lanes per SM): a warp instruction
  // takes 2 of its clocks, which bind before the 4 dispatch slots do.
  std::string mufu = readTestData("copy_kernel.sm_90a.sass");
  for (size_t at; (at = mufu.find("F2FP.SATFINITE.E4M3.F32.PACK_AB_MERGE_C")) !=
                  std::string::npos;)
    mufu.replace(at, 39, "MUFU.RCP");
  Expected<SpecReport> rcp =
      analyzeSpec(copyInput(readTestData("copy_kernel.ptx"), mufu));
  REQUIRE(rcp);
  const LaunchReport &pipe = rcp->launches[0];
  CHECK(pipe.issueBinding == "MUFU pipe");
  CHECK(pipe.mufuPerThread > 0);
  CHECK(pipe.issueSeconds ==
        Approx(warps * pipe.mufuPerThread * 2 / (132 * 1.98e9)));
  CHECK(pipe.issueSeconds > out.issueSeconds);
}
