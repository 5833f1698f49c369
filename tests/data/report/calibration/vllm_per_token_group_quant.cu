// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: Copyright contributors to the vLLM project
//
// Extracted from vLLM (github.com/vllm-project/vllm, Apache License 2.0):
// csrc/quantization/w8a8/fp8/per_token_group_quant.cu (as stored at commit
// 0f5257e2), per_token_group_quant_8bit_kernel (the shared-memory kernel
// behind per_token_group_fp8_quant for row-major float scales), with
// GroupReduceMax, ComputeGroupScale and QuantizeGroup, and the
// vectorize_with_alignment helper of csrc/quantization/
// vectorization_utils.cuh (as stored at 10f84086, its vector width made
// the template argument the kernel passes: vllm_vectorization.cuh).
// bf16 -> fp8 e4m3 (__nv_fp8_e4m3 for the PyTorch type), group 128.
// Launch, as vLLM's host code for num_groups % 16 == 0: 16 groups per
// block, 256 threads, 16 x 128 x 2 bytes of dynamic shared memory.
// lowbit calibration input (docs/gpu-report.md, "Calibration"); not built
// by the project.
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cstdint>

#include "vllm_vectorization.cuh"


__device__ __forceinline__ float GroupReduceMax(float val) {
  unsigned mask = threadIdx.x % 32 >= 16 ? 0xffff0000 : 0x0000ffff;

  val = fmaxf(val, __shfl_xor_sync(mask, val, 8));
  val = fmaxf(val, __shfl_xor_sync(mask, val, 4));
  val = fmaxf(val, __shfl_xor_sync(mask, val, 2));
  val = fmaxf(val, __shfl_xor_sync(mask, val, 1));
  return val;
}

template <typename T, bool SCALE_UE8M0>
__device__ __forceinline__ float ComputeGroupScale(
    const T* __restrict__ group_input, T* __restrict__ smem_group,
    const int group_size, const int lane_id, const int threads_per_group,
    const float eps, const float max_8bit) {
  float local_absmax = eps;

  constexpr int vec_size = 16 / sizeof(T);

  auto scalar_op_cache = [&] __device__(T & dst, const T& src) {
    float abs_v = fabsf(static_cast<float>(src));
    local_absmax = fmaxf(local_absmax, abs_v);
    dst = src;
  };

  vllm::vectorize_with_alignment<vec_size>(group_input, smem_group,
                                           group_size, lane_id,
                                           threads_per_group, scalar_op_cache);

  local_absmax = GroupReduceMax(local_absmax);

  float y_s = local_absmax / max_8bit;
  if constexpr (SCALE_UE8M0) {
    y_s = exp2f(ceilf(log2f(fmaxf(fabsf(y_s), 1e-10f))));
  }

  return y_s;
}

template <typename T, typename DST_DTYPE>
__device__ __forceinline__ void QuantizeGroup(
    const T* __restrict__ smem_group, DST_DTYPE* __restrict__ group_output,
    const int group_size, const int lane_id, const int threads_per_group,
    const float y_s, const float min_8bit, const float max_8bit) {
  constexpr int vec_size = 16 / sizeof(T);

  auto scalar_op_quant = [&] __device__(DST_DTYPE & dst, const T& src) {
    float q = fminf(fmaxf(static_cast<float>(src) / y_s, min_8bit), max_8bit);
    dst = DST_DTYPE(q);
  };

  vllm::vectorize_with_alignment<vec_size>(smem_group, group_output,
                                           group_size, lane_id,
                                           threads_per_group, scalar_op_quant);
}

template <typename T, typename DST_DTYPE, bool IS_COLUMN_MAJOR = false,
          bool SCALE_UE8M0 = false, typename scale_packed_t = float,
          bool CHECK_BOUNDS = false>
__global__ void per_token_group_quant_8bit_kernel(
    const T* __restrict__ input, void* __restrict__ output_q,
    scale_packed_t* __restrict__ output_s, const int group_size,
    const int num_groups, const int groups_per_block, const float eps,
    const float min_8bit, const float max_8bit, const int scale_num_rows = 0,
    const int scale_stride = 0) {
  const int threads_per_group = 16;
  const int64_t local_group_id = threadIdx.x / threads_per_group;
  const int lane_id = threadIdx.x % threads_per_group;

  const int64_t block_group_id = blockIdx.x * groups_per_block;
  const int64_t global_group_id = block_group_id + local_group_id;
  const int64_t block_group_offset = global_group_id * group_size;

  using scale_element_t = float;
  static_assert(sizeof(scale_packed_t) % sizeof(scale_element_t) == 0);

#if (defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900))
  cudaGridDependencySynchronize();
#endif

  extern __shared__ __align__(16) char smem_raw[];
  T* smem = reinterpret_cast<T*>(smem_raw);
  T* smem_group = smem + local_group_id * group_size;
  const bool valid_group = !CHECK_BOUNDS || global_group_id < num_groups;
  float y_s = 1.0f;
  if (valid_group) {
    const T* group_input = input + block_group_offset;
    scale_element_t* scale_output;

    if constexpr (IS_COLUMN_MAJOR) {
      const int num_elems_per_pack =
          static_cast<int>(sizeof(scale_packed_t) / sizeof(scale_element_t));
      const int scale_num_rows_element = scale_num_rows * num_elems_per_pack;
      const int row_idx = global_group_id / scale_num_rows_element;
      const int col_idx_raw = global_group_id % scale_num_rows_element;
      const int col_idx = col_idx_raw / num_elems_per_pack;
      const int pack_idx = col_idx_raw % num_elems_per_pack;
      scale_output = reinterpret_cast<scale_element_t*>(output_s) +
                     (col_idx * scale_stride * num_elems_per_pack +
                      row_idx * num_elems_per_pack + pack_idx);
    } else {
      scale_output = output_s + global_group_id;
    }

    y_s = ComputeGroupScale<T, SCALE_UE8M0>(group_input, smem_group, group_size,
                                            lane_id, threads_per_group, eps,
                                            max_8bit);

    scale_element_t y_s_quant = y_s;

    if (lane_id == 0) {
      *scale_output = y_s_quant;
    }
  }

  __syncthreads();

  if (valid_group) {
    DST_DTYPE* group_output =
        static_cast<DST_DTYPE*>(output_q) + block_group_offset;
    QuantizeGroup<T, DST_DTYPE>(smem_group, group_output, group_size, lane_id,
                                threads_per_group, y_s, min_8bit, max_8bit);
  }

#if (defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900))
  cudaTriggerProgrammaticLaunchCompletion();
#endif
}

template __global__ void
per_token_group_quant_8bit_kernel<__nv_bfloat16, __nv_fp8_e4m3, false, false,
                                  float, false>(
    const __nv_bfloat16* __restrict__, void* __restrict__,
    float* __restrict__, const int, const int, const int, const float,
    const float, const float, const int, const int);
