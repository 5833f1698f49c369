//===- BufferAliasing.cpp - Written buffers overlap nothing ---------------===//

#include "runtime/jit/BufferAliasing.h"

namespace lowbit::jit {

uint64_t elementBytes(ElementType element) {
  switch (element) {
  case ElementType::F32:
  case ElementType::I32:
    return 4;
  case ElementType::F16:
  case ElementType::BF16:
    return 2;
  case ElementType::U8:
  case ElementType::I8:
    return 1;
  }
  return 1;
}

std::optional<std::pair<size_t, size_t>>
findAliasing(std::span<const BufferExtent> extents) {
  // A dozen buffers at most: every pair.
  for (size_t written = 0; written < extents.size(); ++written) {
    const BufferExtent &out = extents[written];
    if (!out.written || out.bytes == 0)
      continue;
    for (size_t other = 0; other < extents.size(); ++other) {
      const BufferExtent &in = extents[other];
      if (other == written || in.bytes == 0 || (in.written && other < written))
        continue;
      if (out.begin < in.begin + in.bytes && in.begin < out.begin + out.bytes)
        return std::make_pair(written, other);
    }
  }
  return std::nullopt;
}

Error aliasingError(const std::string &written, const std::string &other,
                    bool otherWritten) {
  return makeError(ErrorCode::InvalidArgument,
                   written + " overlaps " + other + " (" +
                       (otherWritten ? "also written" : "an input") +
                       "); the buffers of one call must not alias "
                       "(docs/kernel-abi.md)");
}

} // namespace lowbit::jit
