/*===- CudaDriverStub.c - A libcuda stand-in for launch-path tests --------===*
 *
 * Loaded by lowbit through LOWBIT_LIBCUDA (tests/jit, bench/LaunchBench):
 * one sm_90 device, modules loaded from PTX text, device memory that is
 * host memory, and a cuLaunchKernel that runs nothing but checks and
 * records what a real driver would read. A kernel's parameter count is
 * read from the PTX `.entry` (as the driver reads it from the image), so
 * the record holds exactly the parameters the kernel declares; for a
 * launch whose trailing parameter is the descriptor of memory cuMemAlloc
 * gave, the record says whether that memory was all zero.
 *
 * Test hooks (dlsym'd by the tests): stub_launch_count, stub_launch_at,
 * stub_reset, stub_set_record, stub_set_extra_params.
 *
 *===----------------------------------------------------------------------===*/

#include "CudaDriverStub.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
enum { OK = 0, INVALID_VALUE = 1, NOT_FOUND = 500 };

/* One kernel: its parameter count. Owned by its module, as the driver's
 * function handles are: freed when the module is unloaded. */
typedef struct Function {
  int params;
  struct Function *next;
} Function;

/* One loaded module: its PTX text and the functions looked up in it. */
typedef struct Module {
  char *ptx;
  Function *functions;
} Module;

#define MAX_RECORDS 4096
#define MAX_PARAMS LOWBIT_STUB_MAX_PARAMS

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static LaunchRecord records[MAX_RECORDS];
static long recordCount;
static int recording = 1;
/* Parameters a kernel takes beyond its PTX's (see stub_set_extra_params). */
static int extraParams;

/* The PTX lowbit's compiler emits on this branch does not declare the
 * workspace parameter yet; a test that forces a workspace tells the stub
 * that each kernel takes `count` more parameters than its PTX lists, as
 * the compiler's kernels will. */
void stub_set_extra_params(int count) { extraParams = count; }

/* Memory cuMemAlloc handed out: only that is read (the tests' buffer
 * addresses are made up). */
#define MAX_ALLOCATIONS 1024
static uint64_t allocations[MAX_ALLOCATIONS];
static int allocationCount;
static int allocated(uint64_t address) {
  pthread_mutex_lock(&lock);
  int found = 0;
  for (int i = 0; i < allocationCount; ++i)
    found |= allocations[i] == address;
  pthread_mutex_unlock(&lock);
  return found;
}

long stub_launch_count(void) {
  pthread_mutex_lock(&lock);
  long count = recordCount;
  pthread_mutex_unlock(&lock);
  return count;
}

const LaunchRecord *stub_launch_at(long index) {
  return index >= 0 && index < recordCount && index < MAX_RECORDS
             ? &records[index]
             : NULL;
}

void stub_reset(void) {
  pthread_mutex_lock(&lock);
  recordCount = 0;
  pthread_mutex_unlock(&lock);
}

/* 0: launches are checked but not recorded (the bench). */
void stub_set_record(int on) { recording = on; }

CUresult cuInit(unsigned flags) { return flags == 0 ? OK : INVALID_VALUE; }
CUresult cuDriverGetVersion(int *version) {
  *version = 13000;
  return OK;
}
CUresult cuDeviceGetCount(int *count) {
  *count = 1;
  return OK;
}
CUresult cuDeviceGet(int *device, int ordinal) {
  *device = ordinal;
  return ordinal == 0 ? OK : INVALID_VALUE;
}
CUresult cuDeviceGetAttribute(int *value, int attribute, int device) {
  (void)device;
  /* 75, 76: compute capability major, minor. */
  *value = attribute == 75 ? 9 : attribute == 76 ? 0 : 0;
  return OK;
}
CUresult cuDeviceGetName(char *name, int length, int device) {
  (void)device;
  strncpy(name, "lowbit driver stub", (size_t)length);
  return OK;
}
static int primaryContext;
CUresult cuDevicePrimaryCtxRetain(void **context, int device) {
  (void)device;
  *context = &primaryContext;
  return OK;
}
CUresult cuDevicePrimaryCtxRelease_v2(int device) {
  (void)device;
  return OK;
}
CUresult cuCtxSetCurrent(void *context) {
  return context == &primaryContext ? OK : INVALID_VALUE;
}
CUresult cuCtxSynchronize(void) { return OK; }

