//===- Mma.cpp - One warp's mma.sync and ldmatrix, computed on the CPU ----===//
//
// Gathers A, B and C from the lanes by the PTX fragment layout, computes D
// and scatters it back. The multiplicands are decoded by the format model
// (format/Codec.h): f16, bf16, e4m3 and e5m2 values are exact in f32 and
// so is a product of two (at most 2 x 11 significant bits), which makes
// fmaf's one rounding the rounding of the addition.
//
//===----------------------------------------------------------------------===//

#include "runtime/emulator/Mma.h"

#include "format/Codec.h"
#include "format/Format.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace lowbit::emulator {

namespace {

using mma::MatrixCoordinate;
using mma::MmaElement;

/// Element `i` of a lane's A or B registers, as its code.
uint32_t elementCode(const uint32_t *registers, mma::MmaFragmentShape shape,
                     int i) {
  int bits = mma::registerBits(shape.element);
  int perRegister = shape.elementsPerRegister();
  uint32_t word = registers[i / perRegister];
  return (word >> (bits * (i % perRegister))) & ((1u << bits) - 1);
}

/// A multiplicand's value (exact: every type here fits f32, and s8/u8 fit
/// an int64 product).
double decode(MmaElement element, uint32_t code) {
  static const Codec e4m3(*lookupFormat("e4m3")), e5m2(*lookupFormat("e5m2")),
      e2m1(*lookupFormat("e2m1"));
  switch (element) {
  case MmaElement::F16:
    return halfToFloat(uint16_t(code));
  case MmaElement::BF16:
    return bfloat16ToFloat(uint16_t(code));
  case MmaElement::E4M3:
    return e4m3.decode(code);
  case MmaElement::E5M2:
    return e5m2.decode(code);
  case MmaElement::S8:
    return int8_t(uint8_t(code));
  case MmaElement::U8:
    return code;
  case MmaElement::E2M1Packed:
    return e2m1.decode(code);
  default:
    return std::numeric_limits<double>::quiet_NaN(); // not executed
  }
}

uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

/// The value of scale byte `byte` of `data`: ue4m3 or ue8m0.
float scaleValue(const MmaVariant &variant, uint32_t data, int byte) {
  static const Codec ue4m3(*lookupFormat("ue4m3")),
      ue8m0(*lookupFormat("e8m0"));
  uint32_t code = data >> (8 * byte) & 0xff;
  return float(variant.ue4m3 ? ue4m3.decode(code) : ue8m0.decode(code));
}

} // namespace

void executeWarpMma(const MmaVariant &variant,
                    std::span<MmaLaneRegisters, mma::kWarpLanes> lanes) {
  using namespace mma;
  constexpr int kMaxK = 64;
  const int k = variant.k;
  const MmaFragmentShape shapeA = variant.shapeA(), shapeB = variant.shapeB();
  double a[kMmaM][kMaxK], b[kMaxK][kMmaN];
  uint32_t c[kMmaM][kMmaN];
  for (int lane = 0; lane < kWarpLanes; ++lane) {
    const MmaLaneRegisters &r = lanes[size_t(lane)];
    for (int i = 0; i < shapeA.aElements(); ++i) {
      MatrixCoordinate at = aElement(shapeA, lane, i);
      a[at.row][at.col] = decode(variant.a, elementCode(r.a, shapeA, i));
    }
    for (int i = 0; i < shapeB.bElements(); ++i) {
      MatrixCoordinate at = bElement(shapeB, lane, i);
      b[at.row][at.col] = decode(variant.b, elementCode(r.b, shapeB, i));
    }
    for (int i = 0; i < kAccumulatorRegisters; ++i) {
      MatrixCoordinate at = accumulatorElement(lane, i);
      c[at.row][at.col] = r.c[i];
    }
  }
  auto element = [&](int row, int col) -> uint32_t {
    if (variant.integer()) {
      int64_t sum = int32_t(c[row][col]);
      for (int kk = 0; kk < k; ++kk)
        sum += int64_t(a[row][kk]) * int64_t(b[kk][col]);
      if (variant.satfinite)
        sum = std::clamp<int64_t>(sum, std::numeric_limits<int32_t>::min(),
                                  std::numeric_limits<int32_t>::max());
      return uint32_t(uint64_t(sum)); // modulo 2^32 without .satfinite
    }
    float d;
    std::memcpy(&d, &c[row][col], 4);
    if (variant.blockScaled()) {
      // Scale_A of row `row` from lane 4 (row % 8) + 2 threadIdA + row / 8,
      // scale_B of column `col` from lane 4 col + threadIdB.
      const MmaLaneRegisters &rowLane =
          lanes[size_t(scaleALane(row, variant.threadIdA))];
      const MmaLaneRegisters &colLane =
          lanes[size_t(scaleBLane(col, variant.threadIdB))];
      int blockK = k / variant.scaleVec;
      for (int block = 0; block < variant.scaleVec; ++block) {
        float partial = 0.0f;
        for (int kk = block * blockK; kk < (block + 1) * blockK; ++kk)
          partial = std::fmaf(float(a[row][kk]), float(b[kk][col]), partial);
        float scale =
            scaleValue(variant, rowLane.scaleA, variant.byteIdA + block) *
            scaleValue(variant, colLane.scaleB, variant.byteIdB + block);
        d = std::fmaf(partial, scale, d);
      }
      return std::isnan(d) ? 0x7fffffffu : floatBits(d);
    }
    for (int kk = 0; kk < k; ++kk)
      d = std::fmaf(float(a[row][kk]), float(b[kk][col]), d);
    return std::isnan(d) ? 0x7fffffffu : floatBits(d);
  };
  for (int lane = 0; lane < kWarpLanes; ++lane) {
    MmaLaneRegisters &r = lanes[size_t(lane)];
    for (int i = 0; i < kAccumulatorRegisters; ++i) {
      MatrixCoordinate at = accumulatorElement(lane, i);
      r.d[i] = element(at.row, at.col);
    }
  }
}

void executeLdMatrix(const LdMatrixVariant &variant,
                     std::span<const uint8_t *const, mma::kWarpLanes> rows,
                     std::span<MmaLaneRegisters, mma::kWarpLanes> lanes) {
  using namespace mma;
  for (int matrix = 0; matrix < variant.matrices; ++matrix)
    for (int lane = 0; lane < kWarpLanes; ++lane) {
      uint32_t word = 0;
      for (int half = 0; half < 2; ++half) {
        MatrixCoordinate at = ldmatrixElement(lane, half, variant.transpose);
        const uint8_t *row = rows[size_t(ldmatrixAddressLane(matrix, at.row))];
        uint16_t value;
        std::memcpy(&value, row + 2 * at.col, 2);
        word |= uint32_t(value) << (16 * half);
      }
      lanes[size_t(lane)].d[matrix] = word;
    }
}

} // namespace lowbit::emulator
