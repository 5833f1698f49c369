//===- EmulatorMmaTest.cpp - nvvm.mma.sync in the GPU emulator ------------===//
//
// Hand-written tensor-core kernels (MmaKernels.h) run in the emulator and
// compared bit for bit with the documented order computed here: d = c, then
// d = fmaf(a_k, b_k, d) for k ascending (docs/emulator.md "Tensor cores"). f16
// and bf16, m16n8k16 and m16n8k8, one mma and a chain of two; small integers,
// random values, negative zeros, subnormals, NaN and infinities. Then what
// must fail: a lane that skips the mma, and kernels whose fragment map is
// wrong (two registers swapped). The same kernels' PTX assembles with
// ptxas for sm_80, sm_90a and sm_100a.
//
//===----------------------------------------------------------------------===//

#include "GpuTestSupport.h"
#include "lowering/GpuMmaLayout.h"
#include "tests/emulator/EmulatorTestSupport.h"
#include "tests/emulator/MmaCheck.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <iostream>

using namespace lowbit;
using namespace lowbit::testing;

TEST_CASE("emulator: the mma fragment maps cover each matrix once",
          "[emulator][mma]") {
  for (mma::MmaShape shape :
       {mma::MmaShape::M16N8K16, mma::MmaShape::M16N8K8}) {
    int k = mma::mmaK(shape);
    std::vector<int> a(size_t(16 * k)), b(size_t(k * 8)), cd(128);
    for (int lane = 0; lane < 32; ++lane) {
      for (int i = 0; i < 2 * mma::aRegisters(shape); ++i) {
        mma::MatrixCoordinate at = mma::aElement(lane, i);
        REQUIRE((at.row < 16 && at.col < k));
        ++a[size_t(at.row * k + at.col)];
      }
      for (int i = 0; i < 2 * mma::bRegisters(shape); ++i) {
        mma::MatrixCoordinate at = mma::bElement(lane, i);
        REQUIRE((at.row < k && at.col < 8));
        ++b[size_t(at.row * 8 + at.col)];
      }
      for (int i = 0; i < mma::kAccumulatorRegisters; ++i) {
        mma::MatrixCoordinate at = mma::accumulatorElement(lane, i);
        ++cd[size_t(at.row * 8 + at.col)];
      }
    }
    for (std::vector<int> *counts : {&a, &b, &cd})
      CHECK(std::count(counts->begin(), counts->end(), 1) ==
            std::ptrdiff_t(counts->size()));
  }
  // Spot checks against the PTX ISA's figures: lane 5 is group 1, thread 1.
  CHECK(mma::aElement(5, 0) == mma::MatrixCoordinate{1, 2});
  CHECK(mma::aElement(5, 3) == mma::MatrixCoordinate{9, 3});
  CHECK(mma::aElement(5, 6) == mma::MatrixCoordinate{9, 10});
  CHECK(mma::bElement(5, 3) == mma::MatrixCoordinate{11, 1});
  CHECK(mma::accumulatorElement(5, 2) == mma::MatrixCoordinate{9, 2});
}

namespace {

/// D of `v`'s kernel over `tiles`, checked bit for bit against referenceD
/// (counting its NaN in `nans`).
std::vector<int32_t> runAndCheck(const MmaKernelVariant &v,
                                 const std::vector<MmaTile> &tiles,
                                 size_t &nans) {
  std::vector<int32_t> d;
  std::string error = runMmaTiles(mmaKernelText(v), v, tiles, d);
  INFO(describe(v) << ": " << error);
  REQUIRE(error == "");
  CHECK(mismatches(v, tiles, d, &nans) == 0);
  return d;
}

} // namespace

TEST_CASE("emulator: mma.sync is the fma chain d = fmaf(a_k, b_k, d)",
          "[emulator][mma]") {
  size_t elements = 0, nans = 0, chainOnly = 0;
  for (const MmaKernelVariant &v : everyVariant()) {
    std::vector<MmaTile> tiles =
        makeTiles(v, uint32_t(v.k * 10 + v.bf16 * 3 + v.steps));
    std::vector<int32_t> d = runAndCheck(v, tiles, nans);
    elements += d.size();
    // The last tile tells the chain from one rounding of the exact sum:
    // the emulator must give the chain there, not the f64 sum.
    std::vector<uint32_t> chain = referenceD(tiles.back(), v),
                          exact = float64ReferenceD(tiles.back(), v);
    size_t differ = 0;
    for (size_t i = 0; i < 128; ++i)
      if (chain[i] != exact[i]) {
        ++differ;
        CHECK(uint32_t(d[(tiles.size() - 1) * 128 + i]) == chain[i]);
      }
    CHECK(differ == 128);
    chainOnly += differ;
  }
  CHECK(nans > 0);
  std::cout << "emulator: mma.sync m16n8k16/m16n8k8 x f16/bf16 x 1/2 steps: "
            << elements << " elements of D bit-exact (" << nans
            << " NaN) against the fma chain, " << chainOnly
            << " of them where one rounding of the exact sum differs\n";
}

