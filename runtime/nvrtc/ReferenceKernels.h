//===- ReferenceKernels.h - CUDA C++ quantize kernels for NVRTC -*- C++ -*-===//
//
// For each named scheme, plain CUDA C++ quantize and dequantize kernels
// built on NVIDIA's
// own conversions (cuda_fp8.h, cuda_fp6.h, cuda_fp4.h). Two uses:
//
// - the differential oracle on a GPU: the same f32 operations in the same
//   order as format/Quantize.cpp (docs/quantization.md), so lowbit's JIT
//   kernels must match them bit for bit;
// - the compile-time peer: NVRTC + nvJitLink is what an engine would use
//   without lowbit, so bench/NvrtcCompileBench measures it.
//
// Clarity over speed: one thread per group (per element for per-tensor
// schemes, after a separate amax kernel).
//
// Kernel ABI (extern "C", so the names are not mangled):
//   lowbit_ref_amax(const IN *x, long long count, unsigned *amaxBits)
//     |x| max over the tensor, NaN skipped, as f32 bits (atomicMax on the
//     bits orders non-negative floats). *amaxBits must be 0 before.
//     Needed by per-tensor schemes and nvfp4's second-level scale.
//   lowbit_ref_quantize(const IN *x, long long rows, long long cols,
//                       const unsigned *amaxBits, unsigned char *codes,
//                       void *scales, unsigned char *zeros,
//                       float *globalScale)
//     codes: codesShape bytes; scales: scaleShape entries of the scale type
//     (f32, f16 bits, or one byte for e8m0/ue4m3); zeros and globalScale
//     only where the scheme has them (else may be null).
//   Launch: quantizeThreads(scheme, rows, cols) threads in blocks of 128.
//   lowbit_ref_dequantize(const unsigned char *codes, long long rows,
//                         long long cols, const void *scales,
//                         const unsigned char *zeros,
//                         const float *globalScale, float *out)
//     back to f32, one thread per element (rows * cols threads).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_NVRTC_REFERENCEKERNELS_H
#define LOWBIT_RUNTIME_NVRTC_REFERENCEKERNELS_H

#include "lowbit/Expected.h"
#include "runtime/driver/NvJitLink.h"
#include "runtime/driver/Nvrtc.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lowbit::runtime {

/// The schemes with a reference kernel, in format/Scheme.cpp's order.
const std::vector<std::string> &referenceKernelSchemes();

struct ReferenceKernelSource {
  std::string scheme;
  std::string inputDtype;
  std::string source;
  /// Elements per scale along the last axis (0: one scale per tensor).
  int groupSize = 0;
  /// Whether lowbit_ref_amax must run first.
  bool needsTensorAmax = false;
};

/// `inputDtype`: "f32", "f16" or "bf16".
Expected<ReferenceKernelSource>
referenceKernelSource(std::string_view scheme, std::string_view inputDtype);

/// Threads lowbit_ref_quantize needs: one per group, or one per element.
int64_t quantizeThreads(const ReferenceKernelSource &kernel, int64_t rows,
                        int64_t cols);

/// The CUDA toolkit's include directory ($CUDA_HOME/include, else
/// /usr/local/cuda/include).
std::string cudaIncludeDirectory();

/// NVRTC options for a chip: "sm_90a" -> --gpu-architecture=compute_90a.
std::vector<std::string> referenceNvrtcOptions(std::string_view chip);

struct ReferenceKernelBuild {
  std::string ptx;
  std::string cubin;
  KernelResources quantizeResources;
  double nvrtcMillis = 0;
  double linkMillis = 0;
  std::string nvrtcLog;
};

/// NVRTC to PTX for `chip`, then nvJitLink to a cubin (skipped when
/// `linker` is null).
Expected<ReferenceKernelBuild>
buildReferenceKernel(const NvrtcApi &nvrtc, const NvJitLinkApi *linker,
                     const ReferenceKernelSource &kernel,
                     std::string_view chip);

} // namespace lowbit::runtime

#endif // LOWBIT_RUNTIME_NVRTC_REFERENCEKERNELS_H
