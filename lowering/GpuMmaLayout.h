//===- GpuMmaLayout.h - mma.sync fragments: lane, register -> (row, col) --===//
//
// The one model of where mma.sync's matrix elements live in a warp, shared
// by the kernels that emit nvvm.mma.sync (lowering/GpuMma.h, decode
// attention's GpuDecodeAttentionMma.cpp), the GPU emulator that executes
// it (runtime/emulator/Mma.h) and the tests. Plain C++ without MLIR: the
// emulator runtime includes it.
//
// PTX ISA 9.7.14.5, "Matrix Fragments for mma.m16n8k*", A row-major and B
// column-major (".row.col"), for every m16n8 shape whose multiplicands fill
// 32-bit registers with E = 32 / bits elements (f16/bf16: E = 2; e4m3,
// e5m2, s8, u8 and the f8f6f4 kinds' byte containers: E = 4; packed e2m1
// of the block-scaled m16n8k64: E = 8):
//
//   groupID           = %laneid >> 2
//   threadID_in_group = %laneid % 4
//
//   A (16 x K, K / (2 E) registers; elements a0, a1, ... from the low bits
//   of the first register upwards; element i in register r = i / E):
//     row = groupID + 8 * (r % 2)
//     col = threadID_in_group * E + i % E + 4 E * (r / 2)
//   B (K x 8, K / (4 E) registers, element i in register r = i / E):
//     row = threadID_in_group * E + i % E + 4 E * r
//     col = groupID
//   C and D (16 x 8, four 32-bit registers c0..c3, f32 or s32):
//     row = groupID + 8 * (i / 2)
//     col = threadID_in_group * 2 + i % 2
//
// which is, shape by shape, what the ISA writes out:
//   m16n8k16 .f16/.bf16 (9.7.14.5.8): A row = groupID for ai where
//     0 <= i < 2 || 4 <= i < 6, else groupID + 8; col = threadID_in_group
//     * 2 + (i & 0x1), + 8 for i >= 4. B row = threadID_in_group * 2 +
//     (i & 0x1), + 8 for i >= 2; col = groupID.
//   m16n8k8 .f16/.bf16 (9.7.14.5.7): A row = groupID for a0, a1, else +8;
//     col = threadID_in_group * 2 + (i & 0x1). B row = threadID_in_group
//     * 2 + (i & 0x1).
//   m16n8k32 .e4m3/.e5m2/.s8/.u8 (and .kind::f8f6f4, .kind::mxf8f6f4):
//     A row = groupID for ai where 0 <= i < 4 || 8 <= i < 12, else +8;
//     col = threadID_in_group * 4 + (i & 0x3), + 16 for i >= 8. B row =
//     threadID_in_group * 4 + (i & 0x3), + 16 for i >= 4.
//   m16n8k64 .e2m1 (.kind::mxf4, .kind::mxf4nvf4, block-scaled): A row =
//     groupID for ai where 0 <= i < 8 || 16 <= i < 24, else +8; col =
//     threadID_in_group * 8 + (i & 0x7), + 32 for i >= 16. B row =
//     threadID_in_group * 8 + (i & 0x7), + 32 for i >= 8.
//
// The block-scaled kinds' scale_A (M x V) and scale_B (V x N), V the
// .scale_vec_size, scale K / V consecutive columns of A and rows of B each
// (9.7.14.3). Every lane passes a 32-bit scale-a-data and scale-b-data;
// the selectors pick which lanes and bytes count: thread-id-a picks the
// lane pair of each quad (lane % 4 in {0, 1} for 0, {2, 3} for 1) that
// holds scale_A, thread-id-b the one lane of each quad (lane % 4 ==
// thread-id-b) that holds scale_B, and block j of the V is byte byte-id + j
// (byte-id 0 for 4X, 0 or 2 for 2X). Within the pair, lane 4 r + p holds
// row r + 8 p of scale_A; lane 4 c + thread-id-b holds column c of
// scale_B (CUTLASS's SM120 SFALayout / SFBLayout say the same).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_GPUMMALAYOUT_H
#define LOWBIT_LOWERING_GPUMMALAYOUT_H

#include <cstdint>

