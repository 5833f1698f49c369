/* The C API (lowbit.h) from C11: known values through the reference
 * quantizer and a CPU JIT kernel, and every error path's code and message.
 * Prints "N passed, N failed" and exits non-zero on any failure. */

#include "CApiCheck.h"
#include "lowbit/lowbit.h"

#include <stdio.h>
#include <string.h>
#include <threads.h>

static const DLDataType f32 = {kDLFloat, 32, 1};
static const DLDataType u8 = {kDLUInt, 8, 1};
static const DLDataType i32 = {kDLInt, 32, 1};

/* One MXFP4 block (32 values, amax 6: e8m0 scale 2^0, code 127) whose
 * values are all exact in e2m1: 0, 0.5, 1, 1.5, 2, 3, 4, 6 are codes 0-7,
 * their negatives 8-15; nibble packing puts element 0 low. */
static float input[2][32];
static const uint8_t expectedCodes[16] = {0x10, 0x32, 0x54, 0x76, 0x98, 0xba,
                                          0xdc, 0xfe, 0x10, 0x32, 0x54, 0x76,
                                          0x98, 0xba, 0xdc, 0xfe};

static void fillInput(void) {
  static const float magnitudes[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  for (int row = 0; row < 2; ++row)
    for (int col = 0; col < 32; ++col) {
      float magnitude = magnitudes[col % 8];
      input[row][col] = (col / 8) % 2 ? -magnitude : magnitude;
    }
}

static int otherThreadSeesNoError(void *unused) {
  (void)unused;
  return strcmp(lowbit_last_error(), "") == 0 && lowbit_version()[0] != '\0';
}

static void testNames(void) {
  CHECK(strcmp(lowbit_status_name(LOWBIT_OK), "ok") == 0);
  CHECK(strcmp(lowbit_status_name(LOWBIT_ERROR_INVALID_ARGUMENT),
               "invalid-argument") == 0);
  CHECK(strcmp(lowbit_status_name(LOWBIT_ERROR_UNSUPPORTED), "unsupported") ==
        0);
  CHECK(strcmp(lowbit_status_name((lowbit_status)999), "unknown") == 0);
  CHECK(strcmp(lowbit_version(), "0.1.0") == 0);
  int sawNvfp4 = 0, sawMxfp4 = 0, sawE4m3 = 0;
  size_t schemes = 0;
  for (; lowbit_scheme_name(schemes); ++schemes) {
    sawNvfp4 |= strcmp(lowbit_scheme_name(schemes), "nvfp4") == 0;
    sawMxfp4 |= strcmp(lowbit_scheme_name(schemes), "mxfp4") == 0;
  }
  for (size_t i = 0; lowbit_format_name(i); ++i)
    sawE4m3 |= strcmp(lowbit_format_name(i), "e4m3") == 0;
  CHECK(sawNvfp4 && sawMxfp4 && sawE4m3);
  CHECK(schemes >= 10);
}

static void testLayout(void) {
  lowbit_quantized_layout layout;
  CHECK(lowbit_quantized_layout_of("nvfp4", 2, 32, &layout) == LOWBIT_OK);
  CHECK(layout.codes_shape[0] == 2 && layout.codes_shape[1] == 16);
  CHECK(layout.scales_shape[0] == 2 && layout.scales_shape[1] == 2);
  CHECK(layout.scales_dtype.code == kDLUInt && layout.scales_dtype.bits == 8);
  CHECK(!layout.has_zeros && layout.has_global_scale);
  CHECK(lowbit_quantized_layout_of("int4_g128", 4, 256, &layout) == LOWBIT_OK);
  CHECK(layout.has_zeros && layout.scales_shape[1] == 2);
  EXPECT_ERROR(lowbit_quantized_layout_of("nosuch", 2, 32, &layout),
               LOWBIT_ERROR_INVALID_ARGUMENT, "scheme 'nosuch'");
  EXPECT_ERROR(lowbit_quantized_layout_of(
                   "scheme(format=e2m1,scale=group(32;axis=1),tail=false,"
                   "type=e8m0,rule=floor,packing=nibble)",
                   2, 100, &layout),
               LOWBIT_ERROR_INVALID_ARGUMENT, "does not divide 100 columns");
  EXPECT_ERROR(lowbit_quantized_layout_of("mxfp4", -1, 32, &layout),
               LOWBIT_ERROR_INVALID_ARGUMENT, "negative size");
  EXPECT_ERROR(lowbit_quantized_layout_of("mxfp4", 2, 32, NULL),
               LOWBIT_ERROR_INVALID_ARGUMENT, "layout is NULL");
}

static void testReferenceQuantizer(void) {
  uint8_t codes[2][16], scales[2][1], zeros[2][1];
  float output[2][32], global = 0;
  int64_t inputShape[2] = {2, 32}, codesShape[2] = {2, 16},
          scalesShape[2] = {2, 1}, flatShape[1] = {64}, oneShape[1] = {1};
  DLTensor in = tensor(input, f32, inputShape, 2);
  DLTensor c = tensor(codes, u8, codesShape, 2);
  DLTensor s = tensor(scales, u8, scalesShape, 2);
  DLTensor out = tensor(output, f32, inputShape, 2);
  memset(codes, 0xee, sizeof codes);
  CHECK(lowbit_quantize("mxfp4", &in, &c, &s, NULL, NULL, 0) == LOWBIT_OK);
  CHECK(strcmp(lowbit_last_error(), "") == 0);
  CHECK(memcmp(codes[0], expectedCodes, 16) == 0);
  CHECK(memcmp(codes[1], expectedCodes, 16) == 0);
  CHECK(scales[0][0] == 127 && scales[1][0] == 127);
  CHECK(lowbit_dequantize("mxfp4", &c, &s, NULL, NULL, &out) == LOWBIT_OK);
  CHECK(memcmp(output, input, sizeof input) == 0);

  /* Static scales: the given scale (2^1, code 128) halves every code's
   * value: 6 -> 3 (code 5), 1 -> 0.5 (code 1). */
  scales[0][0] = scales[1][0] = 128;
  CHECK(lowbit_quantize("mxfp4", &in, &c, &s, NULL, NULL,
                        LOWBIT_QUANTIZE_STATIC_SCALES) == LOWBIT_OK);
  CHECK(codes[0][3] == (0x5 << 4 | 0x4) && scales[0][0] == 128);

  /* A strided input: every other row of a [4, 32] buffer. */
  float strided[4][32];
  for (int row = 0; row < 4; ++row)
    memcpy(strided[row], input[row / 2], sizeof input[0]);
  int64_t stridedShape[2] = {2, 32}, strides[2] = {64, 1};
  DLTensor view = tensor(strided, f32, stridedShape, 2);
  view.strides = strides;
  CHECK(lowbit_quantize("mxfp4", &view, &c, &s, NULL, NULL, 0) == LOWBIT_OK);
  CHECK(memcmp(codes[1], expectedCodes, 16) == 0);

  /* Error paths: each names what is wrong, and nothing is written. */
  memset(codes, 0xee, sizeof codes);
  EXPECT_ERROR(lowbit_quantize(NULL, &in, &c, &s, NULL, NULL, 0),
               LOWBIT_ERROR_INVALID_ARGUMENT, "scheme is NULL");
  EXPECT_ERROR(lowbit_quantize("mxfp9", &in, &c, &s, NULL, NULL, 0),
               LOWBIT_ERROR_INVALID_ARGUMENT, "scheme 'mxfp9'");
  EXPECT_ERROR(lowbit_quantize("mxfp4", NULL, &c, &s, NULL, NULL, 0),
               LOWBIT_ERROR_INVALID_ARGUMENT, "input is NULL");
  DLTensor wrongDtype = tensor(input, i32, inputShape, 2);
  EXPECT_ERROR(lowbit_quantize("mxfp4", &wrongDtype, &c, &s, NULL, NULL, 0),
               LOWBIT_ERROR_INVALID_ARGUMENT,
               "input has dtype int32, expected float32, float16 or bfloat16");
  /* Every DLPack code is named as NumPy and PyTorch name it. */
  static const DLDataType c64 = {kDLComplex, 64, 1};
  DLTensor complexInput = tensor(input, c64, inputShape, 2);
  EXPECT_ERROR(lowbit_quantize("mxfp4", &complexInput, &c, &s, NULL, NULL, 0),
               LOWBIT_ERROR_INVALID_ARGUMENT,
               "input has dtype complex64, expected float32");
  static const DLDataType e4m3 = {kDLFloat8_e4m3fn, 8, 1};
  DLTensor fp8Input = tensor(input, e4m3, inputShape, 2);
  EXPECT_ERROR(lowbit_quantize("mxfp4", &fp8Input, &c, &s, NULL, NULL, 0),
               LOWBIT_ERROR_INVALID_ARGUMENT,
               "input has dtype float8_e4m3fn, expected float32");
  DLTensor flatCodes = tensor(codes, u8, flatShape, 1);
  EXPECT_ERROR(lowbit_quantize("mxfp4", &in, &flatCodes, &s, NULL, NULL, 0),
               LOWBIT_ERROR_INVALID_ARGUMENT,
               "codes has shape [64], expected [2, 16]");
  DLTensor f32Scales = tensor(scales, f32, scalesShape, 2);
  EXPECT_ERROR(lowbit_quantize("mxfp4", &in, &c, &f32Scales, NULL, NULL, 0),
               LOWBIT_ERROR_INVALID_ARGUMENT,
               "scales has dtype float32, expected uint8");
  DLTensor z = tensor(zeros, u8, scalesShape, 2);
  EXPECT_ERROR(lowbit_quantize("mxfp4", &in, &c, &s, &z, NULL, 0),
               LOWBIT_ERROR_INVALID_ARGUMENT, "the scheme has no zero point");
  DLTensor g = tensor(&global, f32, oneShape, 1);
  EXPECT_ERROR(lowbit_quantize("mxfp4", &in, &c, &s, NULL, &g, 0),
               LOWBIT_ERROR_INVALID_ARGUMENT, "the scheme has no global scale");
  EXPECT_ERROR(lowbit_quantize("mxfp4", &in, &c, &s, NULL, NULL,
                               LOWBIT_QUANTIZE_GIVEN_GLOBAL),
               LOWBIT_ERROR_INVALID_ARGUMENT, "the scheme has no global scale");
  EXPECT_ERROR(lowbit_quantize("mxfp4", &in, &c, &s, NULL, NULL, 8),
               LOWBIT_ERROR_INVALID_ARGUMENT, "unknown flags 8");
  EXPECT_ERROR(lowbit_quantize("nvfp4", &in, &c, &s, NULL, NULL, 0),
               LOWBIT_ERROR_INVALID_ARGUMENT,
               "scales has shape [2, 1], expected [2, 2]");
  DLTensor onDevice = in;
  onDevice.device.device_type = kDLCUDA;
  EXPECT_ERROR(lowbit_quantize("mxfp4", &onDevice, &c, &s, NULL, NULL, 0),
               LOWBIT_ERROR_UNSUPPORTED, "not supported yet");
  CHECK(codes[0][0] == 0xee);

  /* A NaN scale (e8m0 code 255) cannot be dequantized. */
  scales[0][0] = 255;
  EXPECT_ERROR(lowbit_dequantize("mxfp4", &c, &s, NULL, NULL, &out),
               LOWBIT_ERROR_INVALID_ARGUMENT, "scale");
  DLTensor intOut = tensor(output, i32, inputShape, 2);
  EXPECT_ERROR(lowbit_dequantize("mxfp4", &c, &s, NULL, NULL, &intOut),
               LOWBIT_ERROR_INVALID_ARGUMENT, "output has dtype int32");
  EXPECT_ERROR(lowbit_dequantize("nvfp4", &c, &s, NULL, NULL, &out),
               LOWBIT_ERROR_INVALID_ARGUMENT, "scales has shape");
}

static void testJit(void) {
  lowbit_jit *jit = NULL;
  lowbit_kernel *kernel = NULL;
  EXPECT_ERROR(lowbit_jit_create(NULL, NULL), LOWBIT_ERROR_INVALID_ARGUMENT,
               "jit is NULL");
  lowbit_jit_options options = {NULL, "sometimes", 0};
  EXPECT_ERROR(lowbit_jit_create(&options, &jit), LOWBIT_ERROR_INVALID_ARGUMENT,
               "cache_mode 'sometimes'");
  CHECK(jit == NULL);
  options.cache_mode = "off";
  CHECK(lowbit_jit_create(&options, &jit) == LOWBIT_OK && jit != NULL);
  if (!jit)
    return;

  EXPECT_ERROR(lowbit_jit_get(jit, "quantize mxfp9", "cpu", &kernel),
               LOWBIT_ERROR_INVALID_ARGUMENT, "kernel spec");
  EXPECT_ERROR(lowbit_jit_get(jit, "quantize mxfp4", "sm_1", &kernel),
               LOWBIT_ERROR_INVALID_ARGUMENT, "target 'sm_1'");
  EXPECT_ERROR(lowbit_jit_get(jit, NULL, "cpu", &kernel),
               LOWBIT_ERROR_INVALID_ARGUMENT, "spec is NULL");
  CHECK(kernel == NULL);

  /* mxfp4 dynamic quantize on the CPU: (input, codes, scales). */
  CHECK(lowbit_jit_get(jit, "quantize mxfp4 dynamic", "cpu", &kernel) ==
        LOWBIT_OK);
  if (!kernel) {
    lowbit_jit_destroy(jit);
    return;
  }
  CHECK(strstr(lowbit_kernel_spec(kernel), "quantize mxfp4") != NULL);
  CHECK(strcmp(lowbit_kernel_ptx(kernel), "") == 0);
  CHECK(lowbit_kernel_arg_count(kernel) == 3);
  lowbit_arg_info info;
  CHECK(lowbit_kernel_arg(kernel, 1, 2, 32, &info) == LOWBIT_OK);
  CHECK(info.role == LOWBIT_ARG_CODES && info.is_output && info.shape[0] == 2 &&
        info.shape[1] == 16 && info.dtype.bits == 8);
  CHECK(lowbit_kernel_arg(kernel, 2, 2, 32, &info) == LOWBIT_OK);
  CHECK(info.role == LOWBIT_ARG_SCALES && info.shape[1] == 1);
  EXPECT_ERROR(lowbit_kernel_arg(kernel, 3, 2, 32, &info),
               LOWBIT_ERROR_INVALID_ARGUMENT, "the kernel takes 3 arguments");

  uint8_t codes[2][16], scales[2][1];
  memset(codes, 0xee, sizeof codes);
  memset(scales, 0xee, sizeof scales);
  int64_t inputShape[2] = {2, 32}, codesShape[2] = {2, 16},
          scalesShape[2] = {2, 1}, wrongShape[2] = {2, 2}, strides[2] = {32, 2};
  DLTensor args[3] = {tensor(input, f32, inputShape, 2),
                      tensor(codes, u8, codesShape, 2),
                      tensor(scales, u8, scalesShape, 2)};
  CHECK(lowbit_kernel_run(kernel, args, 3) == LOWBIT_OK);
  CHECK(memcmp(codes[0], expectedCodes, 16) == 0);
  CHECK(memcmp(codes[1], expectedCodes, 16) == 0);
  CHECK(scales[0][0] == 127 && scales[1][0] == 127);

  EXPECT_ERROR(lowbit_kernel_run(kernel, args, 2),
               LOWBIT_ERROR_INVALID_ARGUMENT, "takes 3 arguments, got 2");
  EXPECT_ERROR(lowbit_kernel_run(NULL, args, 3), LOWBIT_ERROR_INVALID_ARGUMENT,
               "kernel is NULL");
  DLTensor bad[3] = {args[0], args[1], args[2]};
  bad[1].dtype = i32;
  EXPECT_ERROR(lowbit_kernel_run(kernel, bad, 3), LOWBIT_ERROR_INVALID_ARGUMENT,
               "argument 1 (codes) has dtype int32, expected uint8");
  bad[1] = args[1];
  bad[2].shape = wrongShape;
  EXPECT_ERROR(lowbit_kernel_run(kernel, bad, 3), LOWBIT_ERROR_INVALID_ARGUMENT,
               "argument 2 (scales) has shape [2, 2], expected [2, 1]");
  bad[2] = args[2];
  bad[0].strides = strides;
  EXPECT_ERROR(lowbit_kernel_run(kernel, bad, 3), LOWBIT_ERROR_INVALID_ARGUMENT,
               "compact row-major");
  bad[0] = args[0];
  bad[0].data = NULL;
  EXPECT_ERROR(lowbit_kernel_run(kernel, bad, 3), LOWBIT_ERROR_INVALID_ARGUMENT,
               "NULL data");
  bad[0] = args[0];
  bad[1].device.device_type = kDLCUDA;
  EXPECT_ERROR(lowbit_kernel_run(kernel, bad, 3), LOWBIT_ERROR_INVALID_ARGUMENT,
               "lowbit_kernel_run takes kDLCPU tensors");

  /* launch() is for GPU kernels and CUDA tensors. */
  EXPECT_ERROR(lowbit_kernel_launch(kernel, NULL, args, 3),
               LOWBIT_ERROR_INVALID_ARGUMENT,
               "lowbit_kernel_launch takes kDLCUDA tensors");
  DLTensor device[3] = {args[0], args[1], args[2]};
  for (int i = 0; i < 3; ++i)
    device[i].device.device_type = kDLCUDA;
  EXPECT_ERROR(lowbit_kernel_launch(kernel, NULL, device, 3),
               LOWBIT_ERROR_INVALID_ARGUMENT, "launch() is for GPU kernels");
  device[2].device.device_id = 1;
  EXPECT_ERROR(lowbit_kernel_launch(kernel, NULL, device, 3),
               LOWBIT_ERROR_UNSUPPORTED, "device 0");
  lowbit_kernel_destroy(kernel);

  /* A GPU kernel compiles to PTX without a GPU; launching it needs the
   * driver, which the test disables (LOWBIT_DISABLE_CUDA=1). */
  kernel = NULL;
  CHECK(lowbit_jit_get(jit, "quantize fp8_e4m3 dynamic", "sm_90a", &kernel) ==
        LOWBIT_OK);
  if (kernel) {
    CHECK(strstr(lowbit_kernel_ptx(kernel), ".target sm_90a") != NULL);
    float one[2][32];
    uint8_t e4m3[2][32];
    float scale = 0;
    int64_t valueShape[2] = {2, 32}, scaleShape[2] = {1, 1};
    DLTensor gpuArgs[3] = {tensor(one, f32, valueShape, 2),
                           tensor(e4m3, u8, valueShape, 2),
                           tensor(&scale, f32, scaleShape, 2)};
    for (int i = 0; i < 3; ++i)
      gpuArgs[i].device.device_type = kDLCUDA;
    EXPECT_ERROR(lowbit_kernel_launch(kernel, NULL, gpuArgs, 3),
                 LOWBIT_ERROR_LIBRARY_NOT_FOUND, "");
    lowbit_kernel_destroy(kernel);
  }
  lowbit_jit_destroy(jit);

  /* The last error is per thread: another thread starts with none. */
  EXPECT_ERROR(lowbit_jit_create(NULL, NULL), LOWBIT_ERROR_INVALID_ARGUMENT,
               "jit is NULL");
  thrd_t thread;
  int result = 0;
  CHECK(thrd_create(&thread, otherThreadSeesNoError, NULL) == thrd_success);
  CHECK(thrd_join(thread, &result) == thrd_success && result == 1);
  CHECK(strcmp(lowbit_last_error(), "jit is NULL") == 0);
}

int main(void) {
  fillInput();
  testNames();
  testLayout();
  testReferenceQuantizer();
  testJit();
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
