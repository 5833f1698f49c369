/* An engine using the installed C API (lib/liblowbit.so, MLIR-free): gets
 * the kernel named on the command line for sm_90a (compiled by the
 * installed compiler library on a miss, from the disk cache on a hit) and
 * prints its argument count and PTX size. */
#include "lowbit/lowbit.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  lowbit_jit *jit = NULL;
  lowbit_kernel *kernel = NULL;
  if (argc != 2 || lowbit_jit_create(NULL, &jit) != LOWBIT_OK ||
      lowbit_jit_get(jit, argv[1], "sm_90a", &kernel) != LOWBIT_OK) {
    fprintf(stderr, "capi_consumer: %s\n",
            argc != 2 ? "usage: capi_consumer SPEC" : lowbit_last_error());
    return 1;
  }
  printf("capi_consumer: args %zu ptx %zu\n", lowbit_kernel_arg_count(kernel),
         strlen(lowbit_kernel_ptx(kernel)));
  lowbit_kernel_destroy(kernel);
  lowbit_jit_destroy(jit);
  return 0;
}
