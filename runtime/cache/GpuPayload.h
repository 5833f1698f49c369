//===- GpuPayload.h - The payload of a GPU kernel's cache entry -*- C++ -*-===//
//
// lowbit::Jit stores a GPU kernel as one cache entry holding three
// sections: the launch plan, the PTX and (when nvJitLink linked it) the
// cubin. The container lives here, beside the entry format, so that the
// cache can check a payload it reads (a payload that does not parse is a
// corrupt entry: recompiled and replaced) and `lowbit cache list` can
// report one, without linking the JIT.
//
//   "lowbit-jit-gpu 1\n" then, for plan, ptx, cubin in that order:
//   "<name> <decimal byte count>\n" <bytes>
//
// Nothing may follow the last section.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_CACHE_GPUPAYLOAD_H
#define LOWBIT_RUNTIME_CACHE_GPUPAYLOAD_H

#include "lowbit/Expected.h"

#include <string>
#include <string_view>

namespace lowbit::runtime {

struct GpuPayload {
  std::string plan, ptx, cubin;
};

std::string encodeGpuPayload(const GpuPayload &payload);

/// CorruptEntry with the reason when `bytes` is not exactly one payload.
Expected<GpuPayload> decodeGpuPayload(std::string_view bytes);

} // namespace lowbit::runtime

#endif // LOWBIT_RUNTIME_CACHE_GPUPAYLOAD_H
