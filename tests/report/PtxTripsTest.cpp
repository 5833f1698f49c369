//===- PtxTripsTest.cpp - Loop trips from a PTX loop's bound --------------===//
//
// runtime/report/PtxTrips.h on hand-written loops whose trips are known:
// a constant bound, a bound computed from a scalar argument the launch
// gives (a GEMM's ceil(K / 32) chunks), a block-stride loop over the
// launch's block size, a loop with its test on top, and loops whose trips
// the PTX does not state.
//
//===----------------------------------------------------------------------===//

#include "runtime/report/PtxTrips.h"
#include "runtime/report/GpuReport.h"

#include <catch2/catch.hpp>

#include <string>

using namespace lowbit;
using namespace lowbit::report;

namespace {

std::string kernelWith(const std::string &body) {
  return R"ptx(
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(
	.param .u64 k_param_0,
	.param .u32 k_param_1
)
{
)ptx" + body +
         "\tret;\n}\n";
}

/// The trips analyzePtx states for the kernel's only loop (0: none).
double statedOf(const std::string &ptx, std::map<int, int64_t> bound = {},
                std::array<int64_t, 3> block = {0, 0, 0}) {
  Expected<std::vector<PtxKernel>> kernels =
      analyzePtx(ptx, {{"k", bound}}, {{"k", block}});
  REQUIRE(kernels);
  REQUIRE(kernels->size() == 1);
  const PtxKernel &kernel = kernels->front();
  REQUIRE(kernel.loops.size() == 1);
  REQUIRE(kernel.loopStatedTrips.size() == 1);
  return kernel.loopStatedTrips[0];
}

} // namespace

TEST_CASE("trips: the smallest trip at which the test fails", "[report]") {
  // d(t) = first + (t - 1) step: -127 .. -1 go on, 0 stops.
  CHECK(tripsWhile("lt", -127, 1) == 128);
  CHECK(tripsWhile("lt", -128, 1) == 129);
  CHECK(tripsWhile("lt", -10, 4) == 4); // 0, 4, 8 go on: -10, -6, -2
  CHECK(tripsWhile("le", -8, 4) == 4);  // -8, -4, 0 go on
  CHECK(tripsWhile("gt", 5, -1) == 6);
  CHECK(tripsWhile("ne", -3, 1) == 4); // a count-up to zero
  CHECK(tripsWhile("lt", 0, 1) == 1);  // a rotated loop runs once
  CHECK(tripsWhile("eq", 0, 1) == 2);
  CHECK_FALSE(tripsWhile("lt", -1, 0));   // never stops
  CHECK_FALSE(tripsWhile("ne", -3, 2));   // steps over its bound
  CHECK_FALSE(tripsWhile("lt", -1, -1));  // walks away from it
  CHECK_FALSE(tripsWhile("lt.f", -1, 1)); // not an integer compare
}

