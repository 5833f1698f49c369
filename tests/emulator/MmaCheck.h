//===- MmaCheck.h - Run mma kernels, check D against an f64 matmul -*- C++
//-*-===//
//
// The checks of the tensor-core tests: input tiles, the kernels of
// MmaKernels.h run in the emulator, and D compared bit for bit with a plain
// matmul: each element the f32 nearest to c + the K products summed in f64
// from k = 0 (docs/emulator.md, "Tensor cores").
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

/// One tile's inputs as bits: A [steps][16][K], B [steps][K][8] (f16 or
/// bf16), C [16][8] (f32).
struct MmaTile {
  std::vector<uint16_t> a, b;
  std::vector<uint32_t> c;
};

/// D of one tile: the chain of `v.steps` matmuls, each rounded once to f32;
/// NaN as 0x7fffffff.
std::vector<uint32_t> referenceD(const MmaTile &tile,
                                 const MmaKernelVariant &v);

/// Runs `tiles` through `moduleText` (a kernel of `v`'s shape, types and
/// steps) on sm_90a; "" or the error, and D (128 words a tile).
std::string runMmaTiles(const std::string &moduleText,
                        const MmaKernelVariant &v,
                        const std::vector<MmaTile> &tiles,
                        std::vector<int32_t> &d);

/// The input tiles: small integers, random values, negative zeros,
/// subnormals, NaN and infinities, and random C.
std::vector<MmaTile> makeTiles(const MmaKernelVariant &v, uint32_t seed);

/// "m16n8k16 bf16 (chain of two)" and the like.
std::string describe(const MmaKernelVariant &v);

/// Mismatching words of D against the reference over every tile (the first
/// few are reported); counts the NaN expected in `nans` when given.
size_t mismatches(const MmaKernelVariant &v, const std::vector<MmaTile> &tiles,
                  const std::vector<int32_t> &d, size_t *nans = nullptr);

/// m16n8k16 and m16n8k8 x f16 and bf16 x 1 and 2 steps.
std::vector<MmaKernelVariant> everyVariant();

} // namespace lowbit::testing

#endif // LOWBIT_TESTS_EMULATOR_MMACHECK_H
