//===- KernelCache.cpp - Compiled kernels in memory and on disk -----------===//

#include "runtime/cache/KernelCache.h"

#include "runtime/cache/GpuPayload.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace lowbit::runtime {

std::string_view binaryKindName(BinaryKind kind) {
  switch (kind) {
  case BinaryKind::Ptx:
    return "ptx";
  case BinaryKind::Cubin:
    return "cubin";
  case BinaryKind::HostObject:
    return "host-object";
  }
  return "unknown";
}

std::string_view payloadFormatName(PayloadFormat format) {
  switch (format) {
  case PayloadFormat::Raw:
    return "raw";
  case PayloadFormat::JitGpu:
    return "jit-gpu-2";
  }
  return "unknown";
}

std::string_view cacheModeName(CacheMode mode) {
  switch (mode) {
  case CacheMode::ReadWrite:
    return "on";
  case CacheMode::ReadOnly:
    return "readonly";
  case CacheMode::Off:
    return "off";
  case CacheMode::MustHit:
    return "must-hit";
  }
  return "unknown";
}

namespace {

/// A cache root that exists must be a directory: a regular file there
/// (a mistyped LOWBIT_CACHE_DIR) used to read as an empty cache and make
/// every store fail silently.
Status checkCacheRoot(const std::string &directory) {
  struct stat info;
  // Missing: created on the first store. Unreadable: the cache's own
  // operations report it, as before.
  if (::stat(directory.c_str(), &info) != 0)
    return Status::success();
  if (!S_ISDIR(info.st_mode))
    return makeError(ErrorCode::InvalidArgument,
                     "the cache directory '" + directory +
                         "' is not a directory (LOWBIT_CACHE_DIR names the "
                         "directory lowbit keeps its kernels in)");
  return Status::success();
}

} // namespace

Expected<CacheOptions> CacheOptions::fromEnvironment() {
  CacheOptions options;
  const char *modeText = std::getenv("LOWBIT_CACHE");
  std::string_view mode = modeText ? modeText : "";
  if (mode.empty() || mode == "on" || mode == "1")
    options.mode = CacheMode::ReadWrite;
  else if (mode == "readonly" || mode == "read-only")
    options.mode = CacheMode::ReadOnly;
  else if (mode == "off" || mode == "0")
    options.mode = CacheMode::Off;
  else if (mode == "must-hit")
    options.mode = CacheMode::MustHit;
  else
    return makeError(ErrorCode::InvalidArgument,
                     "LOWBIT_CACHE='" + std::string(mode) +
                         "' is not one of on, readonly, off, must-hit");

  if (const char *directory = std::getenv("LOWBIT_CACHE_DIR");
      directory && *directory)
    options.directory = directory;
  else if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    options.directory = std::string(xdg) + "/lowbit";
  else if (const char *home = std::getenv("HOME"); home && *home)
    options.directory = std::string(home) + "/.cache/lowbit";
  else if (options.mode != CacheMode::Off)
    return makeError(ErrorCode::InvalidArgument,
                     "no cache directory: LOWBIT_CACHE_DIR and HOME are both "
                     "unset (set one, or LOWBIT_CACHE=off)");
  if (options.mode != CacheMode::Off && !options.directory.empty())
    if (Status root = checkCacheRoot(options.directory); !root)
      return std::move(root).takeError();
  return options;
}

//===----------------------------------------------------------------------===//
// Disk entry format
//
//   offset  size  field
//        0     8  magic "LOWBITK\0"
//        8     4  format version (2), little-endian
//       12     4  receipt bytes R
//       16     8  payload bytes P
//       24     8  XXH64 of the receipt
//       32     8  XXH64 of the payload
//       40     R  receipt: the key's serialization, then kernel metadata
//     40+R     P  payload: the binary
//
// The file is exactly 40 + R + P bytes; anything else is a truncated or
// extended file.
//===----------------------------------------------------------------------===//

