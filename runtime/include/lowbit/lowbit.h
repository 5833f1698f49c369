/*===- lowbit.h - lowbit's C API (C11) ---------------------------*- C -*-===*
 *
 * A small, stable C interface over lowbit::Jit and the reference quantizer,
 * on DLPack tensors (dlpack/dlpack.h, v1.1). docs/embedding.md shows it in
 * use.
 *
 * Errors. Every function that can fail returns a lowbit_status: LOWBIT_OK
 * (0) or an error code. The message of the last call on the calling thread
 * is in lowbit_last_error(): a thread-local string, "" after a call that
 * succeeded, valid until the next lowbit call on that thread. Nothing here
 * throws, exits or aborts, and an output pointer is written only on
 * success.
 *
 * Tensors. lowbit's tensors are 2-D [rows, cols], row-major. A kernel's
 * arguments follow docs/kernel-abi.md: each DLTensor is 2-D with the shape
 * lowbit_kernel_arg() gives (a [1, 1] argument may be any tensor with one
 * element), its dtype matches, and it is compact row-major (strides NULL or
 * {cols, 1}); byte_offset is honoured. lowbit_quantize and
 * lowbit_dequantize also take strided tensors and view an N-D value tensor
 * as [product of the leading sizes, last size].
 *
 *===----------------------------------------------------------------------===*/

#ifndef LOWBIT_LOWBIT_H
#define LOWBIT_LOWBIT_H

#include "dlpack/dlpack.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LOWBIT_C_API_VERSION 3

/* The error codes: lowbit::ErrorCode (lowbit/Expected.h) plus two for
 * failures of the C boundary itself. */
typedef enum lowbit_status {
  LOWBIT_OK = 0,
  LOWBIT_ERROR_INVALID_ARGUMENT = 1,
  LOWBIT_ERROR_LIBRARY_NOT_FOUND = 2, /* libcuda, NVRTC or nvJitLink */
  LOWBIT_ERROR_SYMBOL_NOT_FOUND = 3,
  LOWBIT_ERROR_NO_DEVICE = 4,
  LOWBIT_ERROR_CUDA = 5,
  LOWBIT_ERROR_COMPILE_FAILED = 6,
  LOWBIT_ERROR_LINK_FAILED = 7,
  LOWBIT_ERROR_CACHE_MISS = 8, /* LOWBIT_CACHE=must-hit */
  LOWBIT_ERROR_CORRUPT_ENTRY = 9,
  LOWBIT_ERROR_IO = 10,
  LOWBIT_ERROR_UNSUPPORTED = 11, /* valid, but not implemented yet */
  LOWBIT_ERROR_OUT_OF_MEMORY = 12,
  LOWBIT_ERROR_INTERNAL = 13 /* a bug in lowbit: please report it */
} lowbit_status;

/* "ok", "invalid-argument", ... ("unknown" for a value not listed). */
const char *lowbit_status_name(lowbit_status status);
/* The message of this thread's last lowbit call ("" if it succeeded). */
const char *lowbit_last_error(void);
/* "0.1.0". */
const char *lowbit_version(void);

/* Opaque handles. A kernel may outlive the jit that made it; both may be
 * used from many threads at once. */
typedef struct lowbit_jit lowbit_jit;
typedef struct lowbit_kernel lowbit_kernel;

typedef struct lowbit_jit_options {
  /* The disk cache directory; NULL: LOWBIT_CACHE_DIR, else the default. */
  const char *cache_directory;
  /* "on", "readonly", "off" or "must-hit"; NULL: LOWBIT_CACHE. */
  const char *cache_mode;
  /* Entries each in-memory cache keeps, least recently used out first
   * (lowbit::JitOptions::memoryCapacity); 0: the default (512). Added in
   * version 2. */
  size_t memory_capacity;
} lowbit_jit_options;

/* `options` may be NULL (everything from the environment). */
lowbit_status lowbit_jit_create(const lowbit_jit_options *options,
                                lowbit_jit **jit);
