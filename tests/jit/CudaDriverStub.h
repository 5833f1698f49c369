/*===- CudaDriverStub.h - The driver stub's launch records -------*- C -*-===*
 *
 * What tests/jit/CudaDriverStub.c records per cuLaunchKernel, shared by the
 * stub (C) and the tests that read it back through its hooks (C++: the
 * StubDriver below dlopens the same library lowbit loaded).
 *
 *===----------------------------------------------------------------------===*/

#ifndef LOWBIT_TESTS_JIT_CUDADRIVERSTUB_H
#define LOWBIT_TESTS_JIT_CUDADRIVERSTUB_H

#include <stdint.h>

/* Kernel parameters one record keeps (a KV kernel's rank-4 descriptors
 * take 11 slots each). */
#define LOWBIT_STUB_MAX_PARAMS 256

typedef struct LaunchRecord {
  void *stream;
  int params;
  unsigned grid[3], block[3];
  unsigned shared;
  uint64_t values[LOWBIT_STUB_MAX_PARAMS];
  /* For a trailing [1, W] descriptor: whether its W words were all zero. */
  int trailingZero;
} LaunchRecord;

#ifdef __cplusplus
#include <dlfcn.h>

/// The stub's test hooks, from the library lowbit loaded (LOWBIT_LIBCUDA).
struct StubDriver {
  long (*count)() = nullptr;
  const LaunchRecord *(*at)(long) = nullptr;
  void (*reset)() = nullptr;
  void (*extraParams)(int) = nullptr;
  /// False when the library or a hook is missing.
  bool load(const char *path) {
    void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!library)
      return false;
    count = reinterpret_cast<long (*)()>(dlsym(library, "stub_launch_count"));
    at = reinterpret_cast<const LaunchRecord *(*)(long)>(
        dlsym(library, "stub_launch_at"));
    reset = reinterpret_cast<void (*)()>(dlsym(library, "stub_reset"));
    extraParams = reinterpret_cast<void (*)(int)>(
        dlsym(library, "stub_set_extra_params"));
    return count && at && reset && extraParams;
  }
};
#endif

#endif /* LOWBIT_TESTS_JIT_CUDADRIVERSTUB_H */