namespace {

constexpr char kMagic[8] = {'L', 'O', 'W', 'B', 'I', 'T', 'K', '\0'};
// 2: the receipt names its payload's format (payload=raw|jit-gpu-1); jit-gpu-2
// added the workspace size.
constexpr uint32_t kFormatVersion = 2;
constexpr size_t kHeaderBytes = 40;

void put32(std::string &out, uint32_t value) {
  for (int byte = 0; byte < 4; ++byte)
    out.push_back(char((value >> (8 * byte)) & 0xFF));
}
void put64(std::string &out, uint64_t value) {
  for (int byte = 0; byte < 8; ++byte)
    out.push_back(char((value >> (8 * byte)) & 0xFF));
}
uint64_t get(std::string_view bytes, size_t offset, int width) {
  uint64_t value = 0;
  for (int byte = 0; byte < width; ++byte)
    value |= uint64_t(uint8_t(bytes[offset + size_t(byte)])) << (8 * byte);
  return value;
}

std::string metadataReceipt(const CompiledKernel &kernel) {
  std::string text;
  auto line = [&](std::string_view name, std::string_view value) {
    text.append(name).append("=").append(value).append("\n");
  };
  line("kind", binaryKindName(kernel.kind));
  line("entry", kernel.entryName);
  line("registers", std::to_string(kernel.registers));
  line("spill-stores", std::to_string(kernel.spillStoreBytes));
  line("spill-loads", std::to_string(kernel.spillLoadBytes));
  line("shared", std::to_string(kernel.sharedBytes));
  line("stack", std::to_string(kernel.stackBytes));
  line("payload", payloadFormatName(kernel.payloadFormat));
  line("payload-bytes", std::to_string(kernel.binary.size()));
  return text;
}

/// The value of `name=` in a line-based receipt, or nullopt.
std::optional<std::string_view> receiptValue(std::string_view receipt,
                                             std::string_view name) {
  size_t position = 0;
  while (position < receipt.size()) {
    size_t end = receipt.find('\n', position);
    if (end == std::string_view::npos)
      end = receipt.size();
    std::string_view line = receipt.substr(position, end - position);
    if (line.size() > name.size() && line.substr(0, name.size()) == name &&
        line[name.size()] == '=')
      return line.substr(name.size() + 1);
    position = end + 1;
  }
  return std::nullopt;
}

std::optional<int> parseInt(std::string_view text) {
  if (text.empty())
    return std::nullopt;
  bool negative = text.front() == '-';
  if (negative)
    text.remove_prefix(1);
  if (text.empty() || text.size() > 10)
    return std::nullopt;
  int64_t value = 0;
  for (char digit : text) {
    if (digit < '0' || digit > '9')
      return std::nullopt;
    value = value * 10 + (digit - '0');
  }
  if (negative)
    value = -value;
  // Ten digits can exceed an int: refused, not narrowed.
  if (value < INT32_MIN || value > INT32_MAX)
    return std::nullopt;
  return int(value);
}

/// The first line where two receipts differ, for a message a person can act
/// on ("lowbit=0.1.0" vs "lowbit=0.2.0").
std::string firstDifferentLine(std::string_view stored,
                               std::string_view expected) {
  size_t storedPos = 0, expectedPos = 0;
  while (storedPos < stored.size() || expectedPos < expected.size()) {
    size_t storedEnd = std::min(stored.find('\n', storedPos), stored.size());
    size_t expectedEnd =
        std::min(expected.find('\n', expectedPos), expected.size());
    std::string_view storedLine =
        storedPos < stored.size()
            ? stored.substr(storedPos, storedEnd - storedPos)
            : std::string_view();
    std::string_view expectedLine =
        expectedPos < expected.size()
            ? expected.substr(expectedPos, expectedEnd - expectedPos)
            : std::string_view();
    if (storedLine != expectedLine)
      return "'" + std::string(storedLine) + "', expected '" +
             std::string(expectedLine) + "'";
    storedPos = storedEnd + 1;
    expectedPos = expectedEnd + 1;
  }
  return "(no difference)";
}

Error corrupt(std::string reason) {
  return makeError(ErrorCode::CorruptEntry, std::move(reason));
}

} // namespace

