/*===- UnresolvedCompilerLibrary.c - A compiler library missing a symbol ===*
 *
 * Linked like liblowbit-compiler.so (-z now) but calling a function no
 * library defines, as a compiler library built against another libMLIR
 * would: the loader opens it with lazy binding for its dependencies
 * (runtime/jit/CompilerLoader.cpp), and -z now must still make the missing
 * symbol dlopen's error (tests/lit/cli/jit-loader-binding.test), not a
 * process killed at the first call.
 *
 *===----------------------------------------------------------------------===*/

#include <stddef.h>

void lowbit_test_symbol_no_library_defines(void);

const char *lowbit_compiler_build(void) {
  lowbit_test_symbol_no_library_defines();
  return "00000000000000000000000000000000";
}

int lowbit_compiler_run_command(int argc, char **argv) {
  (void)argc;
  (void)argv;
  lowbit_test_symbol_no_library_defines();
  return 1;
}

const void *lowbit_compiler_backend(void) { return NULL; }
