//===- CudaDriverTiming.h - Event timing (template part) --------*- C++ -*-===//

#ifndef LOWBIT_RUNTIME_DRIVER_CUDADRIVERTIMING_H
#define LOWBIT_RUNTIME_DRIVER_CUDADRIVERTIMING_H

namespace lowbit::runtime {

template <typename Work>
Expected<float> timeOnStream(const CudaDriverApi &api, CUstream stream,
                             Work &&work) {
  CUevent start = nullptr, stop = nullptr;
  auto check = [&](CUresult result, std::string_view call) -> Status {
    if (result == kCudaSuccess)
      return Status::success();
    return makeError(ErrorCode::CudaError,
                     describeCudaError(api, result, call));
  };
  auto destroy = [&]() {
    if (start)
      api.cuEventDestroy(start);
    if (stop)
      api.cuEventDestroy(stop);
  };
  Status status = check(api.cuEventCreate(&start, 0), "cuEventCreate");
  if (status)
    status = check(api.cuEventCreate(&stop, 0), "cuEventCreate");
  if (status)
    status = check(api.cuEventRecord(start, stream), "cuEventRecord");
  if (status)
    status = work();
  if (status)
    status = check(api.cuEventRecord(stop, stream), "cuEventRecord");
  if (status)
    status = check(api.cuEventSynchronize(stop), "cuEventSynchronize");
  float millis = 0;
  if (status)
    status = check(api.cuEventElapsedTime(&millis, start, stop),
                   "cuEventElapsedTime");
  destroy();
  if (!status)
    return std::move(status).takeError();
  return millis;
}

} // namespace lowbit::runtime

#endif // LOWBIT_RUNTIME_DRIVER_CUDADRIVERTIMING_H
