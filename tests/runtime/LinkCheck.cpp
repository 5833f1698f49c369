// A program built only from the MLIR-free runtime libraries. The test
// MlirFreeTest reads its dynamic section: no libMLIR, no libLLVM, and no
// CUDA library (those are dlopen'd).

#include "runtime/cache/KernelCache.h"
#include "runtime/core/AtomicFile.h"
#include "runtime/driver/CudaDriver.h"
#include "runtime/driver/NvJitLink.h"
#include "runtime/nvrtc/ReferenceKernels.h"

#include <cstdio>

int main() {
  using namespace lowbit::runtime;
  lowbit::runtime::KernelCache cache(
      CacheOptions{"/nonexistent", CacheMode::Off});
  auto driver = cudaDriver();
  auto source = referenceKernelSource("mxfp4", "f32");
  std::printf("driver: %s, kernel source: %zu bytes, cache: %s\n",
              driver.ok() ? "loaded" : "absent",
              source.ok() ? source->source.size() : size_t(0),
              std::string(cacheModeName(cache.options().mode)).c_str());
  return 0;
}
