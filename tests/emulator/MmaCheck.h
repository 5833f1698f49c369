//===- MmaCheck.h - Run mma kernels, check D against an f64 matmul -*- C++
//-*-===//
//
// The checks of the tensor-core tests: input tiles, the kernels of
// MmaKernels.h run in the emulator, and D compared bit for bit with the
// documented order: d = c, then d = fmaf(a_k, b_k, d) for k ascending
// (docs/emulator.md, "Tensor cores").
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TESTS_EMULATOR_MMACHECK_H
#define LOWBIT_TESTS_EMULATOR_MMACHECK_H

#include "tests/emulator/MmaKernels.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace lowbit::testing {

/// One tile's inputs as bits: A [steps][16][K], B [steps][K][8] (f16, bf16
/// or 8-bit codes), C [16][8] (f32 or s32).
struct MmaTile {
  std::vector<uint16_t> a, b;
  std::vector<uint32_t> c;
};

/// D of one tile: the chain of `v.steps` matmuls, each element an f32 fma
/// chain from c over k ascending; NaN as 0x7fffffff.
std::vector<uint32_t> referenceD(const MmaTile &tile,
                                 const MmaKernelVariant &v);
/// The same with each step's c + sum of products taken in f64 and rounded
/// once (the emulator's model before the fma chain): it differs from
/// referenceD on the last tile of makeTiles.
std::vector<uint32_t> float64ReferenceD(const MmaTile &tile,
                                        const MmaKernelVariant &v);

/// Runs `tiles` through `moduleText` (a kernel of `v`'s shape, types and
/// steps) on sm_90a; "" or the error, and D (128 words a tile).
std::string runMmaTiles(const std::string &moduleText,
                        const MmaKernelVariant &v,
                        const std::vector<MmaTile> &tiles,
                        std::vector<int32_t> &d);

/// The input tiles: small integers, random values, negative zeros,
/// subnormals, NaN and infinities, and random C; last, a tile where the fma
/// chain and one rounding of the exact sum differ.
std::vector<MmaTile> makeTiles(const MmaKernelVariant &v, uint32_t seed);

/// "m16n8k16 bf16 (chain of two)" and the like.
std::string describe(const MmaKernelVariant &v);

/// Mismatching words of D against the reference over every tile (the first
/// few are reported); counts the NaN expected in `nans` when given.
size_t mismatches(const MmaKernelVariant &v, const std::vector<MmaTile> &tiles,
                  const std::vector<int32_t> &d, size_t *nans = nullptr);

/// m16n8k16 and m16n8k8 x f16 and bf16 x 1 and 2 steps.
std::vector<MmaKernelVariant> everyVariant();

/// m16n8k32 x {e4m3, e5m2}^2, s8 (wrapping and .satfinite), u8 x s8
/// (.satfinite), s8 x u8, u8 x u8 x 1 and 2 steps.
std::vector<MmaKernelVariant> everyByteVariant();

} // namespace lowbit::testing

#endif // LOWBIT_TESTS_EMULATOR_MMACHECK_H
