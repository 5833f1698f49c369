//===- FuzzCheck.h - Property checks inside fuzz targets --------*- C++ -*-===//
//
// A fuzz target checks more than "no crash": what a parser accepts must
// print and read back to the same value. A broken property is a finding,
// so it aborts with a message (libFuzzer saves the input as a crash).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_FUZZ_FUZZCHECK_H
#define LOWBIT_FUZZ_FUZZCHECK_H

#include <cstdio>
#include <cstdlib>

#define LOWBIT_FUZZ_CHECK(condition, what)                                     \
  do {                                                                         \
    if (!(condition)) {                                                        \
      std::fprintf(stderr, "fuzz property broken: %s (%s:%d)\n", what,         \
                   __FILE__, __LINE__);                                        \
      std::abort();                                                            \
    }                                                                          \
  } while (false)

#endif // LOWBIT_FUZZ_FUZZCHECK_H
