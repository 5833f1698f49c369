//===- ReferenceKernels.cpp - CUDA C++ quantize kernels for NVRTC ---------===//
//
// Every formula below mirrors format/Quantize.cpp step for step (the order
// of f32 operations is the contract of docs/quantization.md). The element
// conversions are NVIDIA's: __nv_cvt_float_to_fp8/fp6/fp4, which use the
// hardware cvt where the chip has it and NVIDIA's software path elsewhere.
//
//===----------------------------------------------------------------------===//

#include "runtime/nvrtc/ReferenceKernels.h"

#include <cstdlib>

namespace lowbit::runtime {
namespace {

/// Shared by every scheme: input loading, the amax kernel, bit helpers.
constexpr std::string_view kPrelude = R"cuda(
#include <cuda_fp8.h>
#include <cuda_fp6.h>
#include <cuda_fp4.h>

// f16 and bf16 inputs are widened to f32 exactly and converted once (never
// rounded through f16 on the way to an 8-bit format).
__device__ __forceinline__ float lowbit_load(const float *x, long long i) { return x[i]; }
__device__ __forceinline__ float lowbit_load(const __half *x, long long i) { return __half2float(x[i]); }
__device__ __forceinline__ float lowbit_load(const __nv_bfloat16 *x, long long i) { return __bfloat162float(x[i]); }

__device__ __forceinline__ long long lowbit_thread() {
  return (long long)blockIdx.x * blockDim.x + threadIdx.x;
}

// Statistics skip NaN (PTX max.f32 returns the other operand) and start at
// 0, as gatherStats does.
extern "C" __global__ void lowbit_ref_amax(const LOWBIT_IN *x, long long count,
                                           unsigned *amaxBits) {
  float local = 0.0f;
  for (long long i = lowbit_thread(); i < count; i += (long long)gridDim.x * blockDim.x) {
    float value = lowbit_load(x, i);
    if (!isnan(value))
      local = fmaxf(local, fabsf(value));
  }
  // Non-negative floats (inf included) order like their bit patterns.
  atomicMax(amaxBits, __float_as_uint(local));
}

// encodeScale(F32, v): saturating, a scale is never inf.
__device__ __forceinline__ float lowbit_f32_scale(float value) {
  return isinf(value) ? copysignf(3.402823466e38f, value) : value;
}

// PTX cvt.rni.sat to a signed integer of `bits` bits; NaN gives 0.
__device__ __forceinline__ int lowbit_to_int(float value, int low, int high) {
  if (isnan(value))
    return 0;
  float rounded = rintf(value);
  rounded = fminf(fmaxf(rounded, (float)low), (float)high);
  return (int)rounded;
}

// e8m0 code -> value; code 0 is 2^-127, an f32 subnormal.
__device__ __forceinline__ float lowbit_e8m0_value(unsigned code) {
  return code == 0 ? __uint_as_float(0x00400000u) : __uint_as_float(code << 23);
}

__device__ __forceinline__ float lowbit_half_value(__half_raw raw) {
  return __half2float(__half(raw));
}

// Unsigned e4m3 (NVFP4's block scale) -> value, through NVIDIA's decoder.
__device__ __forceinline__ float lowbit_ue4m3_value(unsigned code) {
  __half_raw raw = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)code, __NV_E4M3);
  return __half2float(__half(raw));
}
)cuda";

/// Per-tensor schemes: scale = amax / qmax, codes = cvt(x / scale).
constexpr std::string_view kPerTensorKernel = R"cuda(
extern "C" __global__ void lowbit_ref_quantize(
    const LOWBIT_IN *x, long long rows, long long cols, const unsigned *amaxBits,
    unsigned char *codes, void *scales, unsigned char *zeros, float *globalScale) {
  long long i = lowbit_thread();
  if (i >= rows * cols)
    return;
  float amax = __uint_as_float(*amaxBits);
  float scale = lowbit_f32_scale(amax / LOWBIT_QMAX);
  if (scale == 0.0f)
    scale = 1.0f; // an all-zero tensor: zeros and a finite scale
  if (i == 0)
    ((float *)scales)[0] = scale;
  codes[i] = LOWBIT_ENCODE(lowbit_load(x, i) / scale);
}
)cuda";

