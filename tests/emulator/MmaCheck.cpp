//===- MmaCheck.cpp - Run mma kernels, check D against an f64 matmul ------===//

#include "tests/emulator/MmaCheck.h"

#include "format/Codec.h"
#include "tests/emulator/EmulatorTestSupport.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>

namespace lowbit::testing {

namespace {

double halfValue(uint16_t bits, bool bf16) {
  return bf16 ? double(bfloat16ToFloat(bits)) : double(halfToFloat(bits));
}

uint32_t f32Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

uint16_t toHalf(float value, bool bf16) {
  return bf16 ? floatToBFloat16(value) : floatToHalf(value);
}

} // namespace

std::vector<uint32_t> referenceD(const MmaTile &tile,
                                 const MmaKernelVariant &v) {
  std::vector<uint32_t> d = tile.c;
  for (int s = 0; s < v.steps; ++s)
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 8; ++n) {
        double sum = 0;
        for (int k = 0; k < v.k; ++k) {
          double product =
              halfValue(tile.a[size_t((s * 16 + m) * v.k + k)], v.bf16) *
              halfValue(tile.b[size_t((s * v.k + k) * 8 + n)], v.bf16);
          sum = k == 0 ? product : sum + product;
        }
        float c;
        std::memcpy(&c, &d[size_t(m * 8 + n)], 4);
        auto result = float(double(c) + sum);
        d[size_t(m * 8 + n)] =
            std::isnan(result) ? 0x7fffffffu : f32Bits(result);
      }
  return d;
}

std::string runMmaTiles(const std::string &moduleText,
                        const MmaKernelVariant &v,
                        const std::vector<MmaTile> &tiles,
                        std::vector<int32_t> &d) {
  std::vector<int32_t> a, b, c;
  for (const MmaTile &tile : tiles) {
    for (int s = 0; s < v.steps; ++s) {
      // A row-major: word (row, w) = A[row][2w] | A[row][2w + 1] << 16.
      for (int row = 0; row < 16; ++row)
        for (int w = 0; w < v.k / 2; ++w) {
          size_t at = size_t((s * 16 + row) * v.k + 2 * w);
          a.push_back(int32_t(tile.a[at] | uint32_t(tile.a[at + 1]) << 16));
        }
      // B transposed: word (n, w) = B[2w][n] | B[2w + 1][n] << 16.
      for (int n = 0; n < 8; ++n)
        for (int w = 0; w < v.k / 2; ++w) {
          size_t at = size_t((s * v.k + 2 * w) * 8 + n);
          b.push_back(int32_t(tile.b[at] | uint32_t(tile.b[at + 8]) << 16));
        }
    }
    for (uint32_t word : tile.c)
      c.push_back(int32_t(word));
  }
  d.assign(c.size(), 0x55555555);
  return runI32Kernel(moduleText.c_str(), "sm_90a",
                      {{&a, false}, {&b, false}, {&c, false}, {&d, true}});
}

