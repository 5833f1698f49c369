//===- BlockScaleMmaTest.cpp - The emulated block-scaled FP4 mma ----------===//
//
// runtime/emulator/Mma.cpp's block-scaled m16n8k64 e2m1 mma (docs/
// emulator.md, "Block-scaled FP4"), called directly: D against the
// documented order evaluated here from the matrices (A, B, the scales)
// placed by GpuMmaLayout.h's fragment and scale-lane maps, for NVFP4
// (.kind::mxf4nvf4 .scale_vec::4X ue4m3) and MXFP4 (.kind::mxf4
// .scale_vec::2X ue8m0), both thread-id-a values; and a scale byte moved to
// another lane or byte changes D.
//
//===----------------------------------------------------------------------===//

#include "format/Codec.h"
#include "format/Format.h"
#include "lowering/GpuMmaLayout.h"
#include "runtime/emulator/Mma.h"

#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstring>
#include <random>

using namespace lowbit;
using namespace lowbit::emulator;

namespace {

struct Problem {
  std::array<std::array<uint32_t, 64>, 16> a{}; // e2m1 codes
  std::array<std::array<uint32_t, 8>, 64> b{};
  std::array<std::array<uint32_t, 4>, 16> scaleA{}; // scale codes
  std::array<std::array<uint32_t, 8>, 4> scaleB{};
  std::array<std::array<float, 8>, 16> c{};
};

Problem randomProblem(const MmaVariant &variant, uint32_t seed) {
  std::mt19937 random(seed);
  Problem p;
  for (auto &row : p.a)
    for (uint32_t &code : row)
      code = random() % 16;
  for (auto &row : p.b)
    for (uint32_t &code : row)
      code = random() % 16;
  // ue4m3 codes 0x20..0x4f (2^-3 .. 2^2 ranges), ue8m0 120..134.
  for (auto &row : p.scaleA)
    for (uint32_t &code : row)
      code = variant.ue4m3 ? 0x20 + random() % 0x30 : 120 + random() % 15;
  for (auto &row : p.scaleB)
    for (uint32_t &code : row)
      code = variant.ue4m3 ? 0x20 + random() % 0x30 : 120 + random() % 15;
  for (auto &row : p.c)
    for (float &value : row)
      value = float(int(random() % 2001) - 1000) / 64.0f;
  return p;
}

/// The lanes' registers for `p` (fragment and scale-lane maps).
std::array<MmaLaneRegisters, 32> registersOf(const MmaVariant &variant,
                                             const Problem &p) {
  mma::MmaFragmentShape shape = mma::kM16N8K64E2M1;
  std::array<MmaLaneRegisters, 32> lanes{};
  for (int lane = 0; lane < 32; ++lane) {
    MmaLaneRegisters &r = lanes[size_t(lane)];
    for (int i = 0; i < shape.aElements(); ++i) {
      mma::MatrixCoordinate at = mma::aElement(shape, lane, i);
      r.a[i / 8] |= p.a[size_t(at.row)][size_t(at.col)] << (4 * (i % 8));
    }
    for (int i = 0; i < shape.bElements(); ++i) {
      mma::MatrixCoordinate at = mma::bElement(shape, lane, i);
      r.b[i / 8] |= p.b[size_t(at.row)][size_t(at.col)] << (4 * (i % 8));
    }
    for (int i = 0; i < mma::kAccumulatorRegisters; ++i) {
      mma::MatrixCoordinate at = mma::accumulatorElement(lane, i);
      std::memcpy(&r.c[i], &p.c[size_t(at.row)][size_t(at.col)], 4);
    }
  }
  for (int row = 0; row < 16; ++row)
    for (int j = 0; j < variant.scaleVec; ++j)
      lanes[size_t(mma::scaleALane(row, variant.threadIdA))].scaleA |=
          p.scaleA[size_t(row)][size_t(j)] << (8 * (variant.byteIdA + j));
  for (int col = 0; col < 8; ++col)
    for (int j = 0; j < variant.scaleVec; ++j)
      lanes[size_t(mma::scaleBLane(col, variant.threadIdB))].scaleB |=
          p.scaleB[size_t(j)][size_t(col)] << (8 * (variant.byteIdB + j));
  return lanes;
}

/// D[row][col] in the documented order.
float expected(const MmaVariant &variant, const Problem &p, int row, int col) {
  static const Codec e2m1(*lookupFormat("e2m1")), ue4m3(*lookupFormat("ue4m3")),
      ue8m0(*lookupFormat("e8m0"));
  const Codec &scales = variant.ue4m3 ? ue4m3 : ue8m0;
  int blockK = 64 / variant.scaleVec;
  float d = p.c[size_t(row)][size_t(col)];
  for (int j = 0; j < variant.scaleVec; ++j) {
    float partial = 0.0f;
    for (int k = j * blockK; k < (j + 1) * blockK; ++k)
      partial =
          std::fmaf(float(e2m1.decode(p.a[size_t(row)][size_t(k)])),
                    float(e2m1.decode(p.b[size_t(k)][size_t(col)])), partial);
    float s = float(scales.decode(p.scaleA[size_t(row)][size_t(j)])) *
              float(scales.decode(p.scaleB[size_t(j)][size_t(col)]));
    d = std::fmaf(partial, s, d);
  }
  return d;
}

/// How many elements of D differ from the order.
int mismatches(const MmaVariant &variant, const Problem &p,
               std::array<MmaLaneRegisters, 32> lanes) {
  executeWarpMma(variant, lanes);
  int wrong = 0;
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < mma::kAccumulatorRegisters; ++i) {
      mma::MatrixCoordinate at = mma::accumulatorElement(lane, i);
      float d;
      std::memcpy(&d, &lanes[size_t(lane)].d[i], 4);
      wrong += d != expected(variant, p, at.row, at.col);
    }
  return wrong;
}