TEST_CASE("emulator: 8-bit mma.sync (e4m3, e5m2, s8, u8) as the PTX ISA says",
          "[emulator][mma]") {
  size_t elements = 0, nans = 0;
  for (const MmaKernelVariant &v : everyByteVariant()) {
    elements +=
        runAndCheck(v, makeTiles(v, uint32_t(100 + v.steps)), nans).size();
  }
  // The overflow tile: .satfinite and wrapping give different D.
  MmaKernelVariant wrapping{32, false, 1};
  wrapping.bytes = MmaKernelVariant::Bytes::S8;
  MmaKernelVariant saturating = wrapping;
  saturating.satfinite = true;
  MmaTile overflow = makeTiles(wrapping, 1).back();
  CHECK(referenceD(overflow, wrapping) != referenceD(overflow, saturating));
  CHECK(nans > 0);
  std::cout << "emulator: mma.sync m16n8k32 e4m3/e5m2 (fma chain, mixed "
               "too), s8/u8 (exact, wrapping and .satfinite) x 1/2 steps: "
            << elements << " elements of D bit-exact (" << nans << " NaN)\n";
}

TEST_CASE("emulator: a wrong fragment map fails the check", "[emulator][mma]") {
  using Swap = MmaKernelVariant::Swap;
  for (bool bf16 : {false, true})
    for (Swap swap : {Swap::A, Swap::B, Swap::C}) {
      MmaKernelVariant v{16, bf16, 1};
      v.swap = swap;
      MmaKernelVariant correct = v;
      correct.swap = Swap::None;
      std::vector<MmaTile> tiles = makeTiles(v, 7);
      std::vector<int32_t> d;
      std::string error = runMmaTiles(mmaKernelText(v), v, tiles, d);
      REQUIRE(error == "");
      size_t wrong = mismatches(correct, tiles, d);
      INFO(describe(v) << " with registers swapped in "
                       << "ABC"[int(swap) - 1]);
      CHECK(wrong > 0);
      std::cout << "emulator: " << describe(v) << " with two "
                << "ABC"[int(swap) - 1] << " registers swapped: " << wrong
                << " wrong elements of D, caught\n";
    }
}

TEST_CASE("emulator: a lane that skips mma.sync is an error",
          "[emulator][mma]") {
  MmaKernelVariant v{16, false, 1};
  v.skipLane = 5;
  std::vector<MmaTile> tiles = makeTiles(v, 1);
  std::vector<int32_t> d;
  std::string error = runMmaTiles(mmaKernelText(v), v, tiles, d);
  INFO(error);
  CHECK_THAT(error, Catch::Contains("thread (5,0,0)"));
  CHECK_THAT(error, Catch::Contains("mma.sync.aligned.m16n8k16"));
  std::cout << "emulator: refused (lane 5 skips the mma): " << error << "\n";
}

TEST_CASE("emulator: mma.sync in a partial or divergent warp is an error",
          "[emulator][mma]") {
  struct Case {
    const char *name;
    int threads;
    MmaSites sites;
    const char *expected;
  } cases[] = {
      {"every lane at one mma", 32, MmaSites::One, ""},
      {"a 48-thread block", 48, MmaSites::One,
       "naming lanes that do not exist"},
      {"lanes 0-15 and 16-31 at two m16n8k16 ops", 32, MmaSites::TwoSameShape,
       "requires every lane of the warp at the same instruction"},
      {"m16n8k16 in lanes 0-15, m16n8k8 in 16-31", 32, MmaSites::TwoShapes,
       "waits in mma.sync.aligned.m16n8k"},
  };
  for (const Case &c : cases) {
    // Every register holds two 1.0 halves; C is those bits as f32 (2^-7
    // + 2^-17 + ...), small enough to vanish in 16 + C.
    std::vector<int32_t> input(64, 0x3c003c00), output(64, 0);
    std::string error =
        runI32Kernel(mmaWarpRuleKernel(c.threads, c.sites).c_str(), "sm_90a",
                     {{&input, false}, {&output, true}});
    INFO(c.name << ": " << error);
    if (*c.expected == 0) {
      REQUIRE(error == "");
      float c0;
      std::memcpy(&c0, &input[0], 4);
      for (int lane = 0; lane < 32; ++lane) {
        float d;
        std::memcpy(&d, &output[size_t(lane)], 4);
        CHECK(d == float(16.0 + double(c0)) + c0);
      }
      continue;
    }
    CHECK_THAT(error, Catch::Contains("thread ("));
    CHECK_THAT(error, Catch::Contains(c.expected));
    std::cout << "emulator: refused (" << c.name << "): " << error << "\n";
  }
}

