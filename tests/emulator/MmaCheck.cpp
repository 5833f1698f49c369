//===- MmaCheck.cpp - Run mma kernels, check D against an f64 matmul ------===//

#include "tests/emulator/MmaCheck.h"

#include "format/Codec.h"
#include "tests/emulator/EmulatorTestSupport.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <random>

namespace lowbit::testing {

namespace {

double halfValue(uint16_t bits, bool bf16) {
  return bf16 ? double(bfloat16ToFloat(bits)) : double(halfToFloat(bits));
}

/// A multiplicand code of `type` (f16/bf16 by `bf16` for None) as its value
/// (exact).
double elementValue(uint16_t code, MmaKernelVariant::Bytes type, bool bf16) {
  using Bytes = MmaKernelVariant::Bytes;
  static const Codec e4m3(*lookupFormat("e4m3")), e5m2(*lookupFormat("e5m2"));
  switch (type) {
  case Bytes::None:
    return halfValue(code, bf16);
  case Bytes::E4M3:
    return e4m3.decode(code);
  case Bytes::E5M2:
    return e5m2.decode(code);
  case Bytes::S8:
    return int8_t(uint8_t(code));
  case Bytes::U8:
    return uint8_t(code);
  }
  return 0;
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
  // PTX ISA's D = A B + C with MATMUL-DESIGN's order (docs/emulator.md):
  // d = c, then d = fmaf(a_k, b_k, d) for k ascending.
  // s8: exact, then .satfinite clamps to the s32 range, else it wraps.
  std::vector<uint32_t> d = tile.c;
  for (int s = 0; s < v.steps; ++s)
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 8; ++n) {
        auto a = [&](int k) {
          return elementValue(tile.a[size_t((s * 16 + m) * v.k + k)], v.bytes,
                              v.bf16);
        };
        auto b = [&](int k) {
          return elementValue(tile.b[size_t((s * v.k + k) * 8 + n)], v.typeB(),
                              v.bf16);
        };
        uint32_t &element = d[size_t(m * 8 + n)];
        if (v.integer()) {
          int64_t sum = int32_t(element);
          for (int k = 0; k < v.k; ++k)
            sum += int64_t(a(k)) * int64_t(b(k));
          if (v.satfinite)
            sum = std::clamp<int64_t>(sum, INT32_MIN, INT32_MAX);
          element = uint32_t(uint64_t(sum));
          continue;
        }
        float acc;
        std::memcpy(&acc, &element, 4);
        for (int k = 0; k < v.k; ++k)
          acc = std::fmaf(float(a(k)), float(b(k)), acc);
        element = std::isnan(acc) ? 0x7fffffffu : f32Bits(acc);
      }
  return d;
}

std::vector<uint32_t> float64ReferenceD(const MmaTile &tile,
                                        const MmaKernelVariant &v) {
  std::vector<uint32_t> d = tile.c;
  for (int s = 0; s < v.steps; ++s)
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 8; ++n) {
        float c;
        std::memcpy(&c, &d[size_t(m * 8 + n)], 4);
        double sum = c;
        for (int k = 0; k < v.k; ++k)
          sum += halfValue(tile.a[size_t((s * 16 + m) * v.k + k)], v.bf16) *
                 halfValue(tile.b[size_t((s * v.k + k) * 8 + n)], v.bf16);
        auto rounded = float(sum);
        d[size_t(m * 8 + n)] =
            std::isnan(rounded) ? 0x7fffffffu : f32Bits(rounded);
      }
  return d;
}

