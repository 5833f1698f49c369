// The kernel cache: memory and disk hits, receipts and checksums, one
// compile per key under concurrency, must-hit, list and clear. The compiler
// is a counting fake injected through CompileFn.

#include "runtime/cache/KernelCache.h"

#include "runtime/cache/GpuPayload.h"

#include <catch2/catch.hpp>

#include <csignal>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

using namespace lowbit;
using namespace lowbit::runtime;

namespace {

/// A fresh directory per test, removed afterwards.
struct TemporaryDirectory {
  std::string path;
  TemporaryDirectory() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "lowbit-cache-XXXXXX")
            .string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TemporaryDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

KernelKey keyFor(std::string spec, std::string lowbit = "") {
  KernelSignature signature;
  signature.spec = std::move(spec);
  signature.chip = "sm_90a";
  signature.features = "+ptx86";
  signature.inputDtype = "f32";
  signature.llvmVersion = "22.1.8";
  if (!lowbit.empty())
    signature.lowbitVersion = std::move(lowbit);
  auto prepared = prepareSignature(std::move(signature));
  REQUIRE(prepared.ok());
  return makeKernelKey(*prepared, 128, 256, std::span<const void *const>());
}

/// The fake compiler: counts calls, returns PTX naming the spec.
struct CountingCompiler {
  std::atomic<int> calls{0};
  Expected<CompiledKernel> operator()(const KernelKey &key) {
    ++calls;
    CompiledKernel kernel;
    kernel.kind = BinaryKind::Ptx;
    kernel.entryName = "lowbit_kernel";
    kernel.binary =
        "// ptx for " + key.signature().spec + "\n" + std::string(1000, 'p');
    kernel.registers = 32;
    kernel.sharedBytes = 0;
    return kernel;
  }
};

std::string readBytes(const std::string &path) {
  std::ifstream stream(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(stream), {});
}
void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream stream(path, std::ios::binary | std::ios::trunc);
  stream.write(bytes.data(), std::streamsize(bytes.size()));
}

CacheOptions optionsFor(const TemporaryDirectory &directory,
                        CacheMode mode = CacheMode::ReadWrite) {
  return CacheOptions{directory.path, mode};
}

} // namespace

TEST_CASE("A second request is a memory hit and compiles nothing",
          "[runtime][cache]") {
  TemporaryDirectory directory;
  KernelCache cache(optionsFor(directory));
  CountingCompiler compiler;
  KernelKey key = keyFor("quantize int8");
  auto first = cache.getOrCompile(key, compiler);
  REQUIRE(first.ok());
  CHECK((*first)->origin == CacheEntry::Origin::Compiled);
  auto second = cache.getOrCompile(key, compiler);
  REQUIRE(second.ok());
  CHECK(first->get() == second->get());
  CHECK(compiler.calls == 1);
  CacheStats stats = cache.stats();
  CHECK(stats.compiles == 1);
  CHECK(stats.misses == 1);
  CHECK(stats.memoryHits == 1);
  CHECK(stats.diskWrites == 1);
  CHECK(cache.lookupMemory(key) == *second);
}

TEST_CASE("A new process finds the entry on disk with its metadata",
          "[runtime][cache]") {
  TemporaryDirectory directory;
  KernelKey key = keyFor("quantize mxfp4");
  CountingCompiler compiler;
  {
    KernelCache writer(optionsFor(directory));
    REQUIRE(writer.getOrCompile(key, compiler).ok());
  }
  KernelCache reader(optionsFor(directory));
  auto entry = reader.getOrCompile(key, compiler);
  REQUIRE(entry.ok());
  CHECK(compiler.calls == 1);
  CHECK((*entry)->origin == CacheEntry::Origin::Disk);
  CHECK((*entry)->kernel.entryName == "lowbit_kernel");
  CHECK((*entry)->kernel.registers == 32);
  CHECK((*entry)->kernel.sharedBytes == 0);
  CHECK((*entry)->kernel.spillStoreBytes == -1);
  CHECK((*entry)->kernel.binary.starts_with("// ptx for quantize mxfp4"));
  CHECK(reader.stats().diskHits == 1);
  CHECK(reader.stats().compiles == 0);
  // The file is where entryPath says, named by the key's hash.
  CHECK(std::filesystem::exists(reader.entryPath(key)));
  CHECK(reader.entryPath(key).ends_with(key.hash().toHex() + ".lbk"));
}

