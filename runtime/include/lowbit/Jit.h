//===- Jit.h - lowbit's C++ API: spec + target -> Kernel -> run ---*- C++
//-*-===//
//
// The one public header of the JIT. A caller names a kernel by its spec
// (runtime/spec/KernelSpec.h, or its one-line text) and a target (host CPU
// or an NVIDIA chip), and gets a Kernel:
//
//   auto jit = lowbit::Jit::create();                      // env:
//   LOWBIT_CACHE* auto kernel = (*jit)->get("quantize mxfp4 dynamic", target);
//   kernel->run(hostPointers, rows, cols);                 // CPU
//   kernel->launch(stream, devicePointers, rows, cols);    // CUDA
//
// Every call that can fail returns lowbit::Expected / lowbit::Status
// (lowbit/Expected.h); nothing here throws, exits or aborts.
//
// Specialization (docs/runtime.md, "C++ API"): the cache key is the
// canonical spec text, the chip and its features, static sizes (or
// "dynamic"), the 16-byte alignment class of each buffer, the value dtype,
// the lowbit and LLVM versions and the pass-pipeline hash. get() compiles
// for the spec's sizes and 16-byte-aligned buffers; run()/launch() compute
// the key from their arguments (no allocation) and find that binary in
// memory, compiling only when the key differs (a misaligned buffer, or a
// size of a static spec). A size declared dynamic never recompiles.
//
// GPU kernels (PTX + cubin + launch plan) are cached in memory and on disk
// (LOWBIT_CACHE_DIR); CPU kernels are JIT'd engines, cached in memory only
// (lowbit does not serialize host object code yet).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_JIT_H
#define LOWBIT_JIT_H

#include "lowbit/Expected.h"
#include "runtime/cache/KernelCache.h"
#include "runtime/driver/NvJitLink.h"
#include "runtime/spec/KernelSpec.h"
#include "target/Target.h"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lowbit {

struct JitOptions {
  /// Directory of the disk cache. Empty: LOWBIT_CACHE_DIR, else
  /// $XDG_CACHE_HOME/lowbit or ~/.cache/lowbit.
  std::string cacheDirectory;
  /// Cache mode. nullopt: LOWBIT_CACHE (on | readonly | off | must-hit).
  std::optional<runtime::CacheMode> cacheMode;
  /// The target of get() calls that name none. Default: the host CPU.
  Target target;
  /// How many entries each in-memory cache keeps (get()'s kernels, CPU
  /// engines, loaded CUDA modules, GPU cache entries), least recently used
  /// first out; 0: unbounded. An evicted kernel is reloaded from the disk
  /// cache (GPU) or recompiled (CPU) when asked for again; Kernel objects
  /// already handed out keep working.
  size_t memoryCapacity = 512;
  /// Who makes a GPU kernel's machine code. nullopt: LOWBIT_CUBIN
  /// (nvjitlink | driver; anything else fails create()). NvJitLink links
  /// at compile time and the cache entry holds the cubin; Driver stores
  /// the PTX only and cuModuleLoadData JIT-compiles it at the first launch
  /// that loads the kernel (docs/pipeline.md).
  std::optional<runtime::CubinMaker> cubinMaker;
  /// Only the PTX is wanted (`lowbit compile --emit ptx`): a miss neither
  /// links a cubin nor loads nvJitLink, and its cache entry is marked
  /// "cubin deferred" (runtime/cache/GpuPayload.h). A later get() by a Jit
  /// that links (NvJitLink, this option off, cache not must-hit) links the
  /// cubin then and replaces the entry.
  bool deferCubin = false;
  /// Start the compiler's one-time setup for `target` on a thread when the
  /// Jit is created (one small kernel through the whole pipeline: dialects
  /// loaded into a pooled context, LLVM's target initialized, nvJitLink
  /// started), so that the first miss costs about what a later one does.
  /// Off by default: with LowbitJitLoader it loads the compiler library,
  /// which a process served from the disk cache never needs. The Jit's
  /// destructor waits for it.
  bool warmUpCompiler = false;
};

/// Resource usage of a GPU kernel, from ptxas (nvJitLink's info log). -1:
/// unknown (CPU kernels, or PTX-only entries when nvJitLink is missing).
struct KernelResources {
  int registers = -1;
  int spillStoreBytes = -1;
  int spillLoadBytes = -1;
  int sharedBytes = -1;
  int stackBytes = -1;
};

struct JitStats {
  /// Compiler invocations by this Jit (CPU engines + GPU PTX/cubin builds).
  uint64_t compiles = 0;
  uint64_t cpuCompiles = 0;
  uint64_t gpuCompiles = 0;
  /// Entries the memory bound pushed out of the Jit's caches.
  uint64_t evictions = 0;
  /// The GPU kernel cache's counters (memory/disk hits, corrupt entries...).
  runtime::CacheStats cache;
};

