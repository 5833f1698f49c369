//===- WorkspacePool.h - Per-stream kernel workspaces -----------*- C++ -*-===//
//
// A kernel whose scratch is not a module global (its reduction counters,
// its amax) takes one extra trailing parameter: a [1, WORDS] i32 buffer
// that is zero before the first launch of a launch sequence and that the
// kernels leave zero (target/Workspace.h, the ABI; docs/runtime.md,
// "Workspace"). The runtime owns it:
// one buffer per stream, zeroed once when allocated, grown (never shrunk)
// to the largest WORDS asked on that stream. Launches on one stream run in
// order, so kernels on the same stream may share it; two streams never do.
// A workspace that grows with X (target/WorkspaceRows.h) keeps zero only
// before X's region, so those kernels get a second buffer per stream and
// never hand a fixed-size kernel a word they left written.
// The JIT (lowbit::Jit) and the AOT runner both use this pool.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_AOT_WORKSPACEPOOL_H
#define LOWBIT_RUNTIME_AOT_WORKSPACEPOOL_H

#include "lowbit/Expected.h"
#include "runtime/driver/CudaDriver.h"

#include <cstdint>
#include <mutex>
#include <vector>

namespace lowbit::launch {

class WorkspacePool {
public:
  WorkspacePool() = default;
  WorkspacePool(const WorkspacePool &) = delete;
  WorkspacePool &operator=(const WorkspacePool &) = delete;
  /// Frees every buffer; the context they were allocated in must be
  /// current (or gone with the process).
  ~WorkspacePool();

  /// The device address of `stream`'s workspace, with at least `words`
  /// zeroed i32 words (words > 0). The first request of a stream, or one
  /// larger than its buffer, allocates and zeroes a buffer (synchronous:
  /// cuMemAlloc + cuMemcpyHtoD); every other request is a lookup.
  /// `growsWithX`: for a workspace that grows with X, from the stream's
  /// second buffer (whose words past workspace_abi::kRowRegionWord may
  /// hold anything).
  Expected<uint64_t> acquire(const runtime::CudaDriverApi &api,
                             runtime::CUstream stream, int64_t words,
                             bool growsWithX = false);

  /// Buffers held for streams, both kinds (for tests).
  size_t streamCount() const;

private:
  struct Slot {
    runtime::CUstream stream;
    bool growsWithX;
    uint64_t address;
    int64_t words;
  };
  mutable std::mutex mutex;
  const runtime::CudaDriverApi *driver = nullptr;
  std::vector<Slot> slots;
  /// Buffers replaced by larger ones: work already queued may still use
  /// them, so they are freed with the pool.
  std::vector<uint64_t> retired;
};

} // namespace lowbit::launch

#endif // LOWBIT_RUNTIME_AOT_WORKSPACEPOOL_H
