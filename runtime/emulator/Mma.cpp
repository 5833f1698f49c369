//===- Mma.cpp - One warp's mma.sync, computed on the CPU -----------------===//
//
// Gathers A, B and C from the lanes by the PTX fragment layout, computes D
// in f64 and scatters it back. f16 and bf16 values are decoded by the
// format model (format/Codec.h); a product of two of them has at most 22
// significant bits, so it is exact in f64.
//
//===----------------------------------------------------------------------===//

#include "runtime/emulator/Mma.h"

#include "format/Codec.h"

#include <cmath>

namespace lowbit::emulator {

namespace {

double decode(uint32_t reg, int element, MmaInputType type) {
  auto bits = uint16_t(reg >> (16 * (element & 1)));
  return type == MmaInputType::BF16 ? double(bfloat16ToFloat(bits))
                                    : double(halfToFloat(bits));
}

} // namespace

void executeWarpMma(mma::MmaShape shape, MmaInputType type,
                    std::span<MmaLaneRegisters, mma::kWarpLanes> lanes) {
  using namespace mma;
  const int k = mmaK(shape);
  double a[kMmaM][16], b[16][kMmaN], c[kMmaM][kMmaN];
  for (int lane = 0; lane < kWarpLanes; ++lane) {
    const MmaLaneRegisters &r = lanes[size_t(lane)];
    for (int i = 0; i < 2 * aRegisters(shape); ++i) {
      MatrixCoordinate at = aElement(lane, i);
      a[at.row][at.col] = decode(r.a[i / 2], i, type);
    }
    for (int i = 0; i < 2 * bRegisters(shape); ++i) {
      MatrixCoordinate at = bElement(lane, i);
      b[at.row][at.col] = decode(r.b[i / 2], i, type);
    }
    for (int i = 0; i < kAccumulatorRegisters; ++i) {
      MatrixCoordinate at = accumulatorElement(lane, i);
      c[at.row][at.col] = double(r.c[i]);
    }
  }
  for (int lane = 0; lane < kWarpLanes; ++lane) {
    MmaLaneRegisters &r = lanes[size_t(lane)];
    for (int i = 0; i < kAccumulatorRegisters; ++i) {
      MatrixCoordinate at = accumulatorElement(lane, i);
      // Starting from the first product (not from +0) keeps -0 sums -0.
      double sum = a[at.row][0] * b[0][at.col];
      for (int kk = 1; kk < k; ++kk)
        sum += a[at.row][kk] * b[kk][at.col];
      auto d = float(c[at.row][at.col] + sum); // round to nearest even
      r.d[i] = std::isnan(d) ? bitsToFloat(0x7fffffffu) : d;
    }
  }
}

} // namespace lowbit::emulator
