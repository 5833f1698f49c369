//===- MmaFragmentLayoutTest.cpp - GpuMmaLayout.h against the PTX ISA -----===//
//
// The fragment model's closed form (lowering/GpuMmaLayout.h) against the
// PTX ISA's piecewise formulas written out per shape as the ISA states
// them (9.7.14.5, "Matrix Fragments for mma.m16n8k*"), for every lane and
// element: f16/bf16 m16n8k16 and m16n8k8, the 8-bit m16n8k32 (e4m3, e5m2,
// s8, and e2m1 in byte containers) and the block-scaled FP4 m16n8k64.
// Each fragment covers its matrix exactly once, and a few lanes are
// checked against coordinates worked out by hand.
//
//===----------------------------------------------------------------------===//

#include "lowering/GpuMmaLayout.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

using namespace lowbit::mma;

namespace {

/// The ISA's formulas for A and B of one family of shapes (g = groupID,
/// t = threadID_in_group, i the element).
using IsaFormula = MatrixCoordinate (*)(int g, int t, int i);

// 9.7.14.5.8, m16n8k16 .f16/.bf16.
MatrixCoordinate isaAK16Half(int g, int t, int i) {
  int row = (i < 2 || (4 <= i && i < 6)) ? g : g + 8;
  int col = i < 4 ? t * 2 + (i & 0x1) : t * 2 + (i & 0x1) + 8;
  return {row, col};
}
MatrixCoordinate isaBK16Half(int g, int t, int i) {
  int row = i < 2 ? t * 2 + (i & 0x1) : t * 2 + (i & 0x1) + 8;
  return {row, g};
}
// 9.7.14.5.7, m16n8k8 .f16/.bf16.
MatrixCoordinate isaAK8Half(int g, int t, int i) {
  return {i < 2 ? g : g + 8, t * 2 + (i & 0x1)};
}
MatrixCoordinate isaBK8Half(int g, int t, int i) {
  return {t * 2 + (i & 0x1), g};
}
// m16n8k32 .e4m3/.e5m2/.s8/.u8 (and the f8f6f4 kinds' byte containers).
MatrixCoordinate isaAK32Byte(int g, int t, int i) {
  int row = (i < 4 || (8 <= i && i < 12)) ? g : g + 8;
  int col = i < 8 ? t * 4 + (i & 0x3) : t * 4 + (i & 0x3) + 16;
  return {row, col};
}
MatrixCoordinate isaBK32Byte(int g, int t, int i) {
  int row = i < 4 ? t * 4 + (i & 0x3) : t * 4 + (i & 0x3) + 16;
  return {row, g};
}
// m16n8k64 .e2m1 (.kind::mxf4, .kind::mxf4nvf4).
MatrixCoordinate isaAK64Nibble(int g, int t, int i) {
  int row = (i < 8 || (16 <= i && i < 24)) ? g : g + 8;
  int col = i < 16 ? t * 8 + (i & 0x7) : t * 8 + (i & 0x7) + 32;
  return {row, col};
}
MatrixCoordinate isaBK64Nibble(int g, int t, int i) {
  int row = i < 8 ? t * 8 + (i & 0x7) : t * 8 + (i & 0x7) + 32;
  return {row, g};
}

/// One shape: its registers per lane as the ISA states them, and its
/// formulas.
struct IsaLayout {
  const char *name;
  MmaFragmentShape shape;
  int aRegisters, bRegisters;
  IsaFormula a, b;
};

const IsaLayout kIsaLayouts[] = {
    {"m16n8k16 f16", kM16N8K16F16, 4, 2, isaAK16Half, isaBK16Half},
    {"m16n8k16 bf16", kM16N8K16BF16, 4, 2, isaAK16Half, isaBK16Half},
    {"m16n8k8 f16", kM16N8K8F16, 2, 1, isaAK8Half, isaBK8Half},
    {"m16n8k32 e4m3", kM16N8K32E4M3, 4, 2, isaAK32Byte, isaBK32Byte},
    {"m16n8k32 e5m2", kM16N8K32E5M2, 4, 2, isaAK32Byte, isaBK32Byte},
    {"m16n8k32 s8", kM16N8K32S8, 4, 2, isaAK32Byte, isaBK32Byte},
    {"m16n8k32 e2m1 (byte containers)", kM16N8K32E2M1Byte, 4, 2, isaAK32Byte,
     isaBK32Byte},
    {"m16n8k64 e2m1", kM16N8K64E2M1, 4, 2, isaAK64Nibble, isaBK64Nibble},
};

} // namespace