MmaVariant blockScaled(bool nvfp4, int threadIdA, int threadIdB) {
  MmaVariant variant{mma::MmaElement::E2M1Packed, mma::MmaElement::E2M1Packed,
                     64, false};
  variant.scaleVec = nvfp4 ? 4 : 2;
  variant.ue4m3 = nvfp4;
  variant.nvf4 = nvfp4;
  variant.threadIdA = threadIdA;
  variant.threadIdB = threadIdB;
  return variant;
}

} // namespace

TEST_CASE("emulator: the block-scaled FP4 mma adds its blocks in K order, "
          "d = fma(p, sa sb, d)",
          "[emulator][mma]") {
  for (bool nvfp4 : {true, false})
    for (int threadIdA : {0, 1})
      for (int threadIdB : {0, 3}) {
        MmaVariant variant = blockScaled(nvfp4, threadIdA, threadIdB);
        INFO(variant.name()
             << " thread-id-a " << threadIdA << " thread-id-b " << threadIdB);
        CHECK(MmaVariant::fromCode(variant.code()).code() == variant.code());
        for (uint32_t seed : {1u, 2u, 3u}) {
          Problem p = randomProblem(variant, seed);
          CHECK(mismatches(variant, p, registersOf(variant, p)) == 0);
        }
      }
  CHECK(blockScaled(true, 0, 0).name() ==
        "mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale."
        "scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3");
}

TEST_CASE("emulator: the block-scaled mma reads the scales at the ISA's "
          "lanes and bytes",
          "[emulator][mma]") {
  MmaVariant variant = blockScaled(true, 0, 0);
  Problem p = randomProblem(variant, 7);
  std::array<MmaLaneRegisters, 32> lanes = registersOf(variant, p);
  // Row 9's scales sit in lane 4 (9 % 8) + 9 / 8 = 5; lane 4 (thread pair
  // 0's other lane) holds row 1's. Swapping them moves rows 1 and 9.
  std::swap(lanes[4].scaleA, lanes[5].scaleA);
  CHECK(mismatches(variant, p, lanes) > 0);
  // Lanes 2 and 3 are not read at thread-id-a 0.
  lanes = registersOf(variant, p);
  lanes[2].scaleA = lanes[3].scaleA = 0x7f7f7f7fu;
  CHECK(mismatches(variant, p, lanes) == 0);
  // Bytes 0 and 1 of a column's scale-b-data are blocks 0 and 1.
  lanes = registersOf(variant, p);
  uint32_t &sb = lanes[12].scaleB; // column 3
  sb = (sb & 0xffff0000u) | (sb & 0xffu) << 8 | (sb >> 8 & 0xffu);
  if (p.scaleB[0][3] != p.scaleB[1][3])
    CHECK(mismatches(variant, p, lanes) > 0);
}