/// MX schemes: e8m0 scale per 32 along the last axis, OCP FLOOR rule.
constexpr std::string_view kMxKernel = R"cuda(
extern "C" __global__ void lowbit_ref_quantize(
    const LOWBIT_IN *x, long long rows, long long cols, const unsigned *amaxBits,
    unsigned char *codes, void *scales, unsigned char *zeros, float *globalScale) {
  const long long groupsPerRow = (cols + LOWBIT_GROUP - 1) / LOWBIT_GROUP;
  long long g = lowbit_thread();
  if (g >= rows * groupsPerRow)
    return;
  long long row = g / groupsPerRow, first = (g % groupsPerRow) * LOWBIT_GROUP;
  long long last = min(first + LOWBIT_GROUP, cols);
  float amax = 0.0f;
  for (long long c = first; c < last; ++c) {
    float value = lowbit_load(x, row * cols + c);
    if (!isnan(value))
      amax = fmaxf(amax, fabsf(value));
  }
  // k = floor(log2(amax)) - emax_elem, clamped to [-127, 127]; an
  // all-zero group gives code 0x00 (2^-127).
  unsigned code = 0;
  if (amax != 0.0f) {
    int exponent = isinf(amax) ? 127 + LOWBIT_EMAX : ilogbf(amax);
    int k = min(max(exponent - LOWBIT_EMAX, -127), 127);
    code = (unsigned)(k + 127);
  }
  ((unsigned char *)scales)[g] = (unsigned char)code;
  float scale = lowbit_e8m0_value(code);
  for (long long c = first; c < last; ++c)
    LOWBIT_STORE(row, c, LOWBIT_ENCODE(lowbit_load(x, row * cols + c) / scale));
}
)cuda";

/// NVFP4 with torchao's decode multiplier g = amax / (6 * 448).
constexpr std::string_view kNvfp4Kernel = R"cuda(
extern "C" __global__ void lowbit_ref_quantize(
    const LOWBIT_IN *x, long long rows, long long cols, const unsigned *amaxBits,
    unsigned char *codes, void *scales, unsigned char *zeros, float *globalScale) {
  const long long groupsPerRow = (cols + LOWBIT_GROUP - 1) / LOWBIT_GROUP;
  long long g = lowbit_thread();
  if (g >= rows * groupsPerRow)
    return;
  // The stored global: 0 (all-zero tensor) becomes 1, inf the f32 max.
  float global = __uint_as_float(*amaxBits) / 2688.0f;
  if (global == 0.0f || isnan(global))
    global = 1.0f;
  else if (isinf(global))
    global = 3.402823466e38f;
  if (g == 0)
    *globalScale = global;
  long long row = g / groupsPerRow, first = (g % groupsPerRow) * LOWBIT_GROUP;
  long long last = min(first + LOWBIT_GROUP, cols);
  float amax = 0.0f;
  for (long long c = first; c < last; ++c) {
    float value = lowbit_load(x, row * cols + c);
    if (!isnan(value))
      amax = fmaxf(amax, fabsf(value));
  }
  // s = ue4m3(clamp(amax / 6 / g, 2^-9, 448)); elements e2m1(x / (s * g)).
  float wanted = amax / 6.0f / global;
  wanted = fminf(fmaxf(wanted, 0.001953125f), 448.0f);
  unsigned code = __nv_cvt_float_to_fp8(wanted, __NV_SATFINITE, __NV_E4M3);
  ((unsigned char *)scales)[g] = (unsigned char)code;
  float scale = lowbit_ue4m3_value(code);
  for (long long c = first; c < last; ++c)
    LOWBIT_STORE(row, c, LOWBIT_ENCODE(lowbit_load(x, row * cols + c) / (scale * global)));
}
)cuda";

