//===- GpuMmaLayout.h - mma.sync fragments: lane, register -> (row, col) --===//
//
// The one model of where mma.sync's matrix elements live in a warp, shared
// by the kernels that emit nvvm.mma.sync (lowering/GpuMma.h), the GPU
// emulator that executes it (runtime/emulator/Mma.h) and the tests. Plain
// C++ without MLIR: the emulator runtime includes it.
//
// PTX ISA, 9.7.14.5.8 "Matrix Fragments for mma.m16n8k16 with floating
// point type" (and 9.7.14.5.7 for mma.m16n8k8), .f16/.bf16 multiplicands,
// .f32 accumulators, A row-major and B column-major (".row.col"):
//
//   groupID           = %laneid >> 2
//   threadID_in_group = %laneid % 4
//
//   A (16 x K, four .f16x2 registers for K = 16, two for K = 8; elements
//   a0, a1, ... from the low half of the first register upwards):
//     row = groupID      for ai where 0 <= i < 2 || 4 <= i < 6
//           groupID + 8  otherwise
//     col = (threadID_in_group * 2) + (i & 0x1)      for ai where i < 4
//           (threadID_in_group * 2) + (i & 0x1) + 8  for ai where i >= 4
//   B (K x 8, two .f16x2 registers for K = 16, one for K = 8):
//     row = (threadID_in_group * 2) + (i & 0x1)      for bi where i < 2
//           (threadID_in_group * 2) + (i & 0x1) + 8  for bi where i >= 2
//     col = groupID
//   C and D (16 x 8, four .f32 registers c0..c3):
//     row = groupID      for c0 and c1
//           groupID + 8  for c2 and c3
//     col = (threadID_in_group * 2) + (i & 0x1)
//
// For K = 8 the same formulas hold with i < 4 for A and i < 2 for B.
// Element i of a multiplicand sits in register i / 2, in its low 16 bits
// when i is even and its high 16 bits when i is odd.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_GPUMMALAYOUT_H
#define LOWBIT_LOWERING_GPUMMALAYOUT_H

#include <cstdint>

namespace lowbit::mma {

/// The shapes lowbit emits and emulates: m16n8k16 and m16n8k8.
enum class MmaShape : int32_t { M16N8K16, M16N8K8 };

inline constexpr int kMmaM = 16;
inline constexpr int kMmaN = 8;
inline constexpr int kWarpLanes = 32;
/// Accumulator (C and D) registers per lane: four f32.
inline constexpr int kAccumulatorRegisters = 4;

constexpr int mmaK(MmaShape shape) {
  return shape == MmaShape::M16N8K16 ? 16 : 8;
}
/// .f16x2/.bf16x2 registers per lane holding A (4 for K = 16, 2 for K = 8).
constexpr int aRegisters(MmaShape shape) { return mmaK(shape) / 4; }
/// .f16x2/.bf16x2 registers per lane holding B (2 for K = 16, 1 for K = 8).
constexpr int bRegisters(MmaShape shape) { return mmaK(shape) / 8; }

/// A matrix element: (row, col) of A (16 x K), B (K x 8) or C/D (16 x 8).
struct MatrixCoordinate {
  int row = 0, col = 0;
  friend constexpr bool operator==(MatrixCoordinate,
                                   MatrixCoordinate) = default;
};

constexpr int groupId(int lane) { return lane >> 2; }
constexpr int threadIdInGroup(int lane) { return lane % 4; }

/// Element ai (0 <= i < 2 * aRegisters) held by `lane`.
constexpr MatrixCoordinate aElement(int lane, int i) {
  return {groupId(lane) + ((i >> 1) & 1) * 8,
          threadIdInGroup(lane) * 2 + (i & 1) + (i >= 4 ? 8 : 0)};
}
/// Element bi (0 <= i < 2 * bRegisters) held by `lane`.
constexpr MatrixCoordinate bElement(int lane, int i) {
  return {threadIdInGroup(lane) * 2 + (i & 1) + (i >= 2 ? 8 : 0),
          groupId(lane)};
}
/// Element ci (and di), 0 <= i < 4, held by `lane`.
constexpr MatrixCoordinate accumulatorElement(int lane, int i) {
  return {groupId(lane) + (i >= 2 ? 8 : 0),
          threadIdInGroup(lane) * 2 + (i & 1)};
}

} // namespace lowbit::mma

#endif // LOWBIT_LOWERING_GPUMMALAYOUT_H