TEST_CASE("mma fragments: the model is the ISA's formulas, lane by lane",
          "[mma][layout]") {
  for (const IsaLayout &isa : kIsaLayouts) {
    INFO(isa.name);
    MmaFragmentShape shape = isa.shape;
    CHECK(shape.aRegisters() == isa.aRegisters);
    CHECK(shape.bRegisters() == isa.bRegisters);
    int k = shape.k;
    std::vector<int> a(size_t(kMmaM * k)), b(size_t(k * kMmaN));
    for (int lane = 0; lane < kWarpLanes; ++lane) {
      INFO("lane " << lane);
      int g = lane >> 2, t = lane % 4;
      for (int i = 0; i < shape.aElements(); ++i) {
        INFO("a" << i);
        MatrixCoordinate at = aElement(shape, lane, i);
        REQUIRE(at == isa.a(g, t, i));
        REQUIRE((at.row < kMmaM && at.col < k));
        ++a[size_t(at.row * k + at.col)];
      }
      for (int i = 0; i < shape.bElements(); ++i) {
        INFO("b" << i);
        MatrixCoordinate at = bElement(shape, lane, i);
        REQUIRE(at == isa.b(g, t, i));
        REQUIRE((at.row < k && at.col < kMmaN));
        ++b[size_t(at.row * kMmaN + at.col)];
      }
    }
    // Every element of A and B is held by exactly one lane and register.
    for (std::vector<int> *counts : {&a, &b})
      CHECK(std::count(counts->begin(), counts->end(), 1) ==
            std::ptrdiff_t(counts->size()));
  }
}

TEST_CASE("mma fragments: hand-worked lanes of the new shapes",
          "[mma][layout]") {
  // Lane 5: groupID 1, threadID_in_group 1.
  CHECK(aElement(kM16N8K32E4M3, 5, 5) == MatrixCoordinate{9, 5});
  CHECK(aElement(kM16N8K32S8, 5, 9) == MatrixCoordinate{1, 21});
  CHECK(bElement(kM16N8K32E5M2, 5, 6) == MatrixCoordinate{22, 1});
  // Lane 6: groupID 1, threadID_in_group 2.
  CHECK(aElement(kM16N8K64E2M1, 6, 19) == MatrixCoordinate{1, 51});
  CHECK(aElement(kM16N8K64E2M1, 6, 12) == MatrixCoordinate{9, 20});
  CHECK(bElement(kM16N8K64E2M1, 6, 9) == MatrixCoordinate{49, 1});
  // Lane 31: groupID 7, threadID_in_group 3: the last element of each.
  CHECK(aElement(kM16N8K64E2M1, 31, 31) == MatrixCoordinate{15, 63});
  CHECK(bElement(kM16N8K32S8, 31, 7) == MatrixCoordinate{31, 7});
  CHECK(accumulatorElement(31, 3) == MatrixCoordinate{15, 7});
  // Elements per register, and the emulator's f16 shapes.
  CHECK(kM16N8K16BF16.elementsPerRegister() == 2);
  CHECK(kM16N8K32E4M3.elementsPerRegister() == 4);
  CHECK(kM16N8K64E2M1.elementsPerRegister() == 8);
  CHECK(aRegisters(MmaShape::M16N8K8) == 2);
  CHECK(bRegisters(MmaShape::M16N8K16) == 2);
}
