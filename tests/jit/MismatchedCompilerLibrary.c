/*===- MismatchedCompilerLibrary.c - A compiler library of other sources ===*
 *
 * Exports the three symbols liblowbit-compiler.so exports, with a build
 * hash no lowbit has: tests/lit/cli/jit-loader-kv.test points
 * LOWBIT_COMPILER_LIBRARY at it and checks that LowbitJitLoader refuses it
 * before it reads the backend table (whose C++ types would not match).
 *
 *===----------------------------------------------------------------------===*/

#include <stddef.h>

const char *lowbit_compiler_build(void) {
  return "00000000000000000000000000000000";
}

int lowbit_compiler_run_command(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return 1;
}

/* Never called: the loader stops at the build hash. */
const void *lowbit_compiler_backend(void) { return NULL; }