/// int4_g128: asymmetric uint4, f16 scale and uint8 zero per 128.
constexpr std::string_view kInt4Kernel = R"cuda(
extern "C" __global__ void lowbit_ref_quantize(
    const LOWBIT_IN *x, long long rows, long long cols, const unsigned *amaxBits,
    unsigned char *codes, void *scales, unsigned char *zeros, float *globalScale) {
  const long long groupsPerRow = (cols + LOWBIT_GROUP - 1) / LOWBIT_GROUP;
  long long g = lowbit_thread();
  if (g >= rows * groupsPerRow)
    return;
  long long row = g / groupsPerRow, first = (g % groupsPerRow) * LOWBIT_GROUP;
  long long last = min(first + LOWBIT_GROUP, cols);
  float low = 0.0f, high = 0.0f;
  for (long long c = first; c < last; ++c) {
    float value = lowbit_load(x, row * cols + c);
    if (!isnan(value)) {
      low = fminf(low, value);
      high = fmaxf(high, value);
    }
  }
  // scale = f16((high - low) / 15), saturating; a zero scale becomes 1.
  __half half = __float2half_rn((high - low) / 15.0f);
  unsigned short bits = __half_as_ushort(half);
  if ((bits & 0x7FFFu) == 0x7C00u)
    bits = (unsigned short)((bits & 0x8000u) | 0x7BFFu);
  if (__half2float(__ushort_as_half(bits)) == 0.0f)
    bits = 0x3C00u;
  ((unsigned short *)scales)[g] = bits;
  float scale = __half2float(__ushort_as_half(bits));
  // zero = clamp(rne(-min(low, 0) / scale), 0, 15)
  float zeroValue = rintf(-fminf(low, 0.0f) / scale);
  int zero = (int)fminf(fmaxf(zeroValue, 0.0f), 15.0f);
  zeros[g] = (unsigned char)zero;
  for (long long c = first; c < last; ++c) {
    float rounded = rintf(lowbit_load(x, row * cols + c) / scale);
    if (isnan(rounded))
      rounded = 0.0f;
    rounded = fminf(fmaxf(rounded, -16.0f), 16.0f);
    int code = min(max((int)rounded + zero, 0), 15);
    LOWBIT_STORE(row, c, (unsigned)code);
  }
}
)cuda";

/// int8_g64: symmetric int8, f32 scale per 64.
constexpr std::string_view kInt8GroupKernel = R"cuda(
extern "C" __global__ void lowbit_ref_quantize(
    const LOWBIT_IN *x, long long rows, long long cols, const unsigned *amaxBits,
    unsigned char *codes, void *scales, unsigned char *zeros, float *globalScale) {
  const long long groupsPerRow = (cols + LOWBIT_GROUP - 1) / LOWBIT_GROUP;
  long long g = lowbit_thread();
  if (g >= rows * groupsPerRow)
    return;
  long long row = g / groupsPerRow, first = (g % groupsPerRow) * LOWBIT_GROUP;
  long long last = min(first + LOWBIT_GROUP, cols);
  float amax = 0.0f;
  for (long long c = first; c < last; ++c) {
    float value = lowbit_load(x, row * cols + c);
    if (!isnan(value))
      amax = fmaxf(amax, fabsf(value));
  }
  float scale = lowbit_f32_scale(amax / 127.0f);
  if (scale == 0.0f)
    scale = 1.0f;
  ((float *)scales)[g] = scale;
  for (long long c = first; c < last; ++c)
    LOWBIT_STORE(row, c, LOWBIT_ENCODE(lowbit_load(x, row * cols + c) / scale));
}
)cuda";

