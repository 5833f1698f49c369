//===- BufferAliasing.h - Written buffers overlap nothing -------*- C++ -*-===//
//
// docs/kernel-abi.md: the buffers of one call must not alias (the kernels'
// boundary ops are `restrict`). run() and launch() know every buffer's
// address and size, host or device, so they refuse a written buffer that
// shares a byte with any other buffer of the call instead of computing a
// silently wrong result or destroying an input.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_JIT_BUFFERALIASING_H
#define LOWBIT_RUNTIME_JIT_BUFFERALIASING_H

#include "lowbit/Expected.h"
#include "lowbit/Jit.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>

namespace lowbit::jit {

/// One buffer of a call: [begin, begin + bytes) in its address space.
struct BufferExtent {
  uintptr_t begin = 0;
  uint64_t bytes = 0;
  bool written = false;
};

/// Bytes of one element.
uint64_t elementBytes(ElementType element);

/// The first (written buffer, other buffer) pair that shares a byte, or
/// nullopt. Allocates nothing (the launch paths call it on every launch).
std::optional<std::pair<size_t, size_t>>
findAliasing(std::span<const BufferExtent> extents);

/// The InvalidArgument error for such a pair, from the buffers' names.
Error aliasingError(const std::string &written, const std::string &other,
                    bool otherWritten);

} // namespace lowbit::jit

#endif // LOWBIT_RUNTIME_JIT_BUFFERALIASING_H
