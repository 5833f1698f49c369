//===- TruncSfBf2Test.cpp - The emulator's __truncsfbf2 -------------------===//
//
// Kernels that compute in bf16 reach the host's soft-float call
// __truncsfbf2 once the emulator JITs them; the SIMT runtime's symbol table
// provides it. It must round as the GPU does: to nearest even, ties to
// even, overflow to infinity, the canonical NaN 0x7fff. Checked on
// hand-picked values and on every f32 whose low 16 bits are zero, a tie
// or one of its two neighbours (4 x 2^16 inputs), against an integer RNE
// written here.
//
//===----------------------------------------------------------------------===//

#include "runtime/emulator/Simt.h"

#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <string_view>

using namespace lowbit;

namespace {

using TruncSfBf2 = _Float16 (*)(float);

TruncSfBf2 findTruncSfBf2() {
  for (const emulator::RuntimeSymbol &symbol : emulator::runtimeSymbols())
    if (symbol.name == "__truncsfbf2")
      return reinterpret_cast<TruncSfBf2>(symbol.address);
  return nullptr;
}

/// f32 bits -> bf16 bits, round to nearest even; NaN -> 0x7fff.
uint16_t expectedBf16(uint32_t bits) {
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return 0x7fff;
  uint32_t lower = bits & 0xffffu, upper = bits >> 16;
  if (lower > 0x8000u || (lower == 0x8000u && (upper & 1u)))
    ++upper; // carries into the exponent, up to infinity
  return uint16_t(upper);
}

uint16_t callBits(TruncSfBf2 truncate, uint32_t bits) {
  return std::bit_cast<uint16_t>(truncate(std::bit_cast<float>(bits)));
}

} // namespace

TEST_CASE("emulator: __truncsfbf2 is in the runtime's symbol table and "
          "rounds to nearest even",
          "[emulator]") {
  TruncSfBf2 truncate = findTruncSfBf2();
  REQUIRE(truncate != nullptr);
  const std::pair<uint32_t, uint16_t> cases[] = {
      {0x00000000, 0x0000}, {0x80000000, 0x8000}, // signed zeros
      {0x3f800000, 0x3f80},                       // 1
      {0x3f808000, 0x3f80}, {0x3f818000, 0x3f82}, // ties to even
      {0x3f808001, 0x3f81}, {0x3f807fff, 0x3f80}, // either side of a tie
      {0x7f7fffff, 0x7f80},                       // the largest f32: inf
      {0x7f7f7fff, 0x7f7f},                       // largest bf16, below tie
      {0x7f800000, 0x7f80}, {0xff800000, 0xff80}, // infinities
      {0x7fc00000, 0x7fff}, {0xffc00001, 0x7fff}, // NaNs: canonical
      {0x7f800001, 0x7fff},                       // signalling NaN
      {0x00000001, 0x0000}, {0x00008001, 0x0001}, // subnormals
      {0x807fffff, 0x8080},                       // to the smallest normal
  };
  for (auto [input, expected] : cases) {
    INFO("f32 bits 0x" << std::hex << input);
    CHECK(callBits(truncate, input) == expected);
    CHECK(expectedBf16(input) == expected);
  }
  int checked = 0;
  for (uint32_t high = 0; high < 0x10000u; ++high)
    for (uint32_t low : {0x0000u, 0x7fffu, 0x8000u, 0x8001u}) {
      uint32_t bits = (high << 16) | low;
      if (callBits(truncate, bits) != expectedBf16(bits)) {
        INFO("f32 bits 0x" << std::hex << bits);
        CHECK(callBits(truncate, bits) == expectedBf16(bits));
      }
      ++checked;
    }
  CHECK(checked == 4 * 0x10000);
}