/// Dequantize, for every scheme: one thread per element. The element
/// decoders are NVIDIA's (fp8/fp6/fp4 -> half is exact), the arithmetic is
/// format/Quantize.cpp's dequantize().
constexpr std::string_view kDequantizeKernel = R"cuda(
extern "C" __global__ void lowbit_ref_dequantize(
    const unsigned char *codes, long long rows, long long cols, const void *scales,
    const unsigned char *zeros, const float *globalScale, float *out) {
  long long i = lowbit_thread();
  if (i >= rows * cols)
    return;
  long long row = i / cols, col = i % cols;
  long long s = LOWBIT_GROUP == 0
                    ? 0
                    : row * ((cols + LOWBIT_GROUP - 1) / LOWBIT_GROUP) + col / LOWBIT_GROUP;
  unsigned code = LOWBIT_LOAD_CODE(row, col);
  float scale = LOWBIT_SCALE_VALUE(s);
  out[i] = LOWBIT_DEQUANT(code, scale, s);
}
)cuda";

/// Byte packing: one code per byte.
constexpr std::string_view kStoreByte =
    "#define LOWBIT_STORE(row, col, code) "
    "(codes[(row) * cols + (col)] = (unsigned char)(code))\n"
    "#define LOWBIT_LOAD_CODE(row, col) ((unsigned)codes[(row) * cols + "
    "(col)])\n";
/// Nibble packing: element 0 in the low nibble, rows padded to whole bytes.
/// Groups have an even size, so one thread owns every byte it touches.
constexpr std::string_view kStoreNibble = R"cuda(
__device__ __forceinline__ void lowbit_store_nibble(unsigned char *codes, long long cols,
                                                    long long row, long long col, unsigned code) {
  unsigned char *byte = codes + row * ((cols + 1) / 2) + col / 2;
  if (col % 2 == 0)
    *byte = (unsigned char)(code & 0xF);
  else
    *byte = (unsigned char)(*byte | ((code & 0xF) << 4));
}
#define LOWBIT_STORE(row, col, code) lowbit_store_nibble(codes, cols, row, col, code)
#define LOWBIT_LOAD_CODE(row, col) \
  ((unsigned)(codes[(row) * ((cols + 1) / 2) + (col) / 2] >> (4 * ((col) % 2))) & 0xFu)
)cuda";

struct SchemeRecipe {
  std::string_view name;
  std::string_view kernel;
  std::string_view encode; // LOWBIT_ENCODE(v) body
  std::string_view extraDefines;
  /// LOWBIT_SCALE_VALUE(s) and LOWBIT_DEQUANT(code, scale, s) bodies.
  std::string_view scaleValue;
  std::string_view dequant;
  int groupSize;
  bool nibble;
  bool needsTensorAmax;
};

constexpr std::string_view kEncodeE4m3 =
    "__nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3)";
constexpr std::string_view kEncodeE5m2 =
    "__nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E5M2)";
constexpr std::string_view kEncodeE2m3 =
    "__nv_cvt_float_to_fp6(v, __NV_E2M3, cudaRoundNearest)";
constexpr std::string_view kEncodeE3m2 =
    "__nv_cvt_float_to_fp6(v, __NV_E3M2, cudaRoundNearest)";
constexpr std::string_view kEncodeE2m1 =
    "__nv_cvt_float_to_fp4(v, __NV_E2M1, cudaRoundNearest)";
constexpr std::string_view kEncodeInt8 =
    "(unsigned char)(lowbit_to_int(v, -128, 127) & 0xFF)";

constexpr std::string_view kScaleF32 = "((const float *)scales)[s]";
constexpr std::string_view kScaleE8m0 =
    "lowbit_e8m0_value(((const unsigned char *)scales)[s])";
constexpr std::string_view kScaleUe4m3 =
    "lowbit_ue4m3_value(((const unsigned char *)scales)[s])";
constexpr std::string_view kScaleF16 =
    "__half2float(__ushort_as_half(((const unsigned short *)scales)[s]))";
constexpr std::string_view kDecodeE4m3 =
    "lowbit_half_value(__nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)code, "
    "__NV_E4M3)) * scale";