/// What a kernel argument holds (docs/kernel-abi.md).
enum class ArgumentRole : uint8_t {
  Input,
  Scales,
  Zeros,
  Global,
  Codes,
  Output
};
/// How its elements are stored: values and scales as themselves, codes and
/// byte-coded scales (e8m0, ue4m3) and zero points as bytes. The KV
/// kernels' codes and zero points are I8, their indices (positions,
/// lengths, block tables) I32.
enum class ElementType : uint8_t { F32, F16, BF16, U8, I8, I32 };
std::string_view argumentRoleName(ArgumentRole role);  ///< "input", ...
std::string_view elementTypeName(ElementType element); ///< "f32", ...

/// One argument of a kernel for a given [rows, cols]: a compact row-major
/// 2-D buffer of `shape` elements of `element`.
struct ArgumentInfo {
  ArgumentRole role = ArgumentRole::Input;
  ElementType element = ElementType::F32;
  std::array<int64_t, 2> shape{};
  /// The kernel reads it (an input) / writes every element of it (an
  /// output); exactly one is true.
  bool read = false;
  bool written = false;
};

class Jit;

//===----------------------------------------------------------------------===//
// KV-cache kernels (docs/runtime.md, "KV kernels through the Jit")
//===----------------------------------------------------------------------===//

/// The largest rank of a KV kernel's buffer.
inline constexpr size_t kKvMaxRank = 8;

/// One parameter of a KV kernel: a C-order buffer. A negative size is one
/// the call fixes (dynamic in the kernel): every parameter with the same
/// negative value must have the same size there; kvDimName names it
/// ("batch", "new_tokens", "cache_tokens", "pages", "max_blocks", ...).
struct KvParamInfo {
  std::string name; ///< "input", "codes", "scales", "positions", ...
  ElementType element = ElementType::F32;
  std::vector<int64_t> shape;
  /// Written by the kernel (in place, as an append's cache, or whole).
  bool written = false;
};
std::string_view kvDimName(int64_t dim);

/// One buffer of a KV kernel call: its address (a host pointer for run(),
/// a CUdeviceptr for launch()), its element type and its C-order shape.
struct KvTensor {
  void *data = nullptr;
  ElementType element = ElementType::F32;
  size_t rank = 0;
  std::array<int64_t, kKvMaxRank> shape{};
};

/// A compiled KV-cache kernel (kv_append, kv_dequantize, kivi_append,
/// kivi_dequantize, kv_attend, kivi_attend). Cheap to copy; safe to use
/// from many threads; may outlive the Jit that made it.
class KvKernel {
public:
  /// The canonical spec text (what the cache key holds).
  const std::string &spec() const;
  /// The spec's first word: "kv_append", ..., "kivi_attend".
  std::string_view op() const;
  const Target &target() const;
  /// The parameters run()/launch() take, in order (the kernel ABI,
  /// docs/kv-kernels.md and docs/decode-attention.md).
  const std::vector<KvParamInfo> &params() const;
  /// The PTX (empty for a CPU kernel).
  std::string_view ptx() const;
  KernelResources resources() const;
  /// Words of the per-stream workspace launch() passes (0: none); for a
  /// matmul with prologues in front of X, the fixed part of it.
  int64_t workspaceWords() const;
  /// The words launch() passes for X of [rows, cols] (parameter 0): a
  /// matmul with prologues quantizes X into the workspace, which grows
  /// with X (docs/kernel-abi.md, "Workspace"); workspaceWords() for every
  /// other kernel. -1 when that is more than 4 GiB.
  int64_t workspaceWordsFor(int64_t rows, int64_t cols) const;
  bool loadedFromDisk() const;
  double compileMillis() const;

  /// Runs a CPU kernel on host buffers, one per parameter: each of the
  /// parameter's element type and rank, static sizes equal, every
  /// call-fixed size >= 1 and the same wherever it appears (and the sizes
  /// derived from others, e.g. attention's partial rows, consistent). The
  /// compiled kernel's own checks (sequence lengths, block tables) follow.
  Status run(std::span<const KvTensor> buffers) const;
  /// Launches a GPU kernel on `stream` (a CUstream; nullptr: the default
  /// stream) with device buffers, checked as run()'s shapes are (the
  /// device contents, lengths and block tables, cannot be: they are the
  /// caller's). Asynchronous. The launch sizes are the launch plan's
  /// (runtime/aot's evaluateLaunchFor/packArgumentsFor, as an AOT bundle's
  /// runner launches the same kernels).
  Status launch(void *stream, std::span<const KvTensor> buffers) const;