std::string encodeDiskEntry(const KernelKey &key,
                            const CompiledKernel &kernel) {
  std::string receipt = key.serialize() + metadataReceipt(kernel);
  std::string bytes;
  bytes.reserve(kHeaderBytes + receipt.size() + kernel.binary.size());
  bytes.append(kMagic, sizeof(kMagic));
  put32(bytes, kFormatVersion);
  put32(bytes, uint32_t(receipt.size()));
  put64(bytes, uint64_t(kernel.binary.size()));
  put64(bytes, xxh64(receipt.data(), receipt.size(), 0));
  put64(bytes, xxh64(kernel.binary.data(), kernel.binary.size(), 0));
  bytes.append(receipt);
  bytes.append(kernel.binary);
  return bytes;
}

Expected<CompiledKernel> decodeDiskEntry(std::string_view bytes,
                                         const KernelKey *expectedKey,
                                         DiskEntryInfo *info) {
  if (bytes.size() < kHeaderBytes)
    return corrupt("short file: " + std::to_string(bytes.size()) +
                   " bytes, the header alone is 40");
  if (std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0)
    return corrupt("not a lowbit cache entry (bad magic)");
  uint32_t version = uint32_t(get(bytes, 8, 4));
  if (version != kFormatVersion)
    return corrupt("entry format version " + std::to_string(version) +
                   ", this lowbit reads " + std::to_string(kFormatVersion));
  uint64_t receiptBytes = get(bytes, 12, 4);
  uint64_t payloadBytes = get(bytes, 16, 8);
  // Compare without overflow: a garbage header may hold any sizes.
  if (payloadBytes > bytes.size() ||
      kHeaderBytes + receiptBytes > bytes.size() - payloadBytes ||
      kHeaderBytes + receiptBytes + payloadBytes != bytes.size())
    return corrupt("size mismatch: header says " +
                   std::to_string(kHeaderBytes + receiptBytes + payloadBytes) +
                   " bytes, file has " + std::to_string(bytes.size()) +
                   " (truncated or extended)");
  std::string_view receipt = bytes.substr(kHeaderBytes, receiptBytes);
  std::string_view payload = bytes.substr(kHeaderBytes + receiptBytes);
  if (xxh64(receipt.data(), receipt.size(), 0) != get(bytes, 24, 8))
    return corrupt("receipt checksum mismatch");
  if (xxh64(payload.data(), payload.size(), 0) != get(bytes, 32, 8))
    return corrupt("payload checksum mismatch");

  if (info) {
    info->spec = std::string(receiptValue(receipt, "spec").value_or(""));
    info->chip = std::string(receiptValue(receipt, "chip").value_or(""));
    info->inputDtype = std::string(receiptValue(receipt, "input").value_or(""));
    info->lowbitVersion =
        std::string(receiptValue(receipt, "lowbit").value_or(""));
    info->llvmVersion = std::string(receiptValue(receipt, "llvm").value_or(""));
    info->payloadBytes = payloadBytes;
  }

  if (expectedKey) {
    // The receipt must begin with exactly this key's serialization: a
    // different spec, chip, size class or version is a different kernel,
    // even if the file name (a hash) matches.
    std::string expected = expectedKey->serialize();
    if (receipt.substr(0, expected.size()) != expected)
      return corrupt(
          "receipt names a different key: " +
          firstDifferentLine(receipt.substr(0, expected.size()), expected));
  }

  CompiledKernel kernel;
  std::string_view kind = receiptValue(receipt, "kind").value_or("");
  if (kind == "ptx")
    kernel.kind = BinaryKind::Ptx;
  else if (kind == "cubin")
    kernel.kind = BinaryKind::Cubin;
  else if (kind == "host-object")
    kernel.kind = BinaryKind::HostObject;
  else
    return corrupt("receipt has an unknown binary kind '" + std::string(kind) +
                   "'");
  kernel.entryName = std::string(receiptValue(receipt, "entry").value_or(""));
  auto intField = [&](std::string_view name) {
    return parseInt(receiptValue(receipt, name).value_or("")).value_or(-1);
  };
  kernel.registers = intField("registers");
  kernel.spillStoreBytes = intField("spill-stores");
  kernel.spillLoadBytes = intField("spill-loads");
  kernel.sharedBytes = intField("shared");
  kernel.stackBytes = intField("stack");
  if (receiptValue(receipt, "payload-bytes").value_or("") !=
      std::to_string(payloadBytes))
    return corrupt("receipt's payload-bytes does not match the payload");
  // The checksums prove the bytes are the ones written, not that the
  // writer wrote a payload that parses: check it, so that a malformed one
  // is a corrupt entry (recompiled and replaced), not a failure on every
  // run.
  std::string_view format = receiptValue(receipt, "payload").value_or("");
  if (format == payloadFormatName(PayloadFormat::Raw)) {
    kernel.payloadFormat = PayloadFormat::Raw;
  } else if (format == payloadFormatName(PayloadFormat::JitGpu)) {
    kernel.payloadFormat = PayloadFormat::JitGpu;
    if (Expected<GpuPayload> parsed = decodeGpuPayload(payload); !parsed)
      return corrupt("malformed payload: " + parsed.error().message);
  } else if (format == "jit-gpu-1") {
    return corrupt("payload format jit-gpu-1 was written by an older lowbit "
                   "(no workspace size); this one reads " +
                   std::string(payloadFormatName(PayloadFormat::JitGpu)));
  } else {
    return corrupt("receipt has an unknown payload format '" +
                   std::string(format) + "'");
  }
  kernel.binary.assign(payload.data(), payload.size());
  if (info) {
    info->kind = kernel.kind;
    info->entryName = kernel.entryName;
  }
  return kernel;
}

