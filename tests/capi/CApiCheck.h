/* Checks shared by the C API's tests (C11): CHECK and EXPECT_ERROR count
 * into `passed` and `failed` and print what failed with lowbit's last
 * error; tensor() makes a compact kDLCPU DLTensor. */

#ifndef LOWBIT_TESTS_CAPI_CAPICHECK_H
#define LOWBIT_TESTS_CAPI_CAPICHECK_H

#include "lowbit/lowbit.h"

#include <stdio.h>
#include <string.h>

static int passed, failed;

static void check(int ok, const char *what, int line) {
  if (ok) {
    ++passed;
    return;
  }
  ++failed;
  fprintf(stderr, "line %d: FAILED: %s (last error: '%s')\n", line, what,
          lowbit_last_error());
}
#define CHECK(condition) check((condition) != 0, #condition, __LINE__)

/* The call returned `code` and the message contains `text`. */
static void expectError(lowbit_status status, lowbit_status code,
                        const char *text, int line) {
  int ok = status == code && strstr(lowbit_last_error(), text) != NULL;
  if (!ok)
    fprintf(stderr, "line %d: got %s '%s', expected %s with '%s'\n", line,
            lowbit_status_name(status), lowbit_last_error(),
            lowbit_status_name(code), text);
  check(ok, "error code and message", line);
}
#define EXPECT_ERROR(call, code, text)                                         \
  expectError((call), (code), (text), __LINE__)

static DLTensor tensor(void *data, DLDataType dtype, int64_t *shape, int ndim) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = kDLCPU;
  t.ndim = ndim;
  t.dtype = dtype;
  t.shape = shape;
  return t;
}

#endif /* LOWBIT_TESTS_CAPI_CAPICHECK_H */