namespace lowbit::mma {

inline constexpr int kMmaM = 16;
inline constexpr int kMmaN = 8;
inline constexpr int kWarpLanes = 32;
/// Accumulator (C and D) registers per lane: four f32 (or s32).
inline constexpr int kAccumulatorRegisters = 4;

/// The multiplicand element types of mma.sync's m16n8 shapes.
enum class MmaElement : int32_t {
  F16,
  BF16,
  E4M3,
  E5M2,
  S8,
  U8,
  /// e2m1 in byte containers (.kind::f8f6f4 / .kind::mxf8f6f4, m16n8k32).
  E2M1Byte,
  /// e2m1 packed two per byte (.kind::mxf4 / .kind::mxf4nvf4, m16n8k64).
  E2M1Packed,
};

/// Bits one element takes in a multiplicand register.
constexpr int registerBits(MmaElement element) {
  switch (element) {
  case MmaElement::F16:
  case MmaElement::BF16:
    return 16;
  case MmaElement::E2M1Packed:
    return 4;
  default:
    return 8;
  }
}

/// An m16n8 mma.sync shape: K and the multiplicand element type.
struct MmaFragmentShape {
  int k = 16;
  MmaElement element = MmaElement::F16;

  /// Multiplicand elements per 32-bit register (E).
  constexpr int elementsPerRegister() const {
    return 32 / registerBits(element);
  }
  /// Registers per lane holding A (16 x K) and B (K x 8).
  constexpr int aRegisters() const {
    return kMmaM * k / (kWarpLanes * elementsPerRegister());
  }
  constexpr int bRegisters() const {
    return k * kMmaN / (kWarpLanes * elementsPerRegister());
  }
  constexpr int aElements() const {
    return aRegisters() * elementsPerRegister();
  }
  constexpr int bElements() const {
    return bRegisters() * elementsPerRegister();
  }
};

/// The shapes the ISA defines for each element type (and lowbit uses or
/// will use): f16/bf16 m16n8k16 and m16n8k8, the 8-bit m16n8k32, the
/// block-scaled FP4 m16n8k64.
inline constexpr MmaFragmentShape kM16N8K16F16{16, MmaElement::F16};
inline constexpr MmaFragmentShape kM16N8K16BF16{16, MmaElement::BF16};
inline constexpr MmaFragmentShape kM16N8K8F16{8, MmaElement::F16};
inline constexpr MmaFragmentShape kM16N8K32E4M3{32, MmaElement::E4M3};
inline constexpr MmaFragmentShape kM16N8K32E5M2{32, MmaElement::E5M2};
inline constexpr MmaFragmentShape kM16N8K32S8{32, MmaElement::S8};
inline constexpr MmaFragmentShape kM16N8K32E2M1Byte{32, MmaElement::E2M1Byte};
inline constexpr MmaFragmentShape kM16N8K64E2M1{64, MmaElement::E2M1Packed};

/// A matrix element: (row, col) of A (16 x K), B (K x 8) or C/D (16 x 8).
struct MatrixCoordinate {
  int row = 0, col = 0;
  friend constexpr bool operator==(MatrixCoordinate,
                                   MatrixCoordinate) = default;
};

constexpr int groupId(int lane) { return lane >> 2; }
constexpr int threadIdInGroup(int lane) { return lane % 4; }

/// Element ai (0 <= i < shape.aElements()) held by `lane`.
constexpr MatrixCoordinate aElement(MmaFragmentShape shape, int lane, int i) {
  int e = shape.elementsPerRegister(), r = i / e;
  return {groupId(lane) + 8 * (r % 2),
          threadIdInGroup(lane) * e + i % e + 4 * e * (r / 2)};
}
/// Element bi (0 <= i < shape.bElements()) held by `lane`.
constexpr MatrixCoordinate bElement(MmaFragmentShape shape, int lane, int i) {
  int e = shape.elementsPerRegister(), r = i / e;
  return {threadIdInGroup(lane) * e + i % e + 4 * e * r, groupId(lane)};
}
/// Element ci (and di), 0 <= i < 4, held by `lane`.
constexpr MatrixCoordinate accumulatorElement(int lane, int i) {
  return {groupId(lane) + 8 * (i / 2), threadIdInGroup(lane) * 2 + i % 2};
}

/// The lane whose scale-a-data holds row `row` of scale_A (thread-id-a
/// `threadId`), and the lane whose scale-b-data holds column `col` of
/// scale_B (thread-id-b `threadId`).
constexpr int scaleALane(int row, int threadId) {
  return 4 * (row % 8) + 2 * threadId + row / 8;
}
constexpr int scaleBLane(int col, int threadId) { return 4 * col + threadId; }
/// The row of scale_A that `lane` passes at thread-id-a 0 (the lanes of
/// the other pair pass the same rows; they are not read), and the column
/// of scale_B at thread-id-b 0 (every lane of a quad passes its group's).
constexpr int scaleARowOfLane(int lane) {
  return groupId(lane) + 8 * (lane % 2);
}
constexpr int scaleBColumnOfLane(int lane) { return groupId(lane); }
static_assert(scaleALane(scaleARowOfLane(13), 0) == 13 &&
                  scaleARowOfLane(scaleALane(9, 0)) == 9 &&
                  scaleBColumnOfLane(scaleBLane(5, 0)) == 5,
              "the scale lanes are the inverses of the rows lanes pass");

//===----------------------------------------------------------------------===//
// The f16/bf16 shapes the emulator executes
//===----------------------------------------------------------------------===//

/// The f16/bf16 shapes lowbit emits and emulates: m16n8k16 and m16n8k8.
enum class MmaShape : int32_t { M16N8K16, M16N8K8 };

constexpr int mmaK(MmaShape shape) {
  return shape == MmaShape::M16N8K16 ? 16 : 8;
}
constexpr MmaFragmentShape fragmentShape(MmaShape shape) {
  return {mmaK(shape), MmaElement::F16};
}
/// .f16x2/.bf16x2 registers per lane holding A (4 for K = 16, 2 for K = 8).
constexpr int aRegisters(MmaShape shape) {
  return fragmentShape(shape).aRegisters();
}
/// .f16x2/.bf16x2 registers per lane holding B (2 for K = 16, 1 for K = 8).
constexpr int bRegisters(MmaShape shape) {
  return fragmentShape(shape).bRegisters();
}
/// Element ai / bi of an f16 or bf16 fragment (the same for K = 8 and 16:
/// the K = 8 fragments are the first half).
constexpr MatrixCoordinate aElement(int lane, int i) {
  return aElement(kM16N8K16F16, lane, i);
}
constexpr MatrixCoordinate bElement(int lane, int i) {
  return bElement(kM16N8K16F16, lane, i);
}

//===----------------------------------------------------------------------===//
// ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}.shared.b16
//===----------------------------------------------------------------------===//
//
// PTX ISA 9.7.14.5.15 (ldmatrix): the warp loads 1, 2 or 4 matrices of 8 x 8
// 16-bit elements from shared memory. Each row (8 elements, 16 bytes, 16-byte
// aligned) starts at the address one lane supplies: lanes 0-7 the rows of
// matrix 0, 8-15 of matrix 1, 16-23 of matrix 2, 24-31 of matrix 3 (for .x1
// only lanes 0-7 supply one, for .x2 lanes 0-15). Destination register j of
// every lane holds two elements of matrix j, the first in the low half:
//   without .trans: row = %laneid / 4, cols 2 (%laneid % 4) and + 1
//   with .trans:    rows 2 (%laneid % 4) and + 1, col = %laneid / 4
// which is an mma A (row) or B (.trans, col) fragment of an 8 x 8 block.

inline constexpr int kLdMatrixRows = 8;

/// The lane whose address is row `row` of matrix `matrix`.
constexpr int ldmatrixAddressLane(int matrix, int row) {
  return kLdMatrixRows * matrix + row;
}
/// Element `half` (0: the register's low 16 bits) that `lane` receives of
/// each matrix, as (row, col) of that matrix as stored.
constexpr MatrixCoordinate ldmatrixElement(int lane, int half, bool transpose) {
  MatrixCoordinate untransposed{groupId(lane),
                                threadIdInGroup(lane) * 2 + half};
  return transpose ? MatrixCoordinate{untransposed.col, untransposed.row}
                   : untransposed;
}

} // namespace lowbit::mma

#endif // LOWBIT_LOWERING_GPUMMALAYOUT_H
