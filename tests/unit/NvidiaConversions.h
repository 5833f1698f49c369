//===- NvidiaConversions.h - NVIDIA's host conversions as an oracle -*- C++ -*-===//
//
// One row per conversion that NVIDIA's headers define, with the lowbit
// format and options that must give the same bits.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TESTS_NVIDIACONVERSIONS_H
#define LOWBIT_TESTS_NVIDIACONVERSIONS_H

#include "format/Format.h"

#include <cuda_fp4.h>
#include <cuda_fp6.h>
#include <cuda_fp8.h>

#include <vector>

namespace lowbit::test {

struct NvidiaCase {
  const char *label;
  const char *format;
  EncodeOptions options;
  uint32_t (*convert)(float);
};

inline const std::vector<NvidiaCase> &nvidiaCases() {
  static const std::vector<NvidiaCase> cases = {
      {"e4m3 satfinite", "e4m3", {true},
       [](float x) -> uint32_t {
         return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
       }},
      {"e4m3 nosat", "e4m3", {false},
       [](float x) -> uint32_t {
         return __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E4M3);
       }},
      {"e5m2 satfinite", "e5m2", {true},
       [](float x) -> uint32_t {
         return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2);
       }},
      {"e5m2 nosat", "e5m2", {false},
       [](float x) -> uint32_t {
         return __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E5M2);
       }},
      {"e2m3 rn", "e2m3", {true},
       [](float x) -> uint32_t {
         return __nv_cvt_float_to_fp6(x, __NV_E2M3, cudaRoundNearest);
       }},
      {"e3m2 rn", "e3m2", {true},
       [](float x) -> uint32_t {
         return __nv_cvt_float_to_fp6(x, __NV_E3M2, cudaRoundNearest);
       }},
      {"e2m1 rn", "e2m1", {true},
       [](float x) -> uint32_t {
         return __nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest);
       }},
      // PTX has only .rz and .rp for ue8m0; the MX FLOOR and RCEIL rules
      // are built on them.
      {"e8m0 rz satfinite", "e8m0", {true, Rounding::TowardZero},
       [](float x) -> uint32_t {
         return __nv_cvt_float_to_e8m0(x, __NV_SATFINITE, cudaRoundZero);
       }},
      {"e8m0 rp satfinite", "e8m0", {true, Rounding::TowardPosInf},
       [](float x) -> uint32_t {
         return __nv_cvt_float_to_e8m0(x, __NV_SATFINITE, cudaRoundPosInf);
       }},
      {"e8m0 rz nosat", "e8m0", {false, Rounding::TowardZero},
       [](float x) -> uint32_t {
         return __nv_cvt_float_to_e8m0(x, __NV_NOSAT, cudaRoundZero);
       }},
      {"e8m0 rp nosat", "e8m0", {false, Rounding::TowardPosInf},
       [](float x) -> uint32_t {
         return __nv_cvt_float_to_e8m0(x, __NV_NOSAT, cudaRoundPosInf);
       }},
  };
  return cases;
}

} // namespace lowbit::test

#endif // LOWBIT_TESTS_NVIDIACONVERSIONS_H
