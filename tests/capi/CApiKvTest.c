/* The C API's KV-cache kernels (lowbit.h, version 3) from C11: an FP8
 * append of values e4m3 holds exactly, read back by dequantize, with the
 * codes e4m3 defines; the parameters' description; every error path's
 * code and message. Through LowbitC, so the compiler is the dlopen'd
 * library (LowbitJitLoader). Prints "N passed, N failed". */

#include "CApiCheck.h"
#include "lowbit/lowbit.h"

#include <stdio.h>
#include <string.h>

static const DLDataType f32 = {kDLFloat, 32, 1};
static const DLDataType f16 = {kDLFloat, 16, 1};
static const DLDataType i8 = {kDLInt, 8, 1};
static const DLDataType i32 = {kDLInt, 32, 1};

#define APPEND "kv_append kv_fp8_e4m3 from=f16 heads=1 head_dim=4"
#define DEQUANTIZE "kv_dequantize kv_fp8_e4m3 to=f32 heads=1 head_dim=4"

/* Two tokens of 4 values, each exact in f16 and e4m3 (scale 1). */
static const uint16_t halves[8] = {0x3C00, 0x3800, 0xC000, 0x0000,
                                   0x4400, 0xB800, 0x3E00, 0x5F00};
static const float values[8] = {1, 0.5f, -2, 0, 4, -0.5f, 1.5f, 448};
/* e4m3: 1 = 0x38, 0.5 = 0x30, -2 = 0xC0, 4 = 0x48, 1.5 = 0x3C, 448 = 0x7E. */
static const uint8_t expectedCodes[8] = {0x38, 0x30, 0xC0, 0x00,
                                         0x48, 0xB0, 0x3C, 0x7E};

static void testParams(lowbit_kv_kernel *append) {
  CHECK(lowbit_kv_kernel_param_count(append) == 4);
  lowbit_kv_param_info info;
  CHECK(lowbit_kv_kernel_param(append, 1, &info) == LOWBIT_OK);
  CHECK(strcmp(info.name, "codes") == 0);
  CHECK(info.dtype.code == kDLInt && info.dtype.bits == 8);
  CHECK(info.is_output);
  CHECK(info.ndim == 4);
  CHECK(info.shape[0] < 0 && strcmp(info.dim_names[0], "batch") == 0);
  CHECK(info.shape[1] == 1 && strcmp(info.dim_names[1], "") == 0);
  CHECK(strcmp(info.dim_names[2], "cache_tokens") == 0);
  CHECK(info.shape[3] == 4);
  CHECK(lowbit_kv_kernel_param(append, 0, &info) == LOWBIT_OK);
  CHECK(strcmp(info.name, "input") == 0 && !info.is_output);
  CHECK(info.dtype.code == kDLFloat && info.dtype.bits == 16);
  CHECK(strcmp(info.dim_names[2], "new_tokens") == 0);
  EXPECT_ERROR(lowbit_kv_kernel_param(append, 4, &info),
               LOWBIT_ERROR_INVALID_ARGUMENT, "parameter 4 of 4");
  CHECK(strncmp(lowbit_kv_kernel_spec(append), "kv_append kv_fp8_e4m3", 21) ==
        0);
  CHECK(strcmp(lowbit_kv_kernel_ptx(append), "") == 0);
}

