/*
 * SPDX-FileCopyrightText: Copyright (c) 2022-2025 NVIDIA CORPORATION &
 * AFFILIATES. All rights reserved.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Licensed under the Apache License, Version 2.0 (the "License");
 * you may not use this file except in compliance with the License.
 * You may obtain a copy of the License at
 *
 * http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing, software
 * distributed under the License is distributed on an "AS IS" BASIS,
 * WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 * See the License for the specific language governing permissions and
 * limitations under the License.
 */
// Extracted from NVIDIA TensorRT-LLM (github.com/NVIDIA/TensorRT-LLM):
// cpp/tensorrt_llm/kernels/cutlass_kernels/fp8_blockscale_gemm/
// fp8_blockscale_gemm_kernel.cuh, scale_1x128_kernel (the kernel behind
// torch.ops.trtllm.fp8_quantize_1x128 without UE8M0 scales) and the
// find_max_elem_in_warp helper, bf16 -> fp8 e4m3 with float scales.
// Launch, as TensorRT-LLM's host code: grid (SMs x 8), block 256; a
// grid-stride loop over warps, one 128-element group per warp.
// lowbit calibration input (docs/gpu-report.md, "Calibration"); not built
// by the project.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cstddef>
#include <type_traits>

namespace kernels::fp8_blockscale_gemm {

template <typename T>
__device__ __host__ constexpr T div_up(T a, int b) {
  return (a + b - 1) / b;
}

template <typename T>
__forceinline__ __device__ T find_max_elem_in_warp(T value) {
  for (int offset = 16; offset > 0; offset /= 2) {
    value = T(std::max(float(value),
                       __shfl_down_sync(0xFFFFFFFF, float(value), offset)));
  }
  value = T(__shfl_sync(0xffffffff, float(value), 0));
  return value;
}

template <typename InputType, typename OutputType, typename ScaleType = float,
          bool USE_UE8M0 = false>
__global__ void scale_1x128_kernel(OutputType* output, ScaleType* scales,
                                   InputType const* const input, int dim_x,
                                   int dim_y) {
#if (defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 890))
  size_t scales_along_dim_x = div_up(dim_x, 128);
  size_t scales_along_dim_y = div_up(dim_y, 1);
  size_t stride_scale_dim_y = div_up(dim_y, 4) * 4;
  using Input2Type =
      typename std::conditional<std::is_same<InputType, half>::value, half2,
                                __nv_bfloat162>::type;
  for (size_t warp_idx = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
       warp_idx < scales_along_dim_x * scales_along_dim_y;
       warp_idx += gridDim.x * blockDim.x / 32) {
    int scales_idx_y = warp_idx / scales_along_dim_x;
    int scales_idx_x = warp_idx % scales_along_dim_x;

    InputType const* input_line =
        input + (size_t)scales_idx_y * dim_x + scales_idx_x * 128;
    InputType input_amax = InputType(0);
    int lane_id = threadIdx.x % 32 * 2;

    Input2Type input_frag2[2] = {Input2Type(0, 0), Input2Type(0, 0)};
#pragma unroll
    for (int i = 0; i < 2; i++) {
      if (scales_idx_x * 128 + i * 64 + lane_id >= dim_x) {
        break;
      } else {
        input_frag2[i] = *((Input2Type*)(input_line) + lane_id / 2);
      }
      input_line += 64;
    }
#pragma unroll
    for (int i = 0; i < 2; i++) {
      if (scales_idx_x * 128 + i * 64 + lane_id >= dim_x) {
        break;
      } else {
        input_amax = InputType(
            __hmax(input_amax, __hmax(__habs(input_frag2[i].x),
                                      __habs(input_frag2[i].y))));
      }
    }

    InputType amax = find_max_elem_in_warp(input_amax);
    ScaleType quant_scale =
        amax != InputType(0.f) ? 448.f / ScaleType(amax) : 1.f;
    ScaleType dequant_scale;

    if constexpr (USE_UE8M0) {
      ScaleType dequant_scale_raw = 1.f / quant_scale;
      __nv_fp8_e8m0 ue8m0_scale;
      ue8m0_scale.__x = __nv_cvt_float_to_e8m0(
          float(dequant_scale_raw), __NV_SATFINITE, cudaRoundPosInf);
      dequant_scale = ScaleType(static_cast<float>(ue8m0_scale));
      quant_scale = dequant_scale != ScaleType(0.f) ? 1.f / dequant_scale : 1.f;
    } else {
      dequant_scale = 1.f / quant_scale;
    }

    if (lane_id == 0) {
      scales[(size_t)scales_idx_x * stride_scale_dim_y + scales_idx_y] =
          dequant_scale;
    }

    OutputType* output_line =
        output + (size_t)scales_idx_y * dim_x + scales_idx_x * 128;
#pragma unroll
    for (int i = 0; i < 2; i++) {
      if (scales_idx_x * 128 + i * 64 + lane_id >= dim_x) {
        break;
      } else {
        ScaleType value_1 = ScaleType(input_frag2[i].x) * quant_scale;
        ScaleType value_2 = ScaleType(input_frag2[i].y) * quant_scale;
        output_line[lane_id] = OutputType(value_1);
        output_line[lane_id + 1] = OutputType(value_2);
      }
      output_line += 64;
    }
  }
#endif
}

template __global__ void
scale_1x128_kernel<__nv_bfloat16, __nv_fp8_e4m3, float, false>(
    __nv_fp8_e4m3*, float*, __nv_bfloat16 const* const, int, int);

}  // namespace kernels::fp8_blockscale_gemm
