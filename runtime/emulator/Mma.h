//===- Mma.h - One warp's mma.sync, computed on the CPU ---------*- C++ -*-===//
//
// The arithmetic of the emulated tensor-core op (docs/emulator.md, "Tensor
// cores"). Simt.cpp gathers the 32 lanes' registers when the last lane of
// a warp arrives at an mma.sync and calls executeWarpMma; the fragment
// layout is lowering/GpuMmaLayout.h's.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_EMULATOR_MMA_H
#define LOWBIT_RUNTIME_EMULATOR_MMA_H

#include "lowering/GpuMmaLayout.h"

#include <cstdint>
#include <span>

namespace lowbit::emulator {

/// One lane's registers of an mma.sync: A and B as packed pairs (element
/// 2r in the low half of register r), C in, D out. For m16n8k8 only the
/// first 2 A and 1 B registers are read.
struct MmaLaneRegisters {
  uint32_t a[4] = {};
  uint32_t b[2] = {};
  float c[mma::kAccumulatorRegisters] = {};
  float d[mma::kAccumulatorRegisters] = {};
};

/// The multiplicands' element type.
enum class MmaInputType : int32_t { F16, BF16 };

/// D = A x B + C for one warp: `lanes` holds the 32 lanes' registers in lane
/// order; writes each lane's d. Each element of D is the f32 nearest
/// (ties to even) to c + (a_0 b_0 + a_1 b_1 + ... + a_{K-1} b_{K-1}), the
/// products exact and the sum taken in f64 from k = 0 upwards; a NaN result
/// is the canonical 0x7fffffff.
void executeWarpMma(mma::MmaShape shape, MmaInputType type,
                    std::span<MmaLaneRegisters, mma::kWarpLanes> lanes);

} // namespace lowbit::emulator

#endif // LOWBIT_RUNTIME_EMULATOR_MMA_H
