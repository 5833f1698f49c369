//===- MmaKernels.h - Hand-written nvvm.mma.sync kernels --------*- C++ -*-===//
//
// gpu-dialect kernels that run one tensor-core op per warp (or a chain of
// two, the second accumulating onto the first), one 32-thread block per
// tile. Each lane loads its A, B and C registers from row-major tiles with
// the addresses the PTX ISA's fragment formulas give (written out in the
// kernel's arithmetic, not taken from lowering/GpuMmaLayout.h), so the
// emulator's own map is checked against an independent one. Buffers (all
// 1 x N i32):
//   a: per tile, `steps` A tiles, row-major 16 x K halves (K / 2 words a row)
//   b: per tile, `steps` B tiles stored transposed, 8 x K halves (B^T
//      row-major: element (k, n) at row n, column k)
//   c: per tile, C row-major 16 x 8 f32 bits
//   d: per tile, D row-major 16 x 8 f32 bits (written); its size sets the
//      grid.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TESTS_EMULATOR_MMAKERNELS_H
#define LOWBIT_TESTS_EMULATOR_MMAKERNELS_H

#include <string>

namespace lowbit::testing {

struct MmaKernelVariant {
  int k = 16;        ///< 16 (m16n8k16) or 8 (m16n8k8)
  bool bf16 = false; ///< bf16 multiplicands (f16 otherwise)
  int steps = 1;     ///< mma ops chained through the accumulator
  int skipLane = -1; ///< this lane returns before the mma (a violation)
  /// A wrong fragment map: the kernel swaps two registers of A (0 and 1),
  /// B (0 and 1; m16n8k16 only) or C (1 and 2) before the (first) mma.
  enum class Swap { None, A, B, C } swap = Swap::None;
};

/// The module text (a host @kernel and its gpu.module) of `variant`.
std::string mmaKernelText(const MmaKernelVariant &variant);

} // namespace lowbit::testing

#endif // LOWBIT_TESTS_EMULATOR_MMAKERNELS_H
