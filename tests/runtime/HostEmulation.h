// Just enough of CUDA's built-ins to run the NVRTC reference kernels on the
// host, one emulated thread at a time. The conversions are NVIDIA's own
// host implementations from cuda_fp8.h/cuda_fp6.h/cuda_fp4.h, which match
// the device software path (and, per docs/numerics.md, the hardware cvt).

#ifndef LOWBIT_TESTS_RUNTIME_HOSTEMULATION_H
#define LOWBIT_TESTS_RUNTIME_HOSTEMULATION_H

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp4.h>
#include <cuda_fp6.h>
#include <cuda_fp8.h>

#include <cmath>
#include <cstring>

// cuda_fp16.h (through host_defines.h) defines __global__ as an attribute
// the host compiler would warn about; the kernels here are plain functions.
#undef __global__
#define __global__

struct HostDim3 {
  unsigned x = 0, y = 1, z = 1;
};
inline thread_local HostDim3 blockIdx, blockDim, threadIdx, gridDim;

using std::isinf;
using std::isnan;
inline unsigned __float_as_uint(float value) {
  unsigned bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}
inline float __uint_as_float(unsigned bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}
inline unsigned atomicMax(unsigned *address, unsigned value) {
  unsigned old = *address;
  if (value > old)
    *address = value;
  return old;
}
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }

struct HostReferenceKernel {
  const char *scheme;
  const char *dtype;
  void (*amax)(const void *x, long long count, unsigned *amaxBits);
  void (*quantize)(const void *x, long long rows, long long cols,
                   const unsigned *amaxBits, unsigned char *codes, void *scales,
                   unsigned char *zeros, float *globalScale);
  void (*dequantize)(const unsigned char *codes, long long rows, long long cols,
                     const void *scales, const unsigned char *zeros,
                     const float *globalScale, float *out);
};

/// Runs `body` once per thread of a 1-D grid of 128-thread blocks.
template <typename Body> void runHostGrid(long long threads, Body &&body) {
  blockDim.x = 128;
  gridDim.x = unsigned((threads + 127) / 128);
  for (unsigned block = 0; block < gridDim.x; ++block)
    for (unsigned thread = 0; thread < blockDim.x; ++thread) {
      blockIdx.x = block;
      threadIdx.x = thread;
      body();
    }
}

#endif // LOWBIT_TESTS_RUNTIME_HOSTEMULATION_H
