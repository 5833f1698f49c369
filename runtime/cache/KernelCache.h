//===- KernelCache.h - Compiled kernels in memory and on disk ---*- C++ -*-===//
//
// The launch path asks getOrCompile(key, compile) and reads top to bottom:
//
//   memory lookup -> (miss) disk lookup and validation -> (miss) compile
//   once -> write the disk entry (temp file, fsync, rename) -> publish.
//
// The compiler is injected: the caller passes a function that turns the key
// into a binary (PTX, cubin or a CPU object). Concurrent requests for one
// key share a single compile: threads through a shared future, processes
// through a per-key lock file (flock) taken before the second disk lookup.
// A disk entry carries a receipt (the key's serialization, the lowbit and
// LLVM versions, the compiler's source hash, the sizes, the payload format)
// and checksums; only a regular file of bounded size is read, and an entry
// that fails any check, including a payload that does not parse, is
// counted, recompiled and replaced, never returned.
//
// Environment (read by CacheOptions::fromEnvironment):
//   LOWBIT_CACHE_DIR  directory of the disk cache (default ~/.cache/lowbit)
//   LOWBIT_CACHE      on (default) | readonly | off | must-hit
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_CACHE_KERNELCACHE_H
#define LOWBIT_RUNTIME_CACHE_KERNELCACHE_H

#include "lowbit/Expected.h"
#include "runtime/cache/KernelKey.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace lowbit::runtime {

enum class BinaryKind : uint8_t { Ptx, Cubin, HostObject };
std::string_view binaryKindName(BinaryKind kind);

/// How the payload is laid out, named in the receipt so that a reader can
/// check it parses (a malformed payload is a corrupt entry).
enum class PayloadFormat : uint8_t {
  /// The binary itself.
  Raw,
  /// lowbit::Jit's GPU container: plan, PTX, cubin (GpuPayload.h).
  JitGpu,
};
std::string_view payloadFormatName(PayloadFormat format);

/// What a compiler hands the cache.
struct CompiledKernel {
  BinaryKind kind = BinaryKind::Ptx;
  /// The kernel's symbol in the binary (cuModuleGetFunction's name).
  std::string entryName;
  /// PTX text, cubin bytes or an object file, laid out as payloadFormat.
  std::string binary;
  PayloadFormat payloadFormat = PayloadFormat::Raw;
  /// Resource usage from ptxas/nvJitLink (-1: unknown).
  int registers = -1;
  int spillStoreBytes = -1;
  int spillLoadBytes = -1;
  int sharedBytes = -1;
  int stackBytes = -1;
};

/// What the cache hands back. Shared and immutable: a memory hit costs one
/// reference count.
struct CacheEntry {
  KernelKey key;
  CompiledKernel kernel;
  enum class Origin : uint8_t { Compiled, Disk } origin = Origin::Compiled;
  /// Wall time of the compile that produced it in this process (0 if read
  /// from disk).
  double compileMillis = 0;
};

/// A non-owning reference to the compiler callable, so that the launch path
/// neither allocates nor copies a std::function on a hit.
class CompileFn {
public:
  template <typename Callable, typename = std::enable_if_t<!std::is_same_v<
                                   std::decay_t<Callable>, CompileFn>>>
  CompileFn(Callable &&callable)
      : object(const_cast<void *>(static_cast<const void *>(&callable))),
        thunk([](void *target, const KernelKey &key) {
          return (*static_cast<std::remove_reference_t<Callable> *>(target))(
              key);
        }) {}
  Expected<CompiledKernel> operator()(const KernelKey &key) const {
    return thunk(object, key);
  }

private:
  void *object;
  Expected<CompiledKernel> (*thunk)(void *, const KernelKey &);
};

enum class CacheMode : uint8_t {
  /// Memory and disk; compile on a miss. The default.
  ReadWrite,
  /// Read disk entries but never write (a read-only shared cache).
  ReadOnly,
  /// No disk cache; each process compiles a kernel once (memory only).
  Off,
  /// Memory and disk only: a miss is a CacheMiss error naming the key. For
  /// deployments that must never compile at run time.
  MustHit,
};
std::string_view cacheModeName(CacheMode mode);

struct CacheOptions {
  std::string directory;
  CacheMode mode = CacheMode::ReadWrite;

  /// LOWBIT_CACHE_DIR (default $HOME/.cache/lowbit, or $XDG_CACHE_HOME/lowbit)
  /// and LOWBIT_CACHE. An unknown LOWBIT_CACHE value is an error, not a
  /// silent default.
  static Expected<CacheOptions> fromEnvironment();
};

struct CacheStats {
  uint64_t memoryHits = 0;
  uint64_t diskHits = 0;
  /// Lookups that found nothing valid in memory or on disk.
  uint64_t misses = 0;
  /// Successful compiles.
  uint64_t compiles = 0;
  uint64_t compileFailures = 0;
  /// Requests that waited for another thread's compile of the same key.
  uint64_t inflightWaits = 0;
  /// Disk entries that failed validation and were recompiled and replaced.
  uint64_t corruptReplaced = 0;
  uint64_t diskWrites = 0;
  uint64_t diskWriteFailures = 0;
  double compileMillis = 0;
};