/* NULL is ignored. */
void lowbit_jit_destroy(lowbit_jit *jit);

/* The kernel of `spec` (the one-line kernel spec, "quantize mxfp4 dynamic")
 * for `target` ("cpu", "sm_90a", "sm_89+ptx81"), compiled on first request
 * or found in the cache. Free it with lowbit_kernel_destroy. */
lowbit_status lowbit_jit_get(lowbit_jit *jit, const char *spec,
                             const char *target, lowbit_kernel **kernel);
void lowbit_kernel_destroy(lowbit_kernel *kernel);

/* One argument of a kernel, in docs/kernel-abi.md's order. */
typedef enum lowbit_arg_role {
  LOWBIT_ARG_INPUT = 0,
  LOWBIT_ARG_SCALES = 1,
  LOWBIT_ARG_ZEROS = 2,
  LOWBIT_ARG_GLOBAL = 3,
  LOWBIT_ARG_CODES = 4,
  LOWBIT_ARG_OUTPUT = 5
} lowbit_arg_role;

typedef struct lowbit_arg_info {
  lowbit_arg_role role;
  int is_output;    /* nonzero: written by the kernel */
  DLDataType dtype; /* f32/f16/bf16 values and scales; uint8 bytes */
  int64_t shape[2]; /* for the rows x cols given to lowbit_kernel_arg */
} lowbit_arg_info;

/* The kernel's signature (lowbit::Kernel::signature): its argument count,
 * and argument `index` for a [rows, cols] tensor. A GPU kernel's workspace
 * is not an argument: launch passes it. */
size_t lowbit_kernel_arg_count(const lowbit_kernel *kernel);
/* Argument `index` of the kernel for a [rows, cols] tensor. */
lowbit_status lowbit_kernel_arg(const lowbit_kernel *kernel, size_t index,
                                int64_t rows, int64_t cols,
                                lowbit_arg_info *info);
/* The canonical spec text of the kernel (lives as long as the kernel). */
const char *lowbit_kernel_spec(const lowbit_kernel *kernel);
/* The PTX of a GPU kernel ("" for a CPU kernel). */
const char *lowbit_kernel_ptx(const lowbit_kernel *kernel);

/* Runs a CPU kernel on kDLCPU tensors, synchronously. rows and cols come
 * from the input (quantize) or the output (dequantize). */
lowbit_status lowbit_kernel_run(const lowbit_kernel *kernel,
                                const DLTensor *args, size_t arg_count);
/* Launches a GPU kernel on kDLCUDA tensors of device 0 on `stream` (a
 * CUstream; NULL: the default stream). Asynchronous. */
lowbit_status lowbit_kernel_launch(const lowbit_kernel *kernel, void *stream,
                                   const DLTensor *args, size_t arg_count);

/* KV-cache kernels (added in version 3; docs/embedding.md, "KV-cache
 * kernels"): kv_append, kv_dequantize, kivi_append, kivi_dequantize,
 * kv_attend and kivi_attend, through the same jit and caches. Their
 * tensors are N-D (rank up to LOWBIT_KV_MAX_RANK), compact row-major, with
 * the shapes lowbit_kv_kernel_param describes: a static size, or a size
 * the call fixes (negative in `shape`, the same negative value wherever
 * the same size must appear). */
typedef struct lowbit_kv_kernel lowbit_kv_kernel;

#define LOWBIT_KV_MAX_RANK 8

/* `spec`: the one-line KV spec ("kv_append kv_int8_g64 heads=8
 * head_dim=128", docs/kv-kernels.md, docs/decode-attention.md). */
lowbit_status lowbit_jit_get_kv(lowbit_jit *jit, const char *spec,
                                const char *target, lowbit_kv_kernel **kernel);
void lowbit_kv_kernel_destroy(lowbit_kv_kernel *kernel);

