//===- WorkspacePool.cpp - Per-stream kernel workspaces -------------------===//

#include "runtime/aot/WorkspacePool.h"

#include "target/Workspace.h"

#include <string>

namespace lowbit::launch {

WorkspacePool::~WorkspacePool() {
  if (!driver)
    return;
  for (const Slot &slot : slots)
    driver->cuMemFree(slot.address);
  for (uint64_t address : retired)
    driver->cuMemFree(address);
}

size_t WorkspacePool::streamCount() const {
  std::lock_guard<std::mutex> lock(mutex);
  return slots.size();
}

Expected<uint64_t> WorkspacePool::acquire(const runtime::CudaDriverApi &api,
                                          runtime::CUstream stream,
                                          int64_t words, bool growsWithX) {
  if (words <= 0 || words > workspace_abi::kMaxWords)
    return makeError(ErrorCode::InvalidArgument,
                     "workspace of " + std::to_string(words) + " words");
  std::lock_guard<std::mutex> lock(mutex);
  Slot *found = nullptr;
  for (Slot &slot : slots)
    if (slot.stream == stream && slot.growsWithX == growsWithX)
      found = &slot;
  if (found && found->words >= words)
    return found->address;

  driver = &api;
  size_t bytes = size_t(words) * 4;
  runtime::CUdeviceptr address = 0;
  if (runtime::CUresult result = api.cuMemAlloc(&address, bytes);
      result != runtime::kCudaSuccess)
    return makeError(ErrorCode::CudaError,
                     runtime::describeCudaError(api, result,
                                                "cuMemAlloc(workspace, " +
                                                    std::to_string(bytes) +
                                                    " bytes)"));
  std::vector<int32_t> zeros(size_t(words), 0);
  if (runtime::CUresult result = api.cuMemcpyHtoD(address, zeros.data(), bytes);
      result != runtime::kCudaSuccess) {
    api.cuMemFree(address);
    return makeError(
        ErrorCode::CudaError,
        runtime::describeCudaError(api, result, "cuMemcpyHtoD(workspace)"));
  }
  if (found) {
    retired.push_back(found->address);
    *found = Slot{stream, growsWithX, uint64_t(address), words};
  } else {
    slots.push_back(Slot{stream, growsWithX, uint64_t(address), words});
  }
  return uint64_t(address);
}

} // namespace lowbit::launch