int main(int argc, char **argv) {
  /* --stub: libcuda is tests/jit's driver stub (LOWBIT_LIBCUDA), so a
   * launch goes through; else the driver is disabled. */
  int stub = argc > 1 && strcmp(argv[1], "--stub") == 0;
  lowbit_jit_options options = {NULL, "off", 0};
  lowbit_jit *jit = NULL;
  CHECK(lowbit_jit_create(&options, &jit) == LOWBIT_OK);
  lowbit_kv_kernel *append = NULL, *dequantize = NULL;
  CHECK(lowbit_jit_get_kv(jit, APPEND, "cpu", &append) == LOWBIT_OK);
  CHECK(lowbit_jit_get_kv(jit, DEQUANTIZE, "cpu", &dequantize) == LOWBIT_OK);
  if (!append || !dequantize) {
    fprintf(stderr, "%d passed, %d failed\n", passed, failed);
    return 1;
  }
  testParams(append);

  /* Append the two tokens at position 1 of a 4-token cache. */
  uint16_t input[8];
  memcpy(input, halves, sizeof input);
  int8_t codes[16] = {0};
  float scale = 1.0f;
  int32_t position = 1;
  int64_t inputShape[4] = {1, 1, 2, 4}, cacheShape[4] = {1, 1, 4, 4};
  int64_t scaleShape[1] = {1}, batchShape[1] = {1};
  DLTensor args[4] = {tensor(input, f16, inputShape, 4),
                      tensor(codes, i8, cacheShape, 4),
                      tensor(&scale, f32, scaleShape, 1),
                      tensor(&position, i32, batchShape, 1)};
  CHECK(lowbit_kv_kernel_run(append, args, 4) == LOWBIT_OK);
  CHECK(memcmp(codes + 4, expectedCodes, 8) == 0);
  CHECK(codes[0] == 0 && codes[12] == 0);

  /* Read them back: the same values, exactly. */
  float output[8] = {0};
  int64_t outputShape[4] = {1, 1, 2, 4};
  DLTensor readArgs[4] = {tensor(codes, i8, cacheShape, 4),
                          tensor(&scale, f32, scaleShape, 1),
                          tensor(&position, i32, batchShape, 1),
                          tensor(output, f32, outputShape, 4)};
  CHECK(lowbit_kv_kernel_run(dequantize, readArgs, 4) == LOWBIT_OK);
  CHECK(memcmp(output, values, sizeof values) == 0);

  /* Errors name the argument. */
  EXPECT_ERROR(lowbit_kv_kernel_run(append, args, 3),
               LOWBIT_ERROR_INVALID_ARGUMENT, "takes 4 arguments, got 3");
  DLTensor bad = args[1];
  args[1].dtype = f32;
  EXPECT_ERROR(lowbit_kv_kernel_run(append, args, 4),
               LOWBIT_ERROR_INVALID_ARGUMENT,
               "argument 1 (codes) has dtype float32, expected int8");
  args[1] = bad;
  int64_t wideShape[4] = {1, 1, 4, 5};
  args[1].shape = wideShape;
  EXPECT_ERROR(lowbit_kv_kernel_run(append, args, 4),
               LOWBIT_ERROR_INVALID_ARGUMENT,
               "buffer 1 (codes) dimension 3 is 5; the kernel takes 4");
  args[1] = bad;
  int64_t strides[4] = {16, 16, 8, 1};
  args[1].strides = strides;
  EXPECT_ERROR(lowbit_kv_kernel_run(append, args, 4),
               LOWBIT_ERROR_INVALID_ARGUMENT, "compact row-major");
  args[1] = bad;
  EXPECT_ERROR(lowbit_kv_kernel_launch(append, NULL, args, 4),
               LOWBIT_ERROR_INVALID_ARGUMENT,
               "lowbit_kv_kernel_launch takes kDLCUDA tensors");
  lowbit_kv_kernel *unknown = NULL;
  EXPECT_ERROR(lowbit_jit_get_kv(jit, "kv_shuffle x", "cpu", &unknown),
               LOWBIT_ERROR_INVALID_ARGUMENT,
               "'kv_shuffle' is not a KV kernel");
  EXPECT_ERROR(lowbit_jit_get_kv(jit, APPEND, "sm_1", &unknown),
               LOWBIT_ERROR_INVALID_ARGUMENT, "target 'sm_1'");
  EXPECT_ERROR(lowbit_jit_get_kv(jit, NULL, "cpu", &unknown),
               LOWBIT_ERROR_INVALID_ARGUMENT, "spec is NULL");
  CHECK(unknown == NULL);

  /* A GPU kernel compiles to PTX without a GPU; launching needs the
   * driver: disabled (LOWBIT_DISABLE_CUDA=1), or the stub (--stub). */
  lowbit_kv_kernel *gpu = NULL;
  CHECK(lowbit_jit_get_kv(jit, APPEND, "sm_90a", &gpu) == LOWBIT_OK);
  if (gpu) {
    CHECK(strstr(lowbit_kv_kernel_ptx(gpu), ".target sm_90a") != NULL);
    EXPECT_ERROR(lowbit_kv_kernel_run(gpu, args, 4),
                 LOWBIT_ERROR_INVALID_ARGUMENT, "use launch()");
    DLTensor device[4];
    for (int i = 0; i < 4; ++i) {
      device[i] = args[i];
      device[i].device.device_type = kDLCUDA;
    }
    if (stub)
      CHECK(lowbit_kv_kernel_launch(gpu, NULL, device, 4) == LOWBIT_OK);
    else
      EXPECT_ERROR(lowbit_kv_kernel_launch(gpu, NULL, device, 4),
                   LOWBIT_ERROR_LIBRARY_NOT_FOUND, "");
    device[3].device.device_id = 1;
    EXPECT_ERROR(lowbit_kv_kernel_launch(gpu, NULL, device, 4),
                 LOWBIT_ERROR_UNSUPPORTED, "device 0");
    lowbit_kv_kernel_destroy(gpu);
  }
  lowbit_kv_kernel_destroy(append);
  lowbit_kv_kernel_destroy(dequantize);
  lowbit_jit_destroy(jit);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