TEST_CASE("trips: a counter against a constant bound", "[report]") {
  CHECK(statedOf(kernelWith(R"(
	mov.u32 	%r1, 0;
$L__BB0_1:
	add.s32 	%r1, %r1, 1;
	setp.lt.s32 	%p1, %r1, 128;
	@%p1 bra 	$L__BB0_1;
)")) == 128);
  // The same through `@!%p`, counting down by 2 with the step after the
  // compare, and through a copy `t = r + 1` compared before the step.
  CHECK(statedOf(kernelWith(R"(
	mov.u32 	%r1, 64;
$L__BB0_1:
	setp.le.s32 	%p1, %r1, 0;
	sub.s32 	%r1, %r1, 2;
	@!%p1 bra 	$L__BB0_1;
)")) == 33);
  CHECK(statedOf(kernelWith(R"(
	mov.u32 	%r1, 0;
$L__BB0_1:
	add.s32 	%r2, %r1, 1;
	setp.lt.u32 	%p1, %r2, 16;
	add.s32 	%r1, %r1, 1;
	@%p1 bra 	$L__BB0_1;
)")) == 16);
}

TEST_CASE("trips: a GEMM's chunks of K from the launch's argument",
          "[report]") {
  // for (chunk = 0; chunk < ceil(K / 32); ++chunk), K a scalar argument.
  std::string ptx = kernelWith(R"(
	ld.param.u32 	%r1, [k_param_1];
	add.s32 	%r2, %r1, 31;
	shr.u32 	%r3, %r2, 5;
	mov.u32 	%r4, 0;
$L__BB0_1:
	add.s32 	%r4, %r4, 1;
	setp.lt.s32 	%p1, %r4, %r3;
	@%p1 bra 	$L__BB0_1;
)");
  CHECK(statedOf(ptx, {{1, 4096}}) == 128);
  CHECK(statedOf(ptx, {{1, 4000}}) == 125);
  // Without the argument the PTX does not state the trips.
  CHECK(statedOf(ptx) == 0);
  // MLIR's ceildivui: k == 0 ? 0 : (k - 1) / 32 + 1, through a selp on a
  // compare of known lanes.
  std::string ceilDiv = kernelWith(R"(
	ld.param.u32 	%r1, [k_param_1];
	setp.eq.s32 	%p2, %r1, 0;
	add.s32 	%r5, %r1, -1;
	shr.u32 	%r6, %r5, 5;
	add.s32 	%r7, %r6, 1;
	selp.b32 	%r3, 0, %r7, %p2;
	mov.u32 	%r4, 0;
$L__BB0_1:
	add.s32 	%r4, %r4, 1;
	setp.lt.s32 	%p1, %r4, %r3;
	@%p1 bra 	$L__BB0_1;
)");
  CHECK(statedOf(ceilDiv, {{1, 4096}}) == 128);
  CHECK(statedOf(ceilDiv, {{1, 4097}}) == 129);
}

TEST_CASE("trips: a guard the launch decides skips a loop", "[report]") {
  // if (k % 64 != 0) { tail loop }: with k = 4096 no lane reaches it.
  std::string ptx = kernelWith(R"(
	ld.param.u32 	%r1, [k_param_1];
	and.b32 	%r2, %r1, 63;
	setp.eq.s32 	%p1, %r2, 0;
	@%p1 bra 	$L__BB0_3;
	mov.u32 	%r4, 0;
$L__BB0_2:
	add.s32 	%r4, %r4, 1;
	setp.lt.s32 	%p2, %r4, %r2;
	@%p2 bra 	$L__BB0_2;
$L__BB0_3:
)");
  auto reached = [&](int64_t k) {
    Expected<std::vector<PtxKernel>> kernels =
        analyzePtx(ptx, {{"k", {{1, k}}}});
    REQUIRE(kernels);
    const PtxKernel &kernel = kernels->front();
    REQUIRE(kernel.loops.size() == 1);
    return bool(kernel.reached[size_t(kernel.loops[0].firstInstruction)]);
  };
  CHECK_FALSE(reached(4096));
  CHECK(reached(4100));
  // Unbound, the guard sends every lane both ways.
  Expected<std::vector<PtxKernel>> unbound = analyzePtx(ptx);
  REQUIRE(unbound);
  CHECK(unbound->front()
            .reached[size_t(unbound->front().loops[0].firstInstruction)]);
}

TEST_CASE("trips: a buffer's alignment decides vLLM's prologue", "[report]") {
  // prefix = min((-(addr) >> 1) & 7, n): 0 elements of a 256-byte-aligned
  // bf16 buffer, read through the address parameter.
  std::string ptx = kernelWith(R"(
	ld.param.u64 	%rd1, [k_param_0];
	cvt.u32.u64 	%r1, %rd1;
	neg.s32 	%r2, %r1;
	shr.u32 	%r3, %r2, 1;
	and.b32  	%r4, %r3, 7;
	mov.u32 	%r5, %tid.x;
$L__BB0_1:
	add.s32 	%r5, %r5, 16;
	setp.lt.s32 	%p1, %r5, %r4;
	@%p1 bra 	$L__BB0_1;
)");
  Expected<std::vector<PtxKernel>> aligned =
      analyzePtx(ptx, {}, {}, {{"k", {0}}});
  REQUIRE(aligned);
  CHECK(aligned->front().loopStatedTrips[0] == 1);
  // Without knowing slot 0 holds a buffer, the prologue is unknown.
  Expected<std::vector<PtxKernel>> unknown = analyzePtx(ptx);
  REQUIRE(unknown);
  CHECK(unknown->front().loopStatedTrips[0] == 0);
}

TEST_CASE("trips: a block-stride loop over the launch's block", "[report]") {
  // for (i = tid; i < 1000; i += blockDim.x): lanes 0..31 of warp 0 run
  // 4 trips at 256 threads, 8 at 128 (lane 0: 0, 128, ..., 896).
  std::string ptx = kernelWith(R"(
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, %ntid.x;
$L__BB0_1:
	add.s32 	%r1, %r1, %r2;
	setp.lt.s32 	%p1, %r1, 1000;
	@%p1 bra 	$L__BB0_1;
)");
  CHECK(statedOf(ptx, {}, {256, 1, 1}) == 4);
  CHECK(statedOf(ptx, {}, {128, 1, 1}) == 8);
  CHECK(statedOf(ptx) == 0);
}

TEST_CASE("trips: a loop with its test on top", "[report]") {
  // The test runs 6 times (0, 2, ..., 10), the body 5.
  CHECK(statedOf(kernelWith(R"(
	mov.u32 	%r1, 0;
$L__BB0_1:
	setp.ge.s32 	%p1, %r1, 10;
	@%p1 bra 	$L__BB0_3;
	add.s32 	%r1, %r1, 2;
	bra.uni 	$L__BB0_1;
$L__BB0_3:
)")) == 5);
}

TEST_CASE("trips: loops whose trips the PTX does not state", "[report]") {
  // A bound loaded from memory (data), a counter stepped twice, a float
  // compare.
  CHECK(statedOf(kernelWith(R"(
	ld.param.u64 	%rd1, [k_param_0];
	ld.global.u32 	%r3, [%rd1];
	mov.u32 	%r1, 0;
$L__BB0_1:
	add.s32 	%r1, %r1, 1;
	setp.lt.s32 	%p1, %r1, %r3;
	@%p1 bra 	$L__BB0_1;
)")) == 0);
  CHECK(statedOf(kernelWith(R"(
	mov.u32 	%r1, 0;
$L__BB0_1:
	add.s32 	%r1, %r1, 1;
	add.s32 	%r1, %r1, 1;
	setp.lt.s32 	%p1, %r1, 64;
	@%p1 bra 	$L__BB0_1;
)")) == 0);
  CHECK(statedOf(kernelWith(R"(
	mov.f32 	%f1, 0f00000000;
$L__BB0_1:
	add.f32 	%f1, %f1, 0f3F800000;
	setp.lt.f32 	%p1, %f1, 0f42800000;
	@%p1 bra 	$L__BB0_1;
)")) == 0);
}