TEST_CASE("Corrupt, truncated and mismatched entries are recompiled and "
          "replaced, never returned",
          "[runtime][cache]") {
  KernelKey key = keyFor("quantize nvfp4");
  KernelKey otherKey = keyFor("quantize nvfp4", "0.0.1");
  struct Damage {
    const char *name;
    std::function<std::string(const std::string &good,
                              const std::string &other)>
        apply;
    const char *reason;
  };
  std::vector<Damage> damages = {
      {"empty file", [](auto &, auto &) { return std::string(); },
       "short file"},
      {"short file", [](auto &good, auto &) { return good.substr(0, 20); },
       "short file"},
      {"truncated payload",
       [](auto &good, auto &) { return good.substr(0, good.size() - 7); },
       "size mismatch"},
      {"extended file", [](auto &good, auto &) { return good + "x"; },
       "size mismatch"},
      {"garbage header",
       [](auto &good, auto &) {
         std::string bad = good;
         for (int index = 0; index < 8; ++index)
           bad[size_t(index)] = char(0xA5);
         return bad;
       },
       "bad magic"},
      {"huge sizes in header",
       [](auto &good, auto &) {
         std::string bad = good;
         for (int index = 16; index < 24; ++index)
           bad[size_t(index)] = char(0xFF);
         return bad;
       },
       "size mismatch"},
      {"format version",
       [](auto &good, auto &) {
         std::string bad = good;
         bad[8] = 9;
         return bad;
       },
       "format version"},
      {"flipped payload byte",
       [](auto &good, auto &) {
         std::string bad = good;
         bad[bad.size() - 3] ^= 0x01;
         return bad;
       },
       "payload checksum"},
      {"flipped receipt byte",
       [](auto &good, auto &) {
         std::string bad = good;
         bad[45] ^= 0x20;
         return bad;
       },
       "receipt checksum"},
      {"another version's entry under this name",
       [](auto &, auto &other) { return other; }, "lowbit=0.0.1"},
  };
  for (const Damage &damage : damages) {
    DYNAMIC_SECTION(damage.name) {
      TemporaryDirectory directory;
      CountingCompiler compiler;
      std::string good, other;
      {
        KernelCache writer(optionsFor(directory));
        REQUIRE(writer.getOrCompile(key, compiler).ok());
        REQUIRE(writer.getOrCompile(otherKey, compiler).ok());
        good = readBytes(writer.entryPath(key));
        other = readBytes(writer.entryPath(otherKey));
      }
      KernelCache reader(optionsFor(directory));
      std::string damaged = damage.apply(good, other);
      writeBytes(reader.entryPath(key), damaged);

      // The decoder names the problem.
      auto decoded = decodeDiskEntry(damaged, &key);
      REQUIRE_FALSE(decoded.ok());
      CHECK(decoded.error().code == ErrorCode::CorruptEntry);
      CHECK_THAT(decoded.error().message,
                 Catch::Matchers::Contains(damage.reason));

      auto entry = reader.getOrCompile(key, compiler);
      REQUIRE(entry.ok());
      CHECK((*entry)->origin == CacheEntry::Origin::Compiled);
      CHECK((*entry)->kernel.binary.starts_with("// ptx for quantize nvfp4"));
      CHECK(compiler.calls == 3);
      CHECK(reader.stats().corruptReplaced == 1);
      // Replaced on disk: the next process gets a valid entry again.
      CHECK(readBytes(reader.entryPath(key)) == good);
    }
  }
}

