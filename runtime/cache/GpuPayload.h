//===- GpuPayload.h - The payload of a GPU kernel's cache entry -*- C++ -*-===//
//
// lowbit::Jit stores a GPU kernel as one cache entry holding four
// sections: the launch plan, the workspace size, the PTX and (when
// nvJitLink linked it) the cubin: everything get() needs on a disk hit, so
// that a hit never runs (or loads) the compiler. The container lives here,
// beside the entry format, so that the cache can check a payload it reads (a
// payload that does not parse is a corrupt entry: recompiled and replaced) and
// `lowbit cache list` can report one, without linking the JIT.
//
//   "lowbit-jit-gpu 2\n" then, for plan, workspace, ptx, cubin in that
//   order: "<name> <decimal byte count>\n" <bytes>
//
// `workspace` is the decimal count of 32-bit workspace words
// (docs/kernel-abi.md), followed, for a workspace that grows with X, by
// " <words per row> <bits per element>" (target/WorkspaceRows.h). An entry
// whose cubin was deferred (PTX asked for alone, `lowbit compile --emit ptx`)
// ends with one more section, "link 8\ndeferred": the next get() that wants a
// cubin links it and replaces the entry. Nothing else may follow the last
// section. Version 1 (no workspace section) is refused with a message that says
// so; the cache then recompiles and replaces the entry.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_CACHE_GPUPAYLOAD_H
#define LOWBIT_RUNTIME_CACHE_GPUPAYLOAD_H

#include "lowbit/Expected.h"
#include "target/WorkspaceRows.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace lowbit::runtime {

struct GpuPayload {
  std::string plan, ptx, cubin;
  /// 32-bit words of the kernels' workspace parameter; 0: none.
  int64_t workspaceWords = 0;
  /// The part of the workspace that grows with X at each call.
  workspace_abi::RowWords workspaceRows = {};
  /// The cubin was not attempted (only the PTX was asked for), as opposed
  /// to an empty cubin that nvJitLink could not (or was told not to) make.
  bool cubinDeferred = false;
};

std::string encodeGpuPayload(const GpuPayload &payload);

/// CorruptEntry with the reason when `bytes` is not exactly one payload.
Expected<GpuPayload> decodeGpuPayload(std::string_view bytes);

} // namespace lowbit::runtime

#endif // LOWBIT_RUNTIME_CACHE_GPUPAYLOAD_H
