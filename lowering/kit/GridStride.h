//===- GridStride.h - Grid-stride loops of the kernel kit -------*- C++ -*-===//
//
// What the grid-stride kernels share beyond kit::KernelEmitter
// (docs/kernel-kit.md): the grid cap.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_KIT_GRIDSTRIDE_H
#define LOWBIT_LOWERING_KIT_GRIDSTRIDE_H

#include <cstdint>

namespace lowbit::kit {

/// The grid cap of the grid-stride kernels: about four waves of 256-thread
/// blocks on a 132-SM H200 (8 resident per SM) or a 148-SM B200, so each
/// thread's setup is paid for a few trips and the last wave is short.
inline constexpr int64_t kGridStrideBlocks = 4096;

} // namespace lowbit::kit

#endif // LOWBIT_LOWERING_KIT_GRIDSTRIDE_H