typedef struct lowbit_kv_param_info {
  const char *name; /* "input", "codes", ...; lives as long as the kernel */
  DLDataType dtype; /* float32/16, bfloat16, int8 (codes) or int32 */
  int is_output;    /* nonzero: written (in place, or whole) */
  int32_t ndim;
  /* >= 0: static; < 0: fixed by the call, named by dim_names. */
  int64_t shape[LOWBIT_KV_MAX_RANK];
  /* "" for a static size, else "batch", "new_tokens", "cache_tokens",
   * "pages", "max_blocks", "group_rows", "splits", "query_rows",
   * "cache_rows" or "partial_rows". */
  const char *dim_names[LOWBIT_KV_MAX_RANK];
} lowbit_kv_param_info;

size_t lowbit_kv_kernel_param_count(const lowbit_kv_kernel *kernel);
lowbit_status lowbit_kv_kernel_param(const lowbit_kv_kernel *kernel,
                                     size_t index, lowbit_kv_param_info *info);
/* The canonical spec text; the PTX ("" for a CPU kernel). */
const char *lowbit_kv_kernel_spec(const lowbit_kv_kernel *kernel);
const char *lowbit_kv_kernel_ptx(const lowbit_kv_kernel *kernel);

/* Runs a CPU kernel on kDLCPU tensors, synchronously. */
lowbit_status lowbit_kv_kernel_run(const lowbit_kv_kernel *kernel,
                                   const DLTensor *args, size_t arg_count);
/* Launches a GPU kernel on kDLCUDA tensors of device 0 on `stream`.
 * Asynchronous; the tensors' contents (positions, lengths, block tables)
 * are the caller's to keep in range. */
lowbit_status lowbit_kv_kernel_launch(const lowbit_kv_kernel *kernel,
                                      void *stream, const DLTensor *args,
                                      size_t arg_count);

/* The reference quantizer (format/Quantize.h) on host tensors. */

/* What a scheme's quantized tensor is made of, for a [rows, cols] input. */
typedef struct lowbit_quantized_layout {
  int64_t codes_shape[2]; /* uint8 */
  int64_t scales_shape[2];
  DLDataType scales_dtype; /* float32, float16, bfloat16 or uint8 codes */
  int has_zeros;           /* uint8 zero points, scales_shape */
  int has_global_scale;    /* one float32 */
} lowbit_quantized_layout;

/* `scheme`: a named scheme ("nvfp4") or the compact scheme(...) form of
 * docs/formats.md. */
lowbit_status lowbit_quantized_layout_of(const char *scheme, int64_t rows,
                                         int64_t cols,
                                         lowbit_quantized_layout *layout);

enum {
  /* scales (and zeros, global_scale) are read, not computed: static mode. */
  LOWBIT_QUANTIZE_STATIC_SCALES = 1,
  /* A dynamic scheme's global scale is read from global_scale. */
  LOWBIT_QUANTIZE_GIVEN_GLOBAL = 2
};

/* Quantizes `input` (float32, float16 or bfloat16) with `scheme`. codes,
 * scales, zeros and global_scale have the layout's shapes and dtypes (the
 * global scale: any one-element tensor); zeros and global_scale are NULL
 * where the scheme has none. `flags`: LOWBIT_QUANTIZE_*. All tensors are on
 * kDLCPU; a device tensor is LOWBIT_ERROR_UNSUPPORTED. */
lowbit_status lowbit_quantize(const char *scheme, const DLTensor *input,
                              const DLTensor *codes, const DLTensor *scales,
                              const DLTensor *zeros,
                              const DLTensor *global_scale, unsigned flags);
/* The inverse: writes `output` (float32, float16 or bfloat16; its shape
 * gives rows and cols). */
lowbit_status lowbit_dequantize(const char *scheme, const DLTensor *codes,
                                const DLTensor *scales, const DLTensor *zeros,
                                const DLTensor *global_scale,
                                const DLTensor *output);

/* The names of the named schemes and of the element formats, one per
 * index; NULL past the end. */
const char *lowbit_scheme_name(size_t index);
const char *lowbit_format_name(size_t index);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LOWBIT_LOWBIT_H */
