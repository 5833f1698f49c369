/*===- CApiProbe.c - lowbit.h without MLIR, for the lit test -------------===//
 *
 * An engine in miniature: a C program linked to liblowbit.so (the C API,
 * MLIR-free) that gets one kernel and describes its arguments.
 * tests/lit/cli/capi-loader.test reads the dynamic loader's log: a disk
 * hit must load neither libMLIR nor libLLVM, a miss loads the compiler
 * library found next to liblowbit.so.
 *
 *   lowbit-capi-probe SPEC TARGET
 *
 * Prints "args=N arg0=ROLE:DTYPE_CODE/BITS ... ptx=BYTES" and exits 0, or
 * "lowbit-capi-probe: error: MESSAGE" and exits 1.
 *
 *===----------------------------------------------------------------------===*/

#include "lowbit/lowbit.h"

#include <stdio.h>
#include <string.h>

static int fail(const char *message) {
  fprintf(stderr, "lowbit-capi-probe: error: %s\n", message);
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 3)
    return fail("usage: lowbit-capi-probe SPEC TARGET");
  lowbit_jit *jit = NULL;
  if (lowbit_jit_create(NULL, &jit) != LOWBIT_OK)
    return fail(lowbit_last_error());
  lowbit_kernel *kernel = NULL;
  if (lowbit_jit_get(jit, argv[1], argv[2], &kernel) != LOWBIT_OK) {
    int code = fail(lowbit_last_error());
    lowbit_jit_destroy(jit);
    return code;
  }
  size_t count = lowbit_kernel_arg_count(kernel);
  printf("args=%zu", count);
  for (size_t i = 0; i < count; ++i) {
    lowbit_arg_info info;
    if (lowbit_kernel_arg(kernel, i, 4, 64, &info) != LOWBIT_OK)
      return fail(lowbit_last_error());
    printf(" arg%zu=%d%s:%d/%d[%lld,%lld]", i, (int)info.role,
           info.is_output ? "out" : "in", (int)info.dtype.code,
           (int)info.dtype.bits, (long long)info.shape[0],
           (long long)info.shape[1]);
  }
  printf(" ptx=%zu\n", strlen(lowbit_kernel_ptx(kernel)));
  lowbit_kernel_destroy(kernel);
  lowbit_jit_destroy(jit);
  return 0;
}