/// What clearing a cache directory did: the files removed, and one message
/// per file that could not be removed (the others are still removed).
struct ClearResult {
  size_t removed = 0;
  std::vector<std::string> failures;
};

/// One disk entry as `lowbit cache list` shows it.
struct DiskEntryInfo {
  std::string path;
  std::string hashHex;
  uint64_t fileBytes = 0;
  bool valid = false;
  /// Why the entry is invalid (empty when valid).
  std::string problem;
  std::string spec, chip, inputDtype, lowbitVersion, llvmVersion;
  BinaryKind kind = BinaryKind::Ptx;
  std::string entryName;
  uint64_t payloadBytes = 0;
};

class KernelCache {
public:
  explicit KernelCache(CacheOptions options);
  KernelCache(const KernelCache &) = delete;
  KernelCache &operator=(const KernelCache &) = delete;

  /// The process-wide cache, configured from the environment on first use.
  /// If the environment is invalid, the error is returned every time.
  static Expected<KernelCache *> global();

  Expected<std::shared_ptr<const CacheEntry>> getOrCompile(const KernelKey &key,
                                                           CompileFn compile);

  /// Stores `kernel` as key's entry in memory and (ReadWrite) on disk,
  /// replacing what is there: the Jit completes an entry whose cubin was
  /// deferred (GpuPayload.h). A failed disk write is counted, as a
  /// compile's is. `origin`: where the replaced entry came from.
  std::shared_ptr<const CacheEntry> replace(const KernelKey &key,
                                            CompiledKernel kernel,
                                            CacheEntry::Origin origin);
  /// Memory only; nullptr on a miss. Never compiles, never touches disk.
  std::shared_ptr<const CacheEntry> lookupMemory(const KernelKey &key) const;
  /// Drops `key`'s finished memory entry (a compile in flight stays); the
  /// next request reads the disk or compiles. For bounded callers (the Jit).
  void forgetMemory(const KernelKey &key);

  CacheStats stats() const;
  const CacheOptions &options() const { return config; }

  /// Path of the disk entry for `key` (whether it exists or not).
  std::string entryPath(const KernelKey &key) const;
  /// Every entry file in the directory, validated.
  Expected<std::vector<DiskEntryInfo>> list() const;
  /// The lock file a compile of `key` holds (FileLock in KernelCache.cpp).
  std::string lockPath(const KernelKey &key) const;
  /// Drops the memory cache and removes every entry, lock and stale temp
  /// file from the directory (see clearDiskCache).
  Expected<ClearResult> clear();

private:
  using Result = Expected<std::shared_ptr<const CacheEntry>>;
  struct Shard {
    mutable std::mutex mutex;
    std::unordered_map<KernelKey, std::shared_future<Result>, KernelKeyHasher>
        entries;
  };
  Shard &shardOf(const KernelKey &key) const {
    return shards[key.hash().high % shards.size()];
  }
  Result lookupDiskOrCompile(const KernelKey &key, CompileFn compile);

  CacheOptions config;
  mutable std::array<Shard, 16> shards;

  struct Counters {
    std::atomic<uint64_t> memoryHits{0}, diskHits{0}, misses{0}, compiles{0},
        compileFailures{0}, inflightWaits{0}, corruptReplaced{0}, diskWrites{0},
        diskWriteFailures{0}, compileMicros{0};
  };
  mutable Counters counters;
};

//===----------------------------------------------------------------------===//
// The disk entry format, exposed for the CLI and the tests.
//===----------------------------------------------------------------------===//

/// Serializes an entry: header, receipt, payload (docs/runtime.md).
std::string encodeDiskEntry(const KernelKey &key, const CompiledKernel &kernel);

/// Parses and validates a disk entry. With `expectedKey`, the receipt must
/// name exactly that key. Errors are CorruptEntry with the reason.
Expected<CompiledKernel> decodeDiskEntry(std::string_view bytes,
                                         const KernelKey *expectedKey,
                                         DiskEntryInfo *info = nullptr);

/// list() and clear() on a directory, without a KernelCache (for
/// `lowbit cache list|clear`).
Expected<std::vector<DiskEntryInfo>>
listDiskCache(const std::string &directory);
/// An error only when the directory cannot be listed.
Expected<ClearResult> clearDiskCache(const std::string &directory);

/// The entry file suffix and the subdirectory of the current format.
inline constexpr std::string_view kEntrySuffix = ".lbk";
inline constexpr std::string_view kLockSuffix = ".lock";
/// An entry larger than this is not read (it cannot be one lowbit wrote:
/// kernels are kilobytes); it is recompiled and replaced.
inline constexpr uint64_t kMaxEntryBytes = uint64_t(256) << 20;
inline constexpr std::string_view kFormatSubdirectory = "v1";

} // namespace lowbit::runtime

#endif // LOWBIT_RUNTIME_CACHE_KERNELCACHE_H
