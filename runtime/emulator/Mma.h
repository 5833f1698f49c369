//===- Mma.h - One warp's mma.sync and ldmatrix, computed on the CPU -*- C++
//-*-===//
//
// The arithmetic of the emulated tensor-core op and the data movement of
// ldmatrix (docs/emulator.md, "Tensor cores"). Simt.cpp gathers the 32
// lanes' registers (or row addresses) when the last lane of a warp arrives
// and calls executeWarpMma / executeLdMatrix; the fragment layout is
// lowering/GpuMmaLayout.h's.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_EMULATOR_MMA_H
#define LOWBIT_RUNTIME_EMULATOR_MMA_H

#include "lowering/GpuEmulatorAbi.h"
#include "lowering/GpuMmaLayout.h"

#include <cstdint>
#include <span>

namespace lowbit::emulator {

/// One lane's registers of an mma.sync: A and B packed (element 0 in the
/// low bits of register 0, as GpuMmaLayout.h says), C in, D out, C and D as
/// bits (f32 or s32). Registers a variant does not have are ignored.
/// ldmatrix hands its result back in d.
struct MmaLaneRegisters {
  uint32_t a[4] = {};
  uint32_t b[2] = {};
  uint32_t c[mma::kAccumulatorRegisters] = {};
  uint32_t d[mma::kAccumulatorRegisters] = {};
  /// scale-a-data and scale-b-data of a block-scaled mma (four scale bytes
  /// each, byte 0 lowest).
  uint32_t scaleA = 0, scaleB = 0;
};

/// D = A x B + C for one warp: `lanes` holds the 32 lanes' registers in lane
/// order; writes each lane's d.
///   f32 accumulators (f16, bf16, e4m3, e5m2 multiplicands): each element is
///     d = c; for k = 0, 1, ..., K-1: d = fmaf(a_k, b_k, d) (round to
///     nearest even after every step; the products are exact in f32). A NaN
///     result is the canonical 0x7fffffff.
///   s32 accumulators (s8, u8): d = c + sum_k a_k b_k, exact; .satfinite
///     clamps it to [INT32_MIN, INT32_MAX], otherwise it wraps modulo 2^32.
///   block-scaled e2m1 (m16n8k64, V = .scale_vec blocks of K / V along K),
///     the order lowbit chooses (NVIDIA does not specify one; docs/
///     emulator.md): d = c; for each block j ascending: p = +0, p =
///     fmaf(a_k, b_k, p) over the block's k ascending (exact: e2m1
///     products are multiples of 1/4 and a block's sum stays below 2^11),
///     s = sa(row, j) * sb(j, col) in f32, d = fmaf(p, s, d). Scale
///     sa(row, j) is byte byteIdA + j of scale-a-data of lane 4 (row % 8)
///     + 2 threadIdA + row / 8, sb(j, col) byte byteIdB + j of
///     scale-b-data of lane 4 col + threadIdB (PTX ISA 9.7.14.3; CUTLASS's
///     SM120 SFALayout / SFBLayout), decoded as ue4m3 or ue8m0.
void executeWarpMma(const MmaVariant &variant,
                    std::span<MmaLaneRegisters, mma::kWarpLanes> lanes);

/// ldmatrix.sync.aligned.m8n8.xN{.trans}.shared.b16 for one warp: `rows[l]`
/// is lane l's row address (16 readable bytes where l supplies a row);
/// writes each lane's first N d registers.
void executeLdMatrix(const LdMatrixVariant &variant,
                     std::span<const uint8_t *const, mma::kWarpLanes> rows,
                     std::span<MmaLaneRegisters, mma::kWarpLanes> lanes);

} // namespace lowbit::emulator

#endif // LOWBIT_RUNTIME_EMULATOR_MMA_H