constexpr std::string_view kDecodeE5m2 =
    "lowbit_half_value(__nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)code, "
    "__NV_E5M2)) * scale";
constexpr std::string_view kDecodeE2m3 =
    "lowbit_half_value(__nv_cvt_fp6_to_halfraw((__nv_fp6_storage_t)code, "
    "__NV_E2M3)) * scale";
constexpr std::string_view kDecodeE3m2 =
    "lowbit_half_value(__nv_cvt_fp6_to_halfraw((__nv_fp6_storage_t)code, "
    "__NV_E3M2)) * scale";
constexpr std::string_view kDecodeE2m1 =
    "lowbit_half_value(__nv_cvt_fp4_to_halfraw((__nv_fp4_storage_t)code, "
    "__NV_E2M1)) * scale";
constexpr std::string_view kDecodeNvfp4 =
    "lowbit_half_value(__nv_cvt_fp4_to_halfraw((__nv_fp4_storage_t)code, "
    "__NV_E2M1)) * (scale * *globalScale)";
constexpr std::string_view kDecodeInt8 = "(float)(signed char)code * scale";
constexpr std::string_view kDecodeUint4 =
    "(float)((int)code - (int)zeros[s]) * scale";

const std::vector<SchemeRecipe> &recipes() {
  // emax (floor(log2(max))) of the MX elements: e4m3 8, e2m3 2, e3m2 4,
  // e2m1 2 (OCP MX v1.0, Table 1).
  static const std::vector<SchemeRecipe> table = {
      {"fp8_e4m3", kPerTensorKernel, kEncodeE4m3,
       "#define LOWBIT_QMAX 448.0f\n", kScaleF32, kDecodeE4m3, 0, false, true},
      {"fp8_e5m2", kPerTensorKernel, kEncodeE5m2,
       "#define LOWBIT_QMAX 57344.0f\n", kScaleF32, kDecodeE5m2, 0, false,
       true},
      {"mxfp8", kMxKernel, kEncodeE4m3, "#define LOWBIT_EMAX 8\n", kScaleE8m0,
       kDecodeE4m3, 32, false, false},
      {"mxfp6_e2m3", kMxKernel, kEncodeE2m3, "#define LOWBIT_EMAX 2\n",
       kScaleE8m0, kDecodeE2m3, 32, false, false},
      {"mxfp6_e3m2", kMxKernel, kEncodeE3m2, "#define LOWBIT_EMAX 4\n",
       kScaleE8m0, kDecodeE3m2, 32, false, false},
      {"mxfp4", kMxKernel, kEncodeE2m1, "#define LOWBIT_EMAX 2\n", kScaleE8m0,
       kDecodeE2m1, 32, true, false},
      {"nvfp4", kNvfp4Kernel, kEncodeE2m1, "", kScaleUe4m3, kDecodeNvfp4, 16,
       true, true},
      {"int4_g128", kInt4Kernel, "", "", kScaleF16, kDecodeUint4, 128, true,
       false},
      {"int8", kPerTensorKernel, kEncodeInt8, "#define LOWBIT_QMAX 127.0f\n",
       kScaleF32, kDecodeInt8, 0, false, true},
      {"int8_g64", kInt8GroupKernel, kEncodeInt8, "", kScaleF32, kDecodeInt8,
       64, false, false},
  };
  return table;
}

} // namespace

const std::vector<std::string> &referenceKernelSchemes() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> list;
    for (const SchemeRecipe &recipe : recipes())
      list.emplace_back(recipe.name);
    return list;
  }();
  return names;
}

