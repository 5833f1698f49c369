// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: Copyright contributors to the vLLM project
//
// Extracted from vLLM (github.com/vllm-project/vllm, Apache License 2.0):
// vec_n_t of csrc/quantization/vectorization.cuh (as stored at 89b1388d)
// and vectorize_with_alignment of csrc/quantization/vectorization_utils.cuh
// (as stored at 10f84086), its vector width made the template argument
// both calibration kernels pass (vLLM's callers write
// vectorize_with_alignment<16>(...) and <vec_size>). lowbit calibration
// input (docs/gpu-report.md, "Calibration"); not built by the project.
#pragma once

#include <cstdint>

namespace vllm {

template <typename scalar_t, size_t vec_size>
struct __align__(8) vec_n_t {
  scalar_t val[vec_size];
};

template <int VEC, typename InT, typename OutT, typename ScaOp>
__device__ inline void vectorize_with_alignment(const InT* in, OutT* out,
                                                int len, int tid, int stride,
                                                ScaOp&& scalar_op) {
  constexpr int WIDTH = VEC * sizeof(InT);
  uintptr_t addr = reinterpret_cast<uintptr_t>(in);

  int misalignment_offset = addr & (WIDTH - 1);
  int alignment_bytes = WIDTH - misalignment_offset;
  int prefix_elems = alignment_bytes & (WIDTH - 1);
  prefix_elems /= sizeof(InT);
  prefix_elems = min(prefix_elems, len);

  for (int i = tid; i < prefix_elems; i += stride) {
    scalar_op(out[i], in[i]);
  }

  in += prefix_elems;
  out += prefix_elems;
  len -= prefix_elems;

  int num_vec = len / VEC;
  using vin_t = vec_n_t<InT, VEC>;
  using vout_t = vec_n_t<OutT, VEC>;
  auto* v_in = reinterpret_cast<const vin_t*>(in);
  auto* v_out = reinterpret_cast<vout_t*>(out);

  for (int i = tid; i < num_vec; i += stride) {
    vout_t tmp;
    vin_t src = v_in[i];
#pragma unroll
    for (int j = 0; j < VEC; ++j) {
      scalar_op(tmp.val[j], src.val[j]);
    }
    v_out[i] = tmp;
  }

  int tail_start = num_vec * VEC;
  for (int i = tid + tail_start; i < len; i += stride) {
    scalar_op(out[i], in[i]);
  }
}

}  // namespace vllm