  struct State;

private:
  friend class Jit;
  explicit KvKernel(std::shared_ptr<const State> state)
      : state(std::move(state)) {}
  std::shared_ptr<const State> state;
};

/// A compiled kernel. Cheap to copy (shared state); safe to use from many
/// threads; may outlive the Jit that made it.
class Kernel {
public:
  const KernelSpec &spec() const;
  const Target &target() const;
  /// Buffers run()/launch() take, in docs/kernel-abi.md's order.
  size_t bufferCount() const;
  /// The PTX (empty for a CPU kernel).
  std::string_view ptx() const;
  KernelResources resources() const;
  /// The arguments run()/launch() take for a [rows, cols] tensor, in
  /// order. InvalidArgument for a negative size or, for a spec with static
  /// sizes, other sizes.
  Expected<std::vector<ArgumentInfo>> signature(int64_t rows,
                                                int64_t cols) const;
  /// Words of the per-stream workspace launch() passes the GPU kernels as
  /// their trailing parameter (0: none). Recorded at get(); callers never
  /// pass it (docs/runtime.md, "Workspace").
  int64_t workspaceWords() const;
  /// True if get() found the kernel in the disk cache (no compile).
  bool loadedFromDisk() const;
  /// Wall time of get()'s compile in this process (0 for a cache hit).
  double compileMillis() const;

  /// Runs a CPU kernel. `buffers` holds bufferCount() host pointers, each
  /// to a row-major buffer of compiler::bufferShapes(spec, rows, cols).
  Status run(std::span<void *const> buffers, int64_t rows, int64_t cols) const;

  /// Launches a GPU kernel on `stream` (a CUstream; nullptr: the default
  /// stream) with bufferCount() device pointers (CUdeviceptr values).
  /// Asynchronous. A kernel with a workspace gets its stream's workspace
  /// (allocated and zeroed on the stream's first launch, never shared with
  /// another stream). Launch sizes were compiled at get(): a launch
  /// evaluates them and packs the parameters without allocating. Errors:
  /// LibraryNotFound (no libcuda), NoDevice, CudaError, Unsupported (a
  /// kernel whose launch plan the JIT could not derive), InvalidArgument.
  Status launch(void *stream, std::span<const uint64_t> buffers, int64_t rows,
                int64_t cols) const;

  struct State;

private:
  friend class Jit;
  explicit Kernel(std::shared_ptr<const State> state)
      : state(std::move(state)) {}
  std::shared_ptr<const State> state;
};

class Jit {
public:
  /// Reads the environment for what `options` leaves unset. An invalid
  /// LOWBIT_CACHE value is an InvalidArgument error.
  static Expected<std::unique_ptr<Jit>> create(JitOptions options = {});
  ~Jit();
  Jit(const Jit &) = delete;
  Jit &operator=(const Jit &) = delete;

  /// The kernel for `spec` on `target`, compiled on first request (once,
  /// however many threads ask) or found in the cache. In must-hit mode a
  /// kernel in neither cache is a CacheMiss error. A repeated request (the
  /// same spec text and target) is a lookup in memory: no parsing, no key,
  /// no payload decoding.
  Expected<Kernel> get(const KernelSpec &spec, const Target &target);
  Expected<Kernel> get(std::string_view specText, const Target &target);
  /// With the options' target.
  Expected<Kernel> get(std::string_view specText);

  /// The KV-cache kernel of `specText` (`kv_append ...`, `kv_dequantize
  /// ...`, `kivi_append ...`, `kivi_dequantize ...`, `kv_attend ...`,
  /// `kivi_attend ...`), or the quantized-weight matmul (`matmul SCHEME
  /// [from=] [to=] [bias] [n= k= | dynamic]`, docs/matmul.md: its 2-D
  /// parameters are x, codes, scales[, zeros][, global][, bias], y) on
  /// `target`: the same caches as get() (a repeat is
  /// a lookup; GPU kernels on disk, CPU engines in memory), the same
  /// compiler (linked or loaded). InvalidArgument for a spec that does
  /// not parse.
  Expected<KvKernel> getKv(std::string_view specText, const Target &target);

  JitStats stats() const;
  const runtime::CacheOptions &cacheOptions() const;
  /// Waits for the warm-up JitOptions::warmUpCompiler started and returns
  /// its outcome (success when none was asked for).
  Status waitForWarmUp() const;

  struct Impl;

private:
  explicit Jit(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl;
};

/// The pass-pipeline text whose hash is in every key (beside the hash of
/// the compiler's sources): built from the pipelines themselves, never
/// bumped by hand.
std::string_view jitPipelineDescription();

} // namespace lowbit

#endif // LOWBIT_JIT_H
