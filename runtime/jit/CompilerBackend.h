//===- CompilerBackend.h - What lowbit::Jit asks of the compiler -*- C++
//-*-===//
//
// lowbit::Jit (Jit.cpp) is MLIR-free: the key, the memory and disk caches,
// the launch program and the CUDA driver need no compiler. Only a miss
// does, and it goes through this table of entry points. Two libraries
// provide `compilerBackend()`; an engine links one of them:
//
//   LowbitJit        the compiler linked in (MLIR, LLVM): every process
//                    that links it loads libMLIR and libLLVM at start;
//   LowbitJitLoader  the same compiler in liblowbit-compiler.so, loaded
//                    with dlopen at the first miss (CompilerLoader.h): a
//                    process whose kernels all come from the disk cache
//                    never loads MLIR or LLVM (docs/runtime.md, "The
//                    compiler, linked or loaded").
//
// The library's table is the linked one (`linkedCompilerBackend()`); the
// loader refuses a library built from other sources, so both sides agree
// on these C++ types.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_JIT_COMPILERBACKEND_H
#define LOWBIT_RUNTIME_JIT_COMPILERBACKEND_H

#include "lowbit/Expected.h"
#include "runtime/spec/KernelSpec.h"
#include "target/Target.h"
#include "target/WorkspaceRows.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lowbit::jit {

/// A GPU kernel as the compiler leaves it: what the Jit's cache entry
/// stores (runtime/cache/GpuPayload.h), before any cubin.
struct GpuCompileResult {
  std::string ptx;
  std::vector<std::string> kernelNames;
  /// The launch plan's text (launch::LaunchPlan::serialize()).
  std::string plan;
  /// 32-bit words of the trailing workspace parameter (0: none), and the
  /// part that grows with X at each call (workspace_abi::wordsFor).
  int64_t workspaceWords = 0;
  workspace_abi::RowWords workspaceRows = {};
};

/// A 2-D row-major host buffer of one kernel parameter.
struct CpuBuffer {
  void *data = nullptr;
  int64_t rows = 0, cols = 0;
};

/// A kernel JIT-compiled for the host CPU (held in memory only).
class CpuKernelHandle {
public:
  virtual ~CpuKernelHandle();
  /// One buffer per kernelAbi() parameter, in order.
  virtual Status run(std::span<const CpuBuffer> buffers) = 0;
};

/// A KV kernel parameter's host buffer: C-order `shape`.
struct KvCpuBuffer {
  void *data = nullptr;
  std::span<const int64_t> shape;
};

/// A KV-cache kernel JIT-compiled for the host CPU (held in memory only).
class KvCpuKernelHandle {
public:
  virtual ~KvCpuKernelHandle();
  /// One buffer per parameter of the spec's ABI (KvKernelSignature.h).
  virtual Status run(std::span<const KvCpuBuffer> buffers) = 0;
};

struct CompilerBackend {
  /// Spec -> PTX, launch plan and workspace size. `startLinker`: a cubin
  /// follows, so the nvJitLink warm-up starts beside the lowering (unless
  /// LOWBIT_CUBIN=driver); false: PTX only, nvJitLink is not loaded.
  Expected<GpuCompileResult> (*compileGpu)(const KernelSpec &spec,
                                           const Target &target,
                                           bool startLinker);
  Expected<std::unique_ptr<CpuKernelHandle>> (*compileCpu)(
      const KernelSpec &spec);
  /// The host CPU's name and a hash of its features: what a CPU kernel's
  /// key is specialized on (LLVM's host detection).
  std::string (*hostFeatures)();
  /// The KV-cache kernels (lowbit::Jit::getKv): `specText` is the
  /// canonical text of a KV spec (KvJitSpec.h), parsed again here.
  Expected<GpuCompileResult> (*compileKvGpu)(std::string_view specText,
                                             const Target &target,
                                             bool startLinker);
  Expected<std::unique_ptr<KvCpuKernelHandle>> (*compileKvCpu)(
      std::string_view specText);
  /// The compiler's one-time setup for `target`: one small kernel through
  /// the whole pipeline, result dropped (JitOptions::warmUpCompiler).
  Status (*warmUp)(const Target &target);
};

/// The compiler the Jit uses: linked in (LowbitJit) or loaded on first use
/// (LowbitJitLoader; the error says why the library cannot be loaded).
Expected<const CompilerBackend *> compilerBackend();

/// The compiler of this binary (LowbitJit only): what compilerBackend()
/// returns there, and what liblowbit-compiler.so exports.
const CompilerBackend &linkedCompilerBackend();

} // namespace lowbit::jit

#endif // LOWBIT_RUNTIME_JIT_COMPILERBACKEND_H
