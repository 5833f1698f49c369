// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: Copyright contributors to the vLLM project
//
// Extracted from vLLM (github.com/vllm-project/vllm, Apache License 2.0):
// csrc/quantization/w8a8/fp8/common.cu (as stored at commit 096d3dc9)
// and common.cuh (the vectorization helper: vllm_vectorization.cuh): the
// kernels behind static_scaled_fp8_quant and dynamic_scaled_fp8_quant
// (per-tensor), bf16 -> float8_e4m3fn, with the
// PyTorch types replaced by CUDA's (__nv_bfloat16, __nv_fp8_e4m3) and the
// fp8 conversion by the saturating cvt vLLM's nvidia/quant_utils.cuh
// issues. Launch, as vLLM's host code: grid (num_tokens), block 256.
// lowbit calibration input (docs/gpu-report.md, "Calibration"); not built
// by the project.
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cstdint>

#include "vllm_vectorization.cuh"

namespace vllm {

constexpr float kFp8E4m3Max = 448.0f;

__device__ __forceinline__ float atomicMaxFloat(float* addr, float value) {
  float old;
  old = (value >= 0)
            ? __int_as_float(atomicMax((int*)addr, __float_as_int(value)))
            : __uint_as_float(
                  atomicMin((unsigned int*)addr, __float_as_uint(value)));
  return old;
}

__device__ __forceinline__ __nv_fp8_e4m3 scaled_fp8_conversion(
    float const val, float const inverted_scale) {
  float x = val * inverted_scale;
  float r = fmaxf(-kFp8E4m3Max, fminf(x, kFp8E4m3Max));
  __nv_fp8_e4m3 out;
  out.__x = __nv_cvt_float_to_fp8(r, __NV_SATFINITE, __NV_E4M3);
  return out;
}

template <typename scalar_t, typename fp8_type>
__global__ void scaled_fp8_quant_kernel_strided(
    fp8_type* __restrict__ out, const scalar_t* __restrict__ input,
    const float* __restrict__ scale, int hidden_size, int64_t in_row_stride,
    int64_t out_row_stride) {
  const int64_t token_idx = blockIdx.x;
  const int tid = threadIdx.x;

  const scalar_t* token_in = input + token_idx * in_row_stride;
  fp8_type* token_out = out + token_idx * out_row_stride;

  const float inv_scale = 1.0f / (*scale);

  vectorize_with_alignment<16>(
      token_in, token_out, hidden_size, tid, blockDim.x,
      [=] __device__(fp8_type & dst, const scalar_t& src) {
        dst = scaled_fp8_conversion(static_cast<float>(src), inv_scale);
      });
}

template <typename scalar_t, typename fp8_type>
__global__ void segmented_max_reduction_strided(
    float* __restrict__ scale, const scalar_t* __restrict__ input,
    int hidden_size, int64_t in_row_stride, int64_t num_tokens) {
  __shared__ float cache[256];
  const int tid = threadIdx.x;
  int64_t token_idx = blockIdx.x;

  if (token_idx >= num_tokens) {
    return;
  }

  const scalar_t* row_ptr = input + token_idx * in_row_stride;

  float thread_max = 0.0f;
  for (int e = tid; e < hidden_size; e += blockDim.x) {
    float v = fabsf(static_cast<float>(row_ptr[e]));
    thread_max = fmaxf(thread_max, v);
  }

  cache[tid] = thread_max;
  __syncthreads();

  for (int offset = blockDim.x / 2; offset > 0; offset >>= 1) {
    if (tid < offset) {
      cache[tid] = fmaxf(cache[tid], cache[tid + offset]);
    }
    __syncthreads();
  }

  if (tid == 0) {
    atomicMaxFloat(scale, cache[0] / kFp8E4m3Max);
  }
}

template <typename scalar_t, typename fp8_type>
__global__ void scaled_fp8_quant_kernel_strided_dynamic(
    fp8_type* __restrict__ out, const scalar_t* __restrict__ input,
    const float* __restrict__ scale, int hidden_size, int64_t in_row_stride,
    int64_t out_row_stride) {
  const int64_t token_idx = blockIdx.x;
  const int tid = threadIdx.x;

  const scalar_t* token_in = input + token_idx * in_row_stride;
  fp8_type* token_out = out + token_idx * out_row_stride;

  const float reciprocal_scale = 1.0f / (*scale);
  vectorize_with_alignment<16>(
      token_in, token_out, hidden_size, tid, blockDim.x,
      [=] __device__(fp8_type & dst, const scalar_t& src) {
        dst = scaled_fp8_conversion(static_cast<float>(src), reciprocal_scale);
      });
}

template __global__ void
scaled_fp8_quant_kernel_strided<__nv_bfloat16, __nv_fp8_e4m3>(
    __nv_fp8_e4m3*, const __nv_bfloat16*, const float*, int, int64_t, int64_t);
template __global__ void
segmented_max_reduction_strided<__nv_bfloat16, __nv_fp8_e4m3>(
    float*, const __nv_bfloat16*, int, int64_t, int64_t);
template __global__ void
scaled_fp8_quant_kernel_strided_dynamic<__nv_bfloat16, __nv_fp8_e4m3>(
    __nv_fp8_e4m3*, const __nv_bfloat16*, const float*, int, int64_t, int64_t);

}  // namespace vllm
