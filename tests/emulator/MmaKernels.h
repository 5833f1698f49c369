//===- MmaKernels.h - Hand-written nvvm.mma.sync kernels --------*- C++ -*-===//
//
// gpu-dialect kernels that run one tensor-core op per warp (or a chain of
// two, the second accumulating onto the first), one 32-thread block per
// tile. Each lane loads its A, B and C registers from row-major tiles with
// the addresses the PTX ISA's fragment formulas give (written out in the
// kernel's arithmetic, not taken from lowering/GpuMmaLayout.h), so the
// emulator's own map is checked against an independent one. Buffers (all
// 1 x N i32):
//   a: per tile, `steps` A tiles, row-major 16 x K halves (K / 2 words a row;
//      8-bit elements: K / 4 words a row)
//   b: per tile, `steps` B tiles stored transposed, 8 x K halves (B^T
//      row-major: element (k, n) at row n, column k)
//   c: per tile, C row-major 16 x 8 f32 (or s32) bits
//   d: per tile, D row-major 16 x 8 f32 (or s32) bits (written); its size
//      sets the grid.
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
  /// 8-bit multiplicands (m16n8k32: k must be 32, bf16 false): e4m3/e5m2
  /// through the LLVM intrinsic (f32 accumulators; MLIR 22's nvvm.mma.sync
  /// has no FP8 form), s8 through nvvm.mma.sync (s32 accumulators).
  enum class Bytes { None, E4M3, E5M2, S8, U8 } bytes = Bytes::None;
  /// B's 8-bit type where it differs from A's (e4m3 x e5m2, s8 x u8, ...).
  Bytes bytesB = Bytes::None;
  bool satfinite = false; ///< s8/u8: .satfinite (wrapping otherwise)

  Bytes typeB() const { return bytesB == Bytes::None ? bytes : bytesB; }
  bool integer() const { return bytes == Bytes::S8 || bytes == Bytes::U8; }
  int skipLane = -1; ///< this lane returns before the mma (a violation)
  /// A wrong fragment map: the kernel swaps two registers of A (0 and 1),
  /// B (0 and 1; m16n8k16 only) or C (1 and 2) before the (first) mma.
  enum class Swap { None, A, B, C } swap = Swap::None;
};

/// The module text (a host @kernel and its gpu.module) of `variant`.
std::string mmaKernelText(const MmaKernelVariant &variant);

/// Where the lanes of mmaWarpRuleKernel execute their mma.
enum class MmaSites {
  One,          ///< one m16n8k16 op, every lane
  TwoSameShape, ///< lanes 0-15 and 16-31 at two m16n8k16 ops (in an scf.if)
  TwoShapes,    ///< lanes 0-15 at an m16n8k16 op, 16-31 at an m16n8k8 one
};
/// A kernel for mma.sync's warp rules: one block of `threads` threads over
/// in/out of 64 i32, each lane's registers its input word, its d0 stored.
/// Only MmaSites::One in a 32-thread block keeps the rules.
std::string mmaWarpRuleKernel(int threads, MmaSites sites);

/// An m16n8k16 mma with f16 accumulators (valid PTX the emulator does not
/// model): one 32-thread block over in/out of 32 i32.
inline constexpr const char *kMmaF16AccumulatorKernel = R"mlir(
module attributes {gpu.container_module} {
  func.func @kernel(%in: memref<?x?xi32>, %out: memref<?x?xi32>) {
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    gpu.launch_func @kernels::@f16_accumulators blocks in (%c1, %c1, %c1)
        threads in (%c32, %c1, %c1)
        args(%in : memref<?x?xi32>, %out : memref<?x?xi32>)
    return
  }
  gpu.module @kernels {
    gpu.func @f16_accumulators(%in: memref<?x?xi32>, %out: memref<?x?xi32>)
        kernel {
      %c0 = arith.constant 0 : index
      %tid = gpu.thread_id x
      %w = memref.load %in[%c0, %tid] : memref<?x?xi32>
      %p = llvm.bitcast %w : i32 to vector<2xf16>
      %m = nvvm.mma.sync A[%p, %p, %p, %p] B[%p, %p] C[%p, %p]
          {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>,
           shape = #nvvm.shape<m = 16, n = 8, k = 16>}
          : (vector<2xf16>, vector<2xf16>, vector<2xf16>)
            -> !llvm.struct<(vector<2xf16>, vector<2xf16>)>
      %d = llvm.extractvalue %m[0] : !llvm.struct<(vector<2xf16>, vector<2xf16>)>
      %bits = llvm.bitcast %d : vector<2xf16> to i32
      memref.store %bits, %out[%c0, %tid] : memref<?x?xi32>
      gpu.return
    }
  }
}
)mlir";

} // namespace lowbit::testing

#endif // LOWBIT_TESTS_EMULATOR_MMAKERNELS_H