std::vector<MmaTile> makeTiles(const MmaKernelVariant &v, uint32_t seed) {
  std::mt19937 rng(seed);
  size_t aCount = size_t(v.steps * 16 * v.k),
         bCount = size_t(v.steps * v.k * 8);
  auto tileOf = [&](auto aValue, auto bValue, auto cValue) {
    MmaTile tile;
    for (size_t i = 0; i < aCount; ++i)
      tile.a.push_back(aValue(i));
    for (size_t i = 0; i < bCount; ++i)
      tile.b.push_back(bValue(i));
    for (size_t i = 0; i < 128; ++i)
      tile.c.push_back(cValue(i));
    return tile;
  };
  std::uniform_int_distribution<int> small(-8, 8);
  std::uniform_real_distribution<float> real(-4.0f, 4.0f);
  auto smallHalf = [&](size_t) { return toHalf(float(small(rng)), v.bf16); };
  auto realHalf = [&](size_t) { return toHalf(real(rng), v.bf16); };
  auto smallC = [&](size_t) { return f32Bits(float(small(rng) * 16)); };
  auto realC = [&](size_t) { return f32Bits(real(rng) * 100.0f); };
  // Subnormal codes: exponent field 0, mantissa not 0 (10 bits for f16, 7
  // for bf16), either sign.
  uint16_t mantissaMask = v.bf16 ? 0x7f : 0x3ff;
  auto subnormal = [&](size_t) {
    auto bits = uint16_t(rng() % mantissaMask + 1);
    return uint16_t(rng() % 2 ? bits | 0x8000 : bits);
  };
  std::vector<MmaTile> tiles;
  tiles.push_back(tileOf(smallHalf, smallHalf, smallC));
  for (int i = 0; i < 4; ++i)
    tiles.push_back(tileOf(realHalf, realHalf, realC));
  // -0 * x sums to -0, and -0 + -0 is -0: every D is -0.
  tiles.push_back(tileOf([](size_t) { return uint16_t(0x8000); },
                         [&](size_t) { return toHalf(1.5f, v.bf16); },
                         [](size_t) { return 0x80000000u; }));
  // Mixed signs of zero, C = +0 or -0: +0 wherever the signs differ.
  tiles.push_back(tileOf([&](size_t) { return uint16_t(rng() % 2 << 15); },
                         [&](size_t) { return uint16_t(rng() % 2 << 15); },
                         [&](size_t) { return uint32_t(rng() % 2 << 31); }));
  // Subnormals times subnormals (bf16's underflow f32: rounded once) and
  // times normals.
  tiles.push_back(tileOf(subnormal, subnormal, [](size_t) { return 0u; }));
  tiles.push_back(tileOf(subnormal, realHalf, [](size_t) { return 0u; }));
  // NaN and infinities: Inf x 0 is NaN; Inf x finite is Inf; Inf - Inf is
  // NaN; a NaN input is NaN.
  uint16_t inf = v.bf16 ? 0x7f80 : 0x7c00, nan = v.bf16 ? 0x7fc1 : 0x7e01;
  MmaTile special = tileOf(realHalf, realHalf, realC);
  special.a[0] = inf;                            // A[0][0]
  special.b[0] = 0;                              // B[0][0]: D[0][0] NaN
  special.a[size_t(1 * v.k + 2)] = inf;          // A[1][2]: D[1][*] +-Inf
  special.a[size_t(2 * v.k + 3)] = inf;          // A[2][3]
  special.a[size_t(2 * v.k + 4)] = inf | 0x8000; // A[2][4]: Inf - Inf
  special.b[size_t(3 * 8 + 5)] = toHalf(1.0f, v.bf16);
  special.b[size_t(4 * 8 + 5)] = toHalf(1.0f, v.bf16); // D[2][5] NaN
  special.a[size_t(5 * v.k + 1)] = nan;                // A[5][1]: D[5][*] NaN
  special.c[size_t(7 * 8 + 7)] = 0x7f800000;           // C[7][7] = +Inf
  tiles.push_back(special);
  return tiles;
}

std::string describe(const MmaKernelVariant &v) {
  return std::string("m16n8k") + std::to_string(v.k) +
         (v.bf16 ? " bf16" : " f16") + (v.steps == 2 ? " (chain of two)" : "");
}

size_t mismatches(const MmaKernelVariant &v, const std::vector<MmaTile> &tiles,
                  const std::vector<int32_t> &d, size_t *nans) {
  size_t count = 0;
  for (size_t t = 0; t < tiles.size(); ++t) {
    std::vector<uint32_t> expected = referenceD(tiles[t], v);
    for (size_t i = 0; i < 128; ++i) {
      auto got = uint32_t(d[t * 128 + i]);
      if (nans && expected[i] == 0x7fffffffu)
        ++*nans;
      if (got != expected[i]) {
        if (count < 4)
          UNSCOPED_INFO(describe(v)
                        << " tile " << t << " D[" << i / 8 << "][" << i % 8
                        << "] = 0x" << std::hex << got << ", expected 0x"
                        << expected[i] << std::dec);
        ++count;
      }
    }
  }
  return count;
}

std::vector<MmaKernelVariant> everyVariant() {
  std::vector<MmaKernelVariant> variants;
  for (int k : {16, 8})
    for (bool bf16 : {false, true})
      for (int steps : {1, 2})
        variants.push_back({k, bf16, steps});
  return variants;
}

} // namespace lowbit::testing
