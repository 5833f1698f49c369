// A plain HBM copy: a grid-stride loop that loads UNROLL float4 values a
// trip, each a grid's width apart, then stores them; a scalar loop copies
// what is left. Calibration input (docs/gpu-report.md, "Calibration"):
// written for lowbit to the loop structure of the copy kernel that
// ahmadsharif1/cuda_study (commit a30587320ca5fdd72570e8d1113f35f373647649,
// micro_benchmarks/copy_bw.cu) times in its README, "HBM Bandwidth
// Scaling"; that repository states no license, so its file is not copied.
#include <cstddef>

template <typename T, int UNROLL>
__global__ void copy_unrolled(const T *__restrict__ source,
                              T *__restrict__ destination, size_t count) {
  size_t index = blockIdx.x * blockDim.x + threadIdx.x;
  size_t gridThreads = (size_t)gridDim.x * blockDim.x;
  for (; index + (UNROLL - 1) * gridThreads < count;
       index += UNROLL * gridThreads) {
    T held[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
      held[u] = source[index + u * gridThreads];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
      destination[index + u * gridThreads] = held[u];
  }
  for (; index < count; index += gridThreads)
    destination[index] = source[index];
}

template __global__ void copy_unrolled<float4, 4>(const float4 *, float4 *,
                                                  size_t);