//===----------------------------------------------------------------------===//
// File system helpers
//===----------------------------------------------------------------------===//

namespace {

std::string errnoText(std::string_view what, const std::string &path) {
  return std::string(what) + " '" + path + "': " + std::strerror(errno);
}

/// What reading an entry's path found.
struct EntryFile {
  enum class State { Missing, Read, Unusable } state = State::Missing;
  std::string bytes;
  /// Why the path cannot be an entry (Unusable).
  std::string problem;
};

/// Reads an entry file. Only a regular file of at most kMaxEntryBytes is
/// read: a FIFO, device or directory at the path is Unusable (opened
/// non-blocking, so a FIFO without a writer cannot hang the caller), and
/// so is a file too large to be an entry (a sparse file claiming terabytes
/// must not be allocated). A missing path is Missing (a plain miss).
EntryFile readEntryFile(const std::string &path) {
  EntryFile result;
  int descriptor = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (descriptor < 0) {
    if (errno == ENOENT || errno == ENOTDIR)
      return result;
    result.state = EntryFile::State::Unusable;
    result.problem = errnoText("cannot open", path);
    return result;
  }
  auto unusable = [&](std::string problem) {
    ::close(descriptor);
    result.state = EntryFile::State::Unusable;
    result.problem = std::move(problem);
    return result;
  };
  struct stat status {};
  if (::fstat(descriptor, &status) != 0)
    return unusable(errnoText("cannot stat", path));
  if (!S_ISREG(status.st_mode))
    return unusable("not a regular file");
  if (status.st_size < 0 || uint64_t(status.st_size) > kMaxEntryBytes)
    return unusable("too large to be an entry (" +
                    std::to_string(status.st_size) + " bytes; the limit is " +
                    std::to_string(kMaxEntryBytes) + ")");
  // One byte more than fstat said, so a file that grew is noticed.
  result.bytes.resize(size_t(status.st_size) + 1);
  size_t filled = 0;
  while (filled < result.bytes.size()) {
    ssize_t count = ::read(descriptor, result.bytes.data() + filled,
                           result.bytes.size() - filled);
    if (count < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (count < 0)
      return unusable(errnoText("cannot read", path));
    if (count == 0)
      break;
    filled += size_t(count);
  }
  ::close(descriptor);
  if (filled > size_t(status.st_size)) {
    result.state = EntryFile::State::Unusable;
    result.problem = "changed size while being read";
    return result;
  }
  result.bytes.resize(filled);
  result.state = EntryFile::State::Read;
  return result;
}

bool writeAll(int descriptor, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t count = ::write(descriptor, bytes.data(), bytes.size());
    if (count < 0 && errno == EINTR)
      continue;
    if (count <= 0)
      return false;
    bytes.remove_prefix(size_t(count));
  }
  return true;
}

constexpr std::string_view kTemporaryPrefix = ".tmp-";

/// Writes `bytes` to `path` so that a reader (another thread or process, or
/// the next run after a crash) sees either no file or the whole file: a
/// temp file in the same directory (rename is atomic only within one file
/// system), fsync'd before the rename so a power loss cannot leave a renamed
/// but empty file, then the directory fsync'd so the rename itself lasts.
Status writeFileDurably(const std::string &directory, const std::string &path,
                        std::string_view bytes) {
  std::error_code code;
  std::filesystem::create_directories(directory, code);
  if (code)
    return makeError(ErrorCode::Io, "cannot create cache directory '" +
                                        directory + "': " + code.message());
  static std::atomic<uint64_t> counter{0};
  std::string temporary = directory + "/" + std::string(kTemporaryPrefix) +
                          std::to_string(::getpid()) + "-" +
                          std::to_string(counter++) + "-" +
                          std::filesystem::path(path).filename().string();
  int descriptor =
      ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (descriptor < 0)
    return makeError(ErrorCode::Io, errnoText("cannot create", temporary));
  bool written = writeAll(descriptor, bytes) && ::fsync(descriptor) == 0;
  std::string failure = written ? "" : errnoText("cannot write", temporary);
  if (::close(descriptor) != 0 && written) {
    written = false;
    failure = errnoText("cannot close", temporary);
  }
  if (written && ::rename(temporary.c_str(), path.c_str()) != 0) {
    written = false;
    failure = errnoText("cannot rename into", path);
  }
  if (!written) {
    ::unlink(temporary.c_str());
    return makeError(ErrorCode::Io, failure);
  }
  int directoryDescriptor =
      ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (directoryDescriptor >= 0) {
    ::fsync(directoryDescriptor); // best effort: the entry is already valid
    ::close(directoryDescriptor);
  }
  return Status::success();
}

std::string entryDirectory(const std::string &root) {
  return root + "/" + std::string(kFormatSubdirectory);
}

/// An exclusive flock(2) on `path` (created if needed), released when the
/// descriptor closes, so a crashed holder never leaves it locked. When the
/// file cannot be created (a read-only directory) nothing is held: then two
/// processes may both compile a key, which costs time, never correctness
/// (entries are written by rename).
class FileLock {
public:
  explicit FileLock(const std::string &path) {
    descriptor =
        ::open(path.c_str(),
               O_RDWR | O_CREAT | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (descriptor < 0)
      return;
    while (::flock(descriptor, LOCK_EX) != 0) {
      if (errno == EINTR)
        continue;
      ::close(descriptor);
      descriptor = -1;
      return;
    }
  }
  FileLock(const FileLock &) = delete;
  FileLock &operator=(const FileLock &) = delete;
  ~FileLock() {
    if (descriptor >= 0)
      ::close(descriptor);
  }
  bool held() const { return descriptor >= 0; }

private:
  int descriptor = -1;
};

} // namespace

//===----------------------------------------------------------------------===//
// KernelCache
//===----------------------------------------------------------------------===//

KernelCache::KernelCache(CacheOptions options) : config(std::move(options)) {}

Expected<KernelCache *> KernelCache::global() {
  // Leaked on purpose: kernels may be launched from static destructors of
  // other libraries, after a function-local static would be gone.
  static Expected<KernelCache *> instance = []() -> Expected<KernelCache *> {
    Expected<CacheOptions> options = CacheOptions::fromEnvironment();
    if (!options)
      return std::move(options).takeError();
    return new KernelCache(std::move(*options));
  }();
  return instance;
}

std::string KernelCache::entryPath(const KernelKey &key) const {
  return entryDirectory(config.directory) + "/" + key.hash().toHex() +
         std::string(kEntrySuffix);
}

std::string KernelCache::lockPath(const KernelKey &key) const {
  return entryDirectory(config.directory) + "/" + key.hash().toHex() +
         std::string(kLockSuffix);
}

std::shared_ptr<const CacheEntry>
KernelCache::lookupMemory(const KernelKey &key) const {
  Shard &shard = shardOf(key);
  std::shared_future<Result> future;
  {
    std::lock_guard<std::mutex> lock(shard.mutex);
    auto found = shard.entries.find(key);
    if (found == shard.entries.end())
      return nullptr;
    future = found->second;
  }
  if (future.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
    return nullptr;
  const Result &result = future.get();
  return result.ok() ? *result : nullptr;
}

void KernelCache::forgetMemory(const KernelKey &key) {
  Shard &shard = shardOf(key);
  std::lock_guard<std::mutex> lock(shard.mutex);
  if (auto found = shard.entries.find(key);
      found != shard.entries.end() &&
      found->second.wait_for(std::chrono::seconds(0)) ==
          std::future_status::ready)
    shard.entries.erase(found);
}

std::shared_ptr<const CacheEntry>
KernelCache::replace(const KernelKey &key, CompiledKernel kernel,
                     CacheEntry::Origin origin) {
  auto entry = std::make_shared<CacheEntry>();
  entry->key = key;
  entry->kernel = std::move(kernel);
  entry->origin = origin;
  if (config.mode == CacheMode::ReadWrite) {
    Status written =
        writeFileDurably(entryDirectory(config.directory), entryPath(key),
                         encodeDiskEntry(key, entry->kernel));
    (written.ok() ? counters.diskWrites : counters.diskWriteFailures)
        .fetch_add(1, std::memory_order_relaxed);
  }
  std::promise<Result> ready;
  ready.set_value(std::shared_ptr<const CacheEntry>(entry));
  Shard &shard = shardOf(key);
  std::lock_guard<std::mutex> lock(shard.mutex);
  shard.entries[key] = ready.get_future().share();
  return entry;
}

Expected<std::shared_ptr<const CacheEntry>>
KernelCache::getOrCompile(const KernelKey &key, CompileFn compile) {
  // 1. Memory: a finished entry, or another thread's compile in flight.
  Shard &shard = shardOf(key);
  std::shared_future<Result> existing;
  {
    std::lock_guard<std::mutex> lock(shard.mutex);
    if (auto found = shard.entries.find(key); found != shard.entries.end())
      existing = found->second;
  }
  if (!existing.valid()) {
    // 2. Not in memory: claim the key, unless another thread claimed it
    //    between the two locks.
    std::promise<Result> promise;
    {
      std::lock_guard<std::mutex> lock(shard.mutex);
      auto [slot, inserted] =
          shard.entries.try_emplace(key, std::shared_future<Result>());
      if (inserted)
        slot->second = promise.get_future().share();
      else
        existing = slot->second;
    }
    if (!existing.valid()) {
      // 3. This thread owns the key: disk, else compile.
      Result result = lookupDiskOrCompile(key, compile);
      promise.set_value(result);
      if (!result.ok()) {
        // Errors are not cached: the next request tries again.
        std::lock_guard<std::mutex> lock(shard.mutex);
        shard.entries.erase(key);
      }
      return result;
    }
  }
  if (existing.wait_for(std::chrono::seconds(0)) == std::future_status::ready)
    counters.memoryHits.fetch_add(1, std::memory_order_relaxed);
  else
    counters.inflightWaits.fetch_add(1, std::memory_order_relaxed);
  return existing.get();
}

KernelCache::Result KernelCache::lookupDiskOrCompile(const KernelKey &key,
                                                     CompileFn compile) {
  std::string path = entryPath(key);
  std::string corruptReason;
  auto readDisk = [&]() -> std::shared_ptr<const CacheEntry> {
    corruptReason.clear();
    EntryFile file = readEntryFile(path);
    if (file.state == EntryFile::State::Missing)
      return nullptr;
    if (file.state == EntryFile::State::Unusable) {
      corruptReason = file.problem;
      return nullptr;
    }
    Expected<CompiledKernel> decoded = decodeDiskEntry(file.bytes, &key);
    if (!decoded) {
      corruptReason = decoded.error().message;
      return nullptr;
    }
    counters.diskHits.fetch_add(1, std::memory_order_relaxed);
    auto entry = std::make_shared<CacheEntry>();
    entry->key = key;
    entry->kernel = std::move(*decoded);
    entry->origin = CacheEntry::Origin::Disk;
    return entry;
  };

  // Held from the second disk lookup until the entry is written, so that
  // several processes missing the same key compile it once.
  std::optional<FileLock> compileLock;
  if (config.mode != CacheMode::Off) {
    if (std::shared_ptr<const CacheEntry> hit = readDisk())
      return hit;
    if (config.mode == CacheMode::ReadWrite) {
      // One lock file per key, as FlashInfer's JIT does: another process
      // compiling this key holds it; when it lets go its entry is there.
      std::error_code ignored;
      std::filesystem::create_directories(entryDirectory(config.directory),
                                          ignored);
      compileLock.emplace(lockPath(key));
      if (compileLock->held())
        if (std::shared_ptr<const CacheEntry> hit = readDisk())
          return hit;
    }
    if (!corruptReason.empty())
      counters.corruptReplaced.fetch_add(1, std::memory_order_relaxed);
  }

  counters.misses.fetch_add(1, std::memory_order_relaxed);
  if (config.mode == CacheMode::MustHit) {
    std::string message = "LOWBIT_CACHE=must-hit: kernel " +
                          key.hash().toHex() +
                          " is not cached (looked in memory and " + path + ")";
    if (!corruptReason.empty())
      message += "; the disk entry is unusable: " + corruptReason;
    message += "\nkey:\n" + key.serialize();
    return makeError(ErrorCode::CacheMiss, std::move(message));
  }

  auto start = std::chrono::steady_clock::now();
  Expected<CompiledKernel> compiled = [&]() -> Expected<CompiledKernel> {
    // The compiler is the caller's code; an exception from it must still
    // publish a result, or every waiting thread would hang.
    try {
      return compile(key);
    } catch (const std::exception &exception) {
      return makeError(ErrorCode::CompileFailed,
                       std::string("compiler threw: ") + exception.what());
    } catch (...) {
      return makeError(ErrorCode::CompileFailed, "compiler threw");
    }
  }();
  double millis = std::chrono::duration<double, std::milli>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  if (!compiled) {
    counters.compileFailures.fetch_add(1, std::memory_order_relaxed);
    Error error = std::move(compiled).takeError();
    error.message = "compiling '" + key.signature().spec + "' for " +
                    key.signature().chip + ": " + error.message;
    return error;
  }
  counters.compiles.fetch_add(1, std::memory_order_relaxed);
  counters.compileMicros.fetch_add(uint64_t(millis * 1000),
                                   std::memory_order_relaxed);

  auto entry = std::make_shared<CacheEntry>();
  entry->key = key;
  entry->kernel = std::move(*compiled);
  entry->compileMillis = millis;
  if (config.mode == CacheMode::ReadWrite) {
    // A failed write costs the next process a compile, nothing more: the
    // kernel is still returned, and the failure is counted.
    Status written = writeFileDurably(entryDirectory(config.directory), path,
                                      encodeDiskEntry(key, entry->kernel));
    (written.ok() ? counters.diskWrites : counters.diskWriteFailures)
        .fetch_add(1, std::memory_order_relaxed);
  }
  return std::shared_ptr<const CacheEntry>(std::move(entry));
}

CacheStats KernelCache::stats() const {
  CacheStats stats;
  stats.memoryHits = counters.memoryHits.load();
  stats.diskHits = counters.diskHits.load();
  stats.misses = counters.misses.load();
  stats.compiles = counters.compiles.load();
  stats.compileFailures = counters.compileFailures.load();
  stats.inflightWaits = counters.inflightWaits.load();
  stats.corruptReplaced = counters.corruptReplaced.load();
  stats.diskWrites = counters.diskWrites.load();
  stats.diskWriteFailures = counters.diskWriteFailures.load();
  stats.compileMillis = double(counters.compileMicros.load()) / 1000.0;
  return stats;
}

Expected<std::vector<DiskEntryInfo>> KernelCache::list() const {
  return listDiskCache(config.directory);
}

Expected<ClearResult> KernelCache::clear() {
  for (Shard &shard : shards) {
    std::lock_guard<std::mutex> lock(shard.mutex);
    shard.entries.clear();
  }
  if (config.mode == CacheMode::Off)
    return ClearResult();
  return clearDiskCache(config.directory);
}

Expected<std::vector<DiskEntryInfo>>
listDiskCache(const std::string &directory) {
  std::vector<DiskEntryInfo> entries;
  if (Status root = checkCacheRoot(directory); !root)
    return std::move(root).takeError();
  std::string entriesDirectory = entryDirectory(directory);
  std::error_code code;
  if (!std::filesystem::exists(entriesDirectory, code))
    return entries;
  std::filesystem::directory_iterator iterator(entriesDirectory, code);
  if (code)
    return makeError(ErrorCode::Io, "cannot list '" + entriesDirectory +
                                        "': " + code.message());
  for (const auto &item : iterator) {
    std::string name = item.path().filename().string();
    if (!name.ends_with(kEntrySuffix) || name.starts_with(kTemporaryPrefix))
      continue;
    DiskEntryInfo info;
    info.path = item.path().string();
    info.hashHex = name.substr(0, name.size() - kEntrySuffix.size());
    EntryFile file = readEntryFile(info.path);
    if (file.state == EntryFile::State::Missing) {
      info.problem = "vanished while listing";
    } else if (file.state == EntryFile::State::Unusable) {
      info.problem = file.problem;
    } else {
      info.fileBytes = file.bytes.size();
      Expected<CompiledKernel> decoded =
          decodeDiskEntry(file.bytes, nullptr, &info);
      info.valid = decoded.ok();
      if (!decoded)
        info.problem = decoded.error().message;
    }
    entries.push_back(std::move(info));
  }
  std::sort(entries.begin(), entries.end(),
            [](const DiskEntryInfo &a, const DiskEntryInfo &b) {
              return a.path < b.path;
            });
  return entries;
}

Expected<ClearResult> clearDiskCache(const std::string &directory) {
  if (Status root = checkCacheRoot(directory); !root)
    return std::move(root).takeError();
  std::string entriesDirectory = entryDirectory(directory);
  ClearResult result;
  std::error_code code;
  if (!std::filesystem::exists(entriesDirectory, code))
    return result;
  std::filesystem::directory_iterator iterator(entriesDirectory, code);
  if (code)
    return makeError(ErrorCode::Io, "cannot list '" + entriesDirectory +
                                        "': " + code.message());
  // Only lowbit's own files: a mistyped LOWBIT_CACHE_DIR must not wipe
  // someone's directory. A file that cannot be removed is reported and the
  // rest are still removed.
  for (const auto &item : iterator) {
    std::string name = item.path().filename().string();
    if (!name.ends_with(kEntrySuffix) && !name.ends_with(kLockSuffix) &&
        !name.starts_with(kTemporaryPrefix))
      continue;
    if (std::filesystem::remove(item.path(), code))
      ++result.removed;
    else if (code)
      result.failures.push_back("cannot remove '" + item.path().string() +
                                "': " + code.message());
  }
  return result;
}

} // namespace lowbit::runtime