TEST_CASE("N threads asking for M kernels compile exactly M times",
          "[runtime][cache]") {
  TemporaryDirectory directory;
  KernelCache cache(optionsFor(directory));
  constexpr int kThreads = 8, kSpecs = 5, kRounds = 20;
  std::vector<KernelKey> keys;
  for (int spec = 0; spec < kSpecs; ++spec)
    keys.push_back(keyFor("quantize int8_g64 #" + std::to_string(spec)));
  std::atomic<int> calls{0};
  // A slow compiler widens the window in which the threads collide.
  auto slowCompiler = [&](const KernelKey &key) -> Expected<CompiledKernel> {
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CompiledKernel kernel;
    kernel.binary = key.signature().spec;
    return kernel;
  };
  std::barrier start(kThreads);
  std::atomic<int> failures{0}, wrongKernel{0};
  std::vector<std::thread> threads;
  for (int thread = 0; thread < kThreads; ++thread)
    threads.emplace_back([&, thread] {
      start.arrive_and_wait();
      for (int round = 0; round < kRounds; ++round) {
        const KernelKey &key = keys[size_t((thread + round) % kSpecs)];
        auto entry = cache.getOrCompile(key, slowCompiler);
        if (!entry.ok())
          ++failures;
        else if ((*entry)->kernel.binary != key.signature().spec)
          ++wrongKernel;
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  CHECK(failures == 0);
  CHECK(wrongKernel == 0);
  CHECK(calls == kSpecs);
  CacheStats stats = cache.stats();
  CHECK(stats.compiles == uint64_t(kSpecs));
  CHECK(stats.misses == uint64_t(kSpecs));
  CHECK(stats.memoryHits + stats.inflightWaits ==
        uint64_t(kThreads * kRounds - kSpecs));
}

TEST_CASE("A failed compile is reported to every waiter and not cached",
          "[runtime][cache]") {
  TemporaryDirectory directory;
  KernelCache cache(optionsFor(directory));
  KernelKey key = keyFor("quantize e9m9");
  int calls = 0;
  auto failing = [&](const KernelKey &) -> Expected<CompiledKernel> {
    ++calls;
    return makeError(ErrorCode::CompileFailed, "no such format e9m9");
  };
  auto first = cache.getOrCompile(key, failing);
  REQUIRE_FALSE(first.ok());
  CHECK(first.error().code == ErrorCode::CompileFailed);
  CHECK_THAT(first.error().message,
             Catch::Matchers::Contains("quantize e9m9") &&
                 Catch::Matchers::Contains("no such format"));
  CHECK_FALSE(cache.getOrCompile(key, failing).ok());
  CHECK(calls == 2);
  CHECK(cache.stats().compileFailures == 2);
  CHECK_FALSE(std::filesystem::exists(cache.entryPath(key)));
  // A compiler that throws is an error value too.
  auto throwing = [](const KernelKey &) -> Expected<CompiledKernel> {
    throw std::runtime_error("boom");
  };
  auto thrown = cache.getOrCompile(keyFor("quantize boom"), throwing);
  REQUIRE_FALSE(thrown.ok());
  CHECK_THAT(thrown.error().message, Catch::Matchers::Contains("boom"));
}

TEST_CASE("must-hit turns a miss into an error naming the key",
          "[runtime][cache]") {
  TemporaryDirectory directory;
  CountingCompiler compiler;
  KernelKey cached = keyFor("quantize fp8_e4m3");
  {
    KernelCache writer(optionsFor(directory));
    REQUIRE(writer.getOrCompile(cached, compiler).ok());
  }
  KernelCache mustHit(optionsFor(directory, CacheMode::MustHit));
  CHECK(mustHit.getOrCompile(cached, compiler).ok());
  KernelKey missing = keyFor("quantize fp8_e5m2");
  auto miss = mustHit.getOrCompile(missing, compiler);
  REQUIRE_FALSE(miss.ok());
  CHECK(miss.error().code == ErrorCode::CacheMiss);
  CHECK_THAT(miss.error().message,
             Catch::Matchers::Contains("must-hit") &&
                 Catch::Matchers::Contains(missing.hash().toHex()) &&
                 Catch::Matchers::Contains("spec=quantize fp8_e5m2"));
  CHECK(compiler.calls == 1);

  // A corrupt entry is a miss too, and the message says why.
  writeBytes(mustHit.entryPath(cached), "garbage");
  KernelCache fresh(optionsFor(directory, CacheMode::MustHit));
  auto corrupt = fresh.getOrCompile(cached, compiler);
  REQUIRE_FALSE(corrupt.ok());
  CHECK_THAT(corrupt.error().message, Catch::Matchers::Contains("short file"));
}

TEST_CASE("off keeps kernels in memory only, readonly never writes",
          "[runtime][cache]") {
  TemporaryDirectory directory;
  CountingCompiler compiler;
  KernelKey key = keyFor("quantize mxfp8");
  KernelCache off(optionsFor(directory, CacheMode::Off));
  REQUIRE(off.getOrCompile(key, compiler).ok());
  REQUIRE(off.getOrCompile(key, compiler).ok());
  CHECK(compiler.calls == 1);
  CHECK_FALSE(std::filesystem::exists(off.entryPath(key)));

  KernelCache readOnly(optionsFor(directory, CacheMode::ReadOnly));
  REQUIRE(readOnly.getOrCompile(key, compiler).ok());
  CHECK(compiler.calls == 2);
  CHECK_FALSE(std::filesystem::exists(readOnly.entryPath(key)));
  CHECK(readOnly.stats().diskWrites == 0);
}

TEST_CASE("An unwritable directory costs a compile, not an error",
          "[runtime][cache]") {
  TemporaryDirectory directory;
  std::string file = directory.path + "/not-a-directory";
  writeBytes(file, "x");
  KernelCache cache(CacheOptions{file, CacheMode::ReadWrite});
  CountingCompiler compiler;
  auto entry = cache.getOrCompile(keyFor("quantize int8"), compiler);
  REQUIRE(entry.ok());
  CHECK(cache.stats().diskWriteFailures == 1);
}

TEST_CASE("list shows every entry with its receipt, clear removes them",
          "[runtime][cache]") {
  TemporaryDirectory directory;
  KernelCache cache(optionsFor(directory));
  CountingCompiler compiler;
  REQUIRE(cache.getOrCompile(keyFor("quantize int8"), compiler).ok());
  REQUIRE(cache.getOrCompile(keyFor("quantize mxfp4"), compiler).ok());
  KernelKey broken = keyFor("quantize nvfp4");
  REQUIRE(cache.getOrCompile(broken, compiler).ok());
  writeBytes(cache.entryPath(broken), "LOWBITK");
  // A stale temp file from a crashed writer.
  writeBytes(directory.path + "/v1/.tmp-1-0-dead.lbk", "partial");

  auto listed = cache.list();
  REQUIRE(listed.ok());
  REQUIRE(listed->size() == 3);
  int valid = 0;
  for (const DiskEntryInfo &info : *listed) {
    if (info.valid) {
      ++valid;
      CHECK(info.chip == "sm_90a");
      CHECK(info.inputDtype == "f32");
      CHECK(info.kind == BinaryKind::Ptx);
      CHECK(info.entryName == "lowbit_kernel");
      CHECK(info.lowbitVersion == std::string(lowbitVersion()));
      CHECK(info.spec.starts_with("quantize "));
    } else {
      CHECK_THAT(info.problem, Catch::Matchers::Contains("short file"));
    }
  }
  CHECK(valid == 2);

  auto removed = cache.clear();
  REQUIRE(removed.ok());
  // 3 entries, their 3 lock files and the temp file.
  CHECK(removed->removed == 7);
  CHECK(removed->failures.empty());
  CHECK(listDiskCache(directory.path)->empty());
  CHECK(cache.lookupMemory(keyFor("quantize int8")) == nullptr);
  // clear() touches only lowbit's files.
  writeBytes(directory.path + "/v1/notes.txt", "keep me");
  CHECK(clearDiskCache(directory.path)->removed == 0);
  CHECK(std::filesystem::exists(directory.path + "/v1/notes.txt"));
}

TEST_CASE("The environment selects the directory and the mode",
          "[runtime][cache]") {
  ::setenv("LOWBIT_CACHE_DIR", "/tmp/lowbit-env-test", 1);
  ::setenv("LOWBIT_CACHE", "must-hit", 1);
  auto options = CacheOptions::fromEnvironment();
  REQUIRE(options.ok());
  CHECK(options->directory == "/tmp/lowbit-env-test");
  CHECK(options->mode == CacheMode::MustHit);
  ::setenv("LOWBIT_CACHE", "sometimes", 1);
  auto invalid = CacheOptions::fromEnvironment();
  REQUIRE_FALSE(invalid.ok());
  CHECK_THAT(invalid.error().message, Catch::Matchers::Contains("sometimes"));
  ::unsetenv("LOWBIT_CACHE");
  ::unsetenv("LOWBIT_CACHE_DIR");
  ::setenv("HOME", "/home/someone", 1);
  ::unsetenv("XDG_CACHE_HOME");
  auto defaults = CacheOptions::fromEnvironment();
  REQUIRE(defaults.ok());
  CHECK(defaults->directory == "/home/someone/.cache/lowbit");
  CHECK(defaults->mode == CacheMode::ReadWrite);
}

TEST_CASE("Only regular files of bounded size are read", "[runtime][cache]") {
  // A hang here would be the bug: fail instead of waiting forever.
  ::alarm(60);
  TemporaryDirectory directory;
  KernelKey key = keyFor("quantize mxfp4");
  CountingCompiler compiler;
  std::string good;
  {
    KernelCache writer(optionsFor(directory));
    REQUIRE(writer.getOrCompile(key, compiler).ok());
    good = readBytes(writer.entryPath(key));
  }
  SECTION("a FIFO at the entry's path") {
    KernelCache cache(optionsFor(directory));
    std::string path = cache.entryPath(key);
    std::filesystem::remove(path);
    REQUIRE(::mkfifo(path.c_str(), 0644) == 0);
    auto listed = listDiskCache(directory.path);
    REQUIRE(listed.ok());
    REQUIRE(listed->size() == 1);
    CHECK_FALSE(listed->front().valid);
    CHECK_THAT(listed->front().problem,
               Catch::Matchers::Contains("not a regular file"));
    auto entry = cache.getOrCompile(key, compiler);
    REQUIRE(entry.ok());
    CHECK(compiler.calls == 2);
    CHECK(cache.stats().corruptReplaced == 1);
    // Replaced by a regular file holding the entry.
    CHECK(readBytes(path) == good);
  }
  SECTION("a huge sparse file at the entry's path") {
    KernelCache cache(optionsFor(directory));
    std::string path = cache.entryPath(key);
    REQUIRE(::truncate(path.c_str(), off_t(1) << 40) == 0);
    auto listed = listDiskCache(directory.path);
    REQUIRE(listed.ok());
    CHECK_THAT(listed->front().problem,
               Catch::Matchers::Contains("too large to be an entry"));
    auto entry = cache.getOrCompile(key, compiler);
    REQUIRE(entry.ok());
    CHECK(compiler.calls == 2);
    CHECK(readBytes(path) == good);
  }
  ::alarm(0);
}

TEST_CASE("A payload that does not parse is a corrupt entry",
          "[runtime][cache]") {
  TemporaryDirectory directory;
  KernelKey key = keyFor("quantize nvfp4");
  // Valid checksums around a GPU payload that is not one.
  CompiledKernel malformed;
  malformed.kind = BinaryKind::Cubin;
  malformed.payloadFormat = PayloadFormat::JitGpu;
  malformed.binary = "lowbit-jit-gpu 2\nplan 5\nab";
  std::string bytes = encodeDiskEntry(key, malformed);
  auto decoded = decodeDiskEntry(bytes, &key);
  REQUIRE_FALSE(decoded.ok());
  CHECK_THAT(decoded.error().message,
             Catch::Matchers::Contains("malformed payload"));

  // A well-formed one decodes.
  CompiledKernel wellFormed = malformed;
  wellFormed.binary = encodeGpuPayload({"plan", "// ptx", ""});
  CHECK(decodeDiskEntry(encodeDiskEntry(key, wellFormed), &key).ok());

  KernelCache cache(optionsFor(directory));
  std::filesystem::create_directories(directory.path + "/v1");
  writeBytes(cache.entryPath(key), bytes);
  auto listed = cache.list();
  REQUIRE(listed.ok());
  REQUIRE(listed->size() == 1);
  CHECK_FALSE(listed->front().valid);
  CHECK_THAT(listed->front().problem,
             Catch::Matchers::Contains("malformed payload"));

  CountingCompiler compiler;
  auto entry = cache.getOrCompile(key, compiler);
  REQUIRE(entry.ok());
  CHECK((*entry)->origin == CacheEntry::Origin::Compiled);
  CHECK(compiler.calls == 1);
  CHECK(cache.stats().corruptReplaced == 1);
  // Replaced: the next process reads a valid entry.
  auto relisted = cache.list();
  REQUIRE(relisted.ok());
  CHECK(relisted->front().valid);
}

TEST_CASE("The GPU payload keeps the workspace size and refuses format 1",
          "[runtime][cache]") {
  GpuPayload payload{"plan text", "// ptx", "cubin bytes", 4};
  Expected<GpuPayload> decoded = decodeGpuPayload(encodeGpuPayload(payload));
  REQUIRE(decoded.ok());
  CHECK(decoded->plan == "plan text");
  CHECK(decoded->ptx == "// ptx");
  CHECK(decoded->cubin == "cubin bytes");
  CHECK(decoded->workspaceWords == 4);

  // What lowbit wrote before the workspace section: refused by name.
  auto old = decodeGpuPayload("lowbit-jit-gpu 1\nplan 0\nptx 6\n// ptx"
                              "cubin 0\n");
  REQUIRE_FALSE(old.ok());
  CHECK(old.error().code == ErrorCode::CorruptEntry);
  CHECK_THAT(old.error().message, Catch::Matchers::Contains("format 1"));
  // A workspace section that is not a count.
  std::string bad = encodeGpuPayload(payload);
  std::string_view count = "workspace 1\n4";
  bad.replace(bad.find(count), count.size(), "workspace 1\nx");
  auto garbled = decodeGpuPayload(bad);
  REQUIRE_FALSE(garbled.ok());
  CHECK_THAT(garbled.error().message, Catch::Matchers::Contains("workspace"));
}

TEST_CASE("The GPU payload keeps a workspace that grows with X",
          "[runtime][cache]") {
  GpuPayload payload{"plan text", "// ptx", "", 16, {1, 8}};
  std::string encoded = encodeGpuPayload(payload);
  CHECK_THAT(encoded, Catch::Matchers::Contains("workspace 6\n16 1 8"));
  Expected<GpuPayload> decoded = decodeGpuPayload(encoded);
  REQUIRE(decoded.ok());
  CHECK(decoded->workspaceWords == 16);
  CHECK(decoded->workspaceRows == workspace_abi::RowWords{1, 8});
  // A fixed size is written as before: one count.
  Expected<GpuPayload> fixed =
      decodeGpuPayload(encodeGpuPayload({"p", "// ptx", "", 4}));
  REQUIRE(fixed.ok());
  CHECK_FALSE(fixed->workspaceRows.any());

  // Two counts, a zero row part written out, a negative or a fourth
  // count, more bits than a word pair holds: corrupt, by name.
  for (std::string_view section :
       {"16 1", "16 0 0", "16 -1 8", "16 1 8 9", "16 1 65", "16  1 8",
        "16 1 8 ", "1073741825"}) {
    std::string bad = encoded;
    bad.replace(bad.find("workspace 6\n16 1 8"), 18,
                "workspace " + std::to_string(section.size()) + "\n" +
                    std::string(section));
    Expected<GpuPayload> garbled = decodeGpuPayload(bad);
    CAPTURE(section);
    REQUIRE_FALSE(garbled.ok());
    CHECK(garbled.error().code == ErrorCode::CorruptEntry);
    CHECK_THAT(garbled.error().message, Catch::Matchers::Contains("workspace"));
  }
}

TEST_CASE("Processes compiling one key compile it once", "[runtime][cache]") {
  TemporaryDirectory directory;
  std::string counter = directory.path + "/compiles";
  constexpr int kProcesses = 4;
  std::vector<pid_t> children;
  for (int i = 0; i < kProcesses; ++i) {
    pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      // Each child: its own cache object on the shared directory; the
      // compiler appends one byte per compile and takes its time, so that
      // the others are waiting while it runs.
      KernelCache cache(optionsFor(directory));
      auto slow = [&](const KernelKey &key) -> Expected<CompiledKernel> {
        int descriptor =
            ::open(counter.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (descriptor >= 0) {
          [[maybe_unused]] ssize_t ignored = ::write(descriptor, "c", 1);
          ::close(descriptor);
        }
        ::usleep(300 * 1000);
        CompiledKernel kernel;
        kernel.binary = "// ptx for " + key.signature().spec;
        return kernel;
      };
      auto entry = cache.getOrCompile(keyFor("quantize mxfp8"), slow);
      ::_exit(entry.ok() ? 0 : 1);
    }
    children.push_back(child);
  }
  for (pid_t child : children) {
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  CHECK(readBytes(counter) == "c");
}

TEST_CASE("clear removes what it can and names what it cannot",
          "[runtime][cache]") {
  TemporaryDirectory directory;
  KernelCache cache(optionsFor(directory));
  CountingCompiler compiler;
  REQUIRE(cache.getOrCompile(keyFor("quantize int8"), compiler).ok());
  REQUIRE(cache.getOrCompile(keyFor("quantize mxfp4"), compiler).ok());
  // A non-empty directory with an entry's name cannot be removed; the
  // entries are still removed, whatever order the directory lists them in.
  std::filesystem::create_directories(directory.path +
                                      "/v1/00000000.lbk/inside");
  auto cleared = clearDiskCache(directory.path);
  REQUIRE(cleared.ok());
  CHECK(cleared->removed == 4); // 2 entries, 2 lock files
  REQUIRE(cleared->failures.size() == 1);
  CHECK_THAT(cleared->failures.front(),
             Catch::Matchers::Contains("00000000.lbk"));
  auto listed = listDiskCache(directory.path);
  REQUIRE(listed.ok());
  REQUIRE(listed->size() == 1);
  CHECK_THAT(listed->front().problem,
             Catch::Matchers::Contains("not a regular file"));
}