CUresult cuModuleLoadData(Module **module, const void *image) {
  const char *text = (const char *)image;
  if (!strstr(text, ".entry"))
    return INVALID_VALUE; /* the stub reads PTX only */
  *module = (Module *)malloc(sizeof(Module));
  (*module)->ptx = strdup(text);
  (*module)->functions = NULL;
  return OK;
}
CUresult cuModuleUnload(Module *module) {
  while (module->functions) {
    Function *next = module->functions->next;
    free(module->functions);
    module->functions = next;
  }
  free(module->ptx);
  free(module);
  return OK;
}
CUresult cuModuleGetFunction(Function **function, Module *module,
                             const char *name) {
  size_t length = strlen(name);
  for (const char *at = strstr(module->ptx, ".entry "); at;
       at = strstr(at + 1, ".entry ")) {
    const char *entry = at + 7;
    if (strncmp(entry, name, length) != 0 || entry[length] != '(')
      continue;
    const char *end = strchr(entry, ')');
    int params = 0;
    for (const char *p = strstr(entry, ".param"); p && p < end;
         p = strstr(p + 1, ".param"))
      ++params;
    *function = (Function *)malloc(sizeof(Function));
    (*function)->params = params + extraParams;
    pthread_mutex_lock(&lock);
    (*function)->next = module->functions;
    module->functions = *function;
    pthread_mutex_unlock(&lock);
    return OK;
  }
  return NOT_FOUND;
}

CUresult cuLaunchKernel(Function *function, unsigned gx, unsigned gy,
                        unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, void *stream, void **params,
                        void **extra) {
  if (extra || !function || !params || function->params > MAX_PARAMS || !gx ||
      !gy || !gz || !bx || !by || !bz)
    return INVALID_VALUE;
  LaunchRecord record;
  record.stream = stream;
  record.params = function->params;
  record.grid[0] = gx, record.grid[1] = gy, record.grid[2] = gz;
  record.block[0] = bx, record.block[1] = by, record.block[2] = bz;
  record.shared = shared;
  for (int i = 0; i < function->params; ++i)
    memcpy(&record.values[i], params[i], 8);
  record.trailingZero = -1;
  if (function->params >= 7) {
    const uint64_t *d = &record.values[function->params - 7];
    if (allocated(d[0]) && d[0] == d[1] && d[2] == 0 && d[3] == 1 &&
        d[4] == d[5] && d[6] == 1) {
      const int32_t *words = (const int32_t *)(uintptr_t)d[0];
      record.trailingZero = 1;
      for (uint64_t w = 0; w < d[4]; ++w)
        if (words[w] != 0)
          record.trailingZero = 0;
    }
  }
  if (!recording)
    return OK;
  pthread_mutex_lock(&lock);
  if (recordCount < MAX_RECORDS)
    records[recordCount] = record;
  ++recordCount;
  pthread_mutex_unlock(&lock);
  return OK;
}

CUresult cuMemAlloc_v2(uint64_t *pointer, size_t bytes) {
  /* Poisoned: lowbit must zero a workspace itself. */
  void *memory = malloc(bytes ? bytes : 1);
  if (!memory)
    return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
  memset(memory, 0xA5, bytes);
  *pointer = (uint64_t)(uintptr_t)memory;
  pthread_mutex_lock(&lock);
  if (allocationCount < MAX_ALLOCATIONS)
    allocations[allocationCount++] = *pointer;
  pthread_mutex_unlock(&lock);
  return OK;
}
CUresult cuMemFree_v2(uint64_t pointer) {
  pthread_mutex_lock(&lock);
  for (int i = 0; i < allocationCount; ++i)
    if (allocations[i] == pointer)
      allocations[i] = allocations[--allocationCount];
  pthread_mutex_unlock(&lock);
  free((void *)(uintptr_t)pointer);
  return OK;
}
CUresult cuMemcpyHtoD_v2(uint64_t destination, const void *source,
                         size_t bytes) {
  memcpy((void *)(uintptr_t)destination, source, bytes);
  return OK;
}
CUresult cuMemcpyDtoH_v2(void *destination, uint64_t source, size_t bytes) {
  memcpy(destination, (const void *)(uintptr_t)source, bytes);
  return OK;
}
CUresult cuStreamSynchronize(void *stream) {
  (void)stream;
  return OK;
}
CUresult cuEventCreate(void **event, unsigned flags) {
  (void)flags;
  *event = malloc(1);
  return OK;
}
CUresult cuEventRecord(void *event, void *stream) {
  (void)event, (void)stream;
  return OK;
}
CUresult cuEventSynchronize(void *event) {
  (void)event;
  return OK;
}
CUresult cuEventElapsedTime_v2(float *millis, void *start, void *end) {
  (void)start, (void)end;
  *millis = 0;
  return OK;
}
CUresult cuEventDestroy_v2(void *event) {
  free(event);
  return OK;
}
CUresult cuGetErrorString(CUresult error, const char **text) {
  *text = error == OK ? "no error" : "stub error";
  return OK;
}
CUresult cuGetErrorName(CUresult error, const char **text) {
  *text = error == OK ? "CUDA_SUCCESS" : "CUDA_ERROR_STUB";
  return OK;
}