Expected<ReferenceKernelSource>
referenceKernelSource(std::string_view scheme, std::string_view inputDtype) {
  std::string_view inputType;
  if (inputDtype == "f32")
    inputType = "float";
  else if (inputDtype == "f16")
    inputType = "__half";
  else if (inputDtype == "bf16")
    inputType = "__nv_bfloat16";
  else
    return makeError(ErrorCode::InvalidArgument,
                     "reference kernel: input dtype '" +
                         std::string(inputDtype) +
                         "' is not one of f32, f16, bf16");
  for (const SchemeRecipe &recipe : recipes()) {
    if (recipe.name != scheme)
      continue;
    ReferenceKernelSource kernel;
    kernel.scheme = std::string(scheme);
    kernel.inputDtype = std::string(inputDtype);
    kernel.groupSize = recipe.groupSize;
    kernel.needsTensorAmax = recipe.needsTensorAmax;
    std::string &source = kernel.source;
    source = "// lowbit NVRTC reference kernel: " + kernel.scheme + " from " +
             kernel.inputDtype + "\n";
    source += "#define LOWBIT_IN " + std::string(inputType) + "\n";
    source += std::string(kPrelude);
    source += "#define LOWBIT_GROUP " + std::to_string(recipe.groupSize) + "\n";
    source += std::string(recipe.extraDefines);
    if (!recipe.encode.empty())
      source +=
          "#define LOWBIT_ENCODE(v) (" + std::string(recipe.encode) + ")\n";
    source += std::string(recipe.nibble ? kStoreNibble : kStoreByte);
    source += std::string(recipe.kernel);
    source += "#define LOWBIT_SCALE_VALUE(s) (" +
              std::string(recipe.scaleValue) + ")\n";
    source += "#define LOWBIT_DEQUANT(code, scale, s) (" +
              std::string(recipe.dequant) + ")\n";
    source += std::string(kDequantizeKernel);
    return kernel;
  }
  return makeError(ErrorCode::InvalidArgument,
                   "no NVRTC reference kernel for scheme '" +
                       std::string(scheme) + "'");
}

int64_t quantizeThreads(const ReferenceKernelSource &kernel, int64_t rows,
                        int64_t cols) {
  if (kernel.groupSize == 0)
    return rows * cols;
  return rows * ((cols + kernel.groupSize - 1) / kernel.groupSize);
}

std::string cudaIncludeDirectory() {
  for (const char *variable : {"CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"})
    if (const char *root = std::getenv(variable); root && *root)
      return std::string(root) + "/include";
  return "/usr/local/cuda/include";
}

std::vector<std::string> referenceNvrtcOptions(std::string_view chip) {
  std::string computeArch(chip);
  if (computeArch.starts_with("sm_"))
    computeArch.replace(0, 3, "compute_");
  // No fast math, no flush to zero: the oracle must keep IEEE division and
  // subnormals (an e8m0 scale of 2^-127 is an f32 subnormal).
  return {"--gpu-architecture=" + computeArch,
          "--include-path=" + cudaIncludeDirectory(),
          "--std=c++17",
          "--ftz=false",
          "--prec-div=true",
          "--fmad=false"};
}

Expected<ReferenceKernelBuild>
buildReferenceKernel(const NvrtcApi &nvrtc, const NvJitLinkApi *linker,
                     const ReferenceKernelSource &kernel,
                     std::string_view chip) {
  Expected<NvrtcOutput> compiled = compileWithNvrtc(
      nvrtc, kernel.source,
      "lowbit_ref_" + kernel.scheme + "_" + kernel.inputDtype + ".cu",
      referenceNvrtcOptions(chip));
  if (!compiled)
    return std::move(compiled).takeError();
  ReferenceKernelBuild build;
  build.ptx = std::move(compiled->ptx);
  build.nvrtcLog = std::move(compiled->log);
  build.nvrtcMillis = compiled->compileMillis;
  if (!linker)
    return build;
  Expected<Cubin> cubin = linkPtx(*linker, build.ptx, chip);
  if (!cubin)
    return std::move(cubin).takeError();
  build.cubin = std::move(cubin->bytes);
  build.linkMillis = cubin->linkMillis;
  for (const KernelResources &resources : cubin->allKernels)
    if (resources.function == "lowbit_ref_quantize")
      build.quantizeResources = resources;
  return build;
}

} // namespace lowbit::runtime