TEST_CASE("emulator: an mma.sync it does not model is refused",
          "[emulator][mma]") {
  std::vector<int32_t> input(32, 0x3c003c00), output(32, 0);
  std::string error = runI32Kernel(kMmaF16AccumulatorKernel, "sm_90a",
                                   {{&input, false}, {&output, true}});
  INFO(error);
  CHECK_THAT(error, Catch::Contains("cannot emulate 'nvvm.mma.sync' in "
                                    "@f16_accumulators: accumulators other "
                                    "than four f32"));
  std::cout << "emulator: refused (f16 accumulators): " << error << "\n";
}

TEST_CASE("emulator: the mma kernels' PTX assembles", "[emulator][mma]") {
  INFO("ptxas not found (CUDA_HOME/bin/ptxas); the CUDA toolkit is required");
  REQUIRE(!test::ptxasPath().empty());
  int assembled = 0;
  for (const char *arch : {"sm_80", "sm_90a", "sm_100a"})
    for (const MmaKernelVariant &v : everyVariant()) {
      if (v.steps != 2)
        continue;
      std::string ptx;
      INFO(arch << " " << describe(v));
      REQUIRE(test::compileToPtx(mmaKernelText(v), arch, ptx));
      std::string instruction = "mma.sync.aligned.m16n8k" +
                                std::to_string(v.k) + ".row.col.f32." +
                                (v.bf16 ? "bf16.bf16" : "f16.f16") + ".f32";
      CHECK(ptx.find(instruction) != std::string::npos);
      assembled += test::checkAssembles(ptx, arch);
    }
  CHECK(assembled == 3 * 4);
  std::cout << "emulator: " << assembled
            << " mma kernels' PTX assembled (sm_80, sm_90a, sm_100a)\n";
}

TEST_CASE("emulator: the 8-bit mma kernels' PTX assembles", "[emulator][mma]") {
  INFO("ptxas not found (CUDA_HOME/bin/ptxas); the CUDA toolkit is required");
  REQUIRE(!test::ptxasPath().empty());
  using Bytes = MmaKernelVariant::Bytes;
  struct Case {
    Bytes bytes; ///< A's; B is e4m3 for the FP8 kinds, s8 for the integer
    bool satfinite;
    const char *instruction;
  } cases[] = {
      {Bytes::E4M3, false,
       "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32"},
      {Bytes::E5M2, false,
       "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e4m3.f32"},
      {Bytes::S8, false, "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"},
      {Bytes::U8, true,
       "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.u8.s8.s32"},
      {Bytes::S8, true,
       "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32"},
  };
  int assembled = 0;
  for (const Case &c : cases)
    for (const char *arch : {"sm_89", "sm_90a"}) {
      MmaKernelVariant v{32, false, 2};
      v.bytes = c.bytes;
      bool integer = v.integer();
      v.bytesB = integer ? Bytes::S8 : Bytes::E4M3;
      v.satfinite = c.satfinite;
      // The FP8 mma needs PTX 8.4 (target/ChipCapabilities.cpp); the
      // chips' default is older.
      std::string target = std::string(arch) + (integer ? "" : "+ptx84");
      std::string ptx;
      INFO(target << " " << describe(v));
      REQUIRE(test::compileToPtx(mmaKernelText(v), target, ptx));
      CHECK(ptx.find(c.instruction) != std::string::npos);
      assembled += test::checkAssembles(ptx, arch);
    }
  CHECK(assembled == 10);
  std::cout << "emulator: " << assembled
            << " 8-bit mma kernels' PTX assembled (sm_89, sm_90a)\n";
}
