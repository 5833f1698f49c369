//===- MatrixMemoryKernels.h - Hand-written cp.async + ldmatrix kernels -*-
// C++ -*-===//
//
// One 32-thread block: every thread copies its 16 bytes of `in` into a
// 512-byte shared tile with nvvm.cp.async.shared.global (16 / copyBytes
// copies, lane 3's last one with a src-size that zero-fills), commits,
// waits, meets the others at a barrier; then the warp loads matrices from
// the tile with nvvm.ldmatrix, lane l supplying the address of shared row
// (7 l) % 32, and stores its registers at out[4 l + j]. The variants break
// one rule each (docs/emulator.md, "Asynchronous copies").
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TESTS_EMULATOR_MATRIXMEMORYKERNELS_H
#define LOWBIT_TESTS_EMULATOR_MATRIXMEMORYKERNELS_H

#include <string>

namespace lowbit::testing {

struct MatrixMemoryKernel {
  int copyBytes = 16; ///< cp-size: 4, 8 or 16 (16 uses .cg)
  int matrices = 4;   ///< ldmatrix .x1, .x2, .x4
  bool transpose = false;
  enum class Rule {
    Kept,
    NoWait,          ///< no cp.async.wait_group before the barrier
    NoBarrier,       ///< wait_group 0 but no barrier before ldmatrix
    WaitOneOfTwo,    ///< two groups (the halves), only wait_group 1
    WaitOneThenZero, ///< two groups, wait_group 1 then wait_group 0 (kept)
    MisalignedRow,   ///< lane 0's row address 8 bytes off
    SourcePastEnd,   ///< thread 31 copies from just past the end of `in`
    GlobalRow,       ///< lane 0's row address points into `in`
    CopiedTwice,     ///< a second cp.async into a pending destination
    NotCommitted,    ///< wait_group 0 with the copies never committed
  } rule = Rule::Kept;
};

/// The module text (a host @kernel over in and out, 1 x 128 i32 each).
std::string matrixMemoryKernelText(const MatrixMemoryKernel &kernel);

/// The src-size of lane 3's last copy (the others copy cp-size bytes).
constexpr int zeroFilledSourceBytes(int copyBytes) { return copyBytes - 4; }

} // namespace lowbit::testing

#endif // LOWBIT_TESTS_EMULATOR_MATRIXMEMORYKERNELS_H