std::string runMmaTiles(const std::string &moduleText,
                        const MmaKernelVariant &v,
                        const std::vector<MmaTile> &tiles,
                        std::vector<int32_t> &d) {
  std::vector<int32_t> a, b, c;
  // Elements per word: two halves, or four bytes (the first in the low bits).
  const int per = v.bytes == MmaKernelVariant::Bytes::None ? 2 : 4;
  const int shift = 32 / per;
  for (const MmaTile &tile : tiles) {
    for (int s = 0; s < v.steps; ++s) {
      if (per == 4) {
        for (int row = 0; row < 16; ++row)
          for (int w = 0; w < v.k / 4; ++w) {
            uint32_t word = 0;
            for (int e = 0; e < 4; ++e)
              word |= uint32_t(tile.a[size_t((s * 16 + row) * v.k + 4 * w + e)])
                      << (shift * e);
            a.push_back(int32_t(word));
          }
        for (int n = 0; n < 8; ++n)
          for (int w = 0; w < v.k / 4; ++w) {
            uint32_t word = 0;
            for (int e = 0; e < 4; ++e)
              word |= uint32_t(tile.b[size_t((s * v.k + 4 * w + e) * 8 + n)])
                      << (shift * e);
            b.push_back(int32_t(word));
          }
        continue;
      }
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

namespace {

/// 8-bit tiles: random codes (finite ones, then every e4m3/e5m2 code, NaN
/// and Inf included; every s8), random C; for s8 also a tile whose sums
/// overflow s32 both ways (where .satfinite and wrapping differ).
std::vector<MmaTile> makeByteTiles(const MmaKernelVariant &v, uint32_t seed) {
  std::mt19937 rng(seed);
  bool integer = v.integer();
  size_t aCount = size_t(v.steps * 16 * v.k),
         bCount = size_t(v.steps * v.k * 8);
  std::uniform_real_distribution<float> real(-1000.0f, 1000.0f);
  // Finite codes in all but the last random tile (a NaN or Inf among 32
  // products would hide the rest of the element).
  auto code = [&](MmaKernelVariant::Bytes type, bool finite) {
    for (;;) {
      auto candidate = uint16_t(rng() & 0xff);
      if (!finite || std::isfinite(elementValue(candidate, type, false)))
        return candidate;
    }
  };
  std::vector<MmaTile> tiles;
  for (int t = 0; t < 6; ++t) {
    MmaTile tile;
    for (size_t i = 0; i < aCount; ++i)
      tile.a.push_back(code(v.bytes, t < 5));
    for (size_t i = 0; i < bCount; ++i)
      tile.b.push_back(code(v.typeB(), t < 5));
    for (int i = 0; i < 128; ++i)
      tile.c.push_back(integer ? uint32_t(rng()) : f32Bits(real(rng)));
    tiles.push_back(tile);
  }
  if (integer) {
    // 127 x 127 x 32 = 516128 per step: C near the ends of the s32 range.
    MmaTile overflow;
    overflow.a.assign(aCount, 0x7f);
    overflow.b.assign(bCount, 0x7f);
    for (int i = 0; i < 128; ++i)
      overflow.c.push_back(i % 2 ? 0x7fff0000u : 0x80000000u + 10);
    for (size_t i = 0; i < aCount; i += 2) // rows of -127 for the low end
      if (i / size_t(v.k) % 2 == 0)
        overflow.a[i] = overflow.a[i + 1] = 0x81;
    tiles.push_back(overflow);
  }
  return tiles;
}

} // namespace

std::vector<MmaTile> makeTiles(const MmaKernelVariant &v, uint32_t seed) {
  if (v.bytes != MmaKernelVariant::Bytes::None)
    return makeByteTiles(v, seed);
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
  // Where rounding after each fma differs from one rounding of the exact
  // sum: c = 1 and two products of 2^-24 (2^-12 squared, normal in f16 and
  // bf16): the chain rounds 1 + 2^-24 back to 1 twice, the exact sum
  // 1 + 2^-23 is an f32.
  float tiny = 0x1p-12f;
  tiles.push_back(tileOf(
      [&](size_t i) {
        return toHalf(i % size_t(v.k) < 2 ? tiny : 0.0f, v.bf16);
      },
      [&](size_t i) {
        return toHalf(i / 8 % size_t(v.k) < 2 ? tiny : 0.0f, v.bf16);
      },
      [](size_t) { return 0x3f800000u; }));
  return tiles;
}

std::string describe(const MmaKernelVariant &v) {
  static const char *const bytes[] = {"", "e4m3", "e5m2", "s8", "u8"};
  std::string type = v.bf16 ? " bf16" : " f16";
  if (v.bytes != MmaKernelVariant::Bytes::None) {
    type = std::string(" ") + bytes[int(v.bytes)];
    if (v.typeB() != v.bytes)
      type += std::string(" x ") + bytes[int(v.typeB())];
    if (v.satfinite)
      type += " .satfinite";
  }
  return std::string("m16n8k") + std::to_string(v.k) + type +
         (v.steps == 2 ? " (chain of two)" : "");
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

std::vector<MmaKernelVariant> everyByteVariant() {
  using Bytes = MmaKernelVariant::Bytes;
  struct Types {
    Bytes a, b;
    bool satfinite;
  } types[] = {
      {Bytes::E4M3, Bytes::E4M3, false}, {Bytes::E5M2, Bytes::E5M2, false},
      {Bytes::E4M3, Bytes::E5M2, false}, {Bytes::E5M2, Bytes::E4M3, false},
      {Bytes::S8, Bytes::S8, false},     {Bytes::S8, Bytes::S8, true},
      {Bytes::U8, Bytes::S8, true},      {Bytes::S8, Bytes::U8, false},
      {Bytes::U8, Bytes::U8, false},
  };
  std::vector<MmaKernelVariant> variants;
  for (int steps : {1, 2})
    for (const Types &t : types) {
      MmaKernelVariant v{32, false, steps};
      v.bytes = t.a;
      v.bytesB = t.b;
      v.satfinite = t.satfinite;
      variants.push_back(v);
    }
  return variants;
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
