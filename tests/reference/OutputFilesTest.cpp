//===- OutputFilesTest.cpp - Output sets, checksums, sizes ----------------===//
//
// The runtime core's pieces behind `lowbit quantize --out`: SHA-256, the
// directory swap (runtime/core/AtomicDirectory.h), the sweep of dead
// writers' temporaries, JSON's refusal of duplicate keys, and the size
// bounds of the scheme model (format/Scheme.h).
//
//===----------------------------------------------------------------------===//

#include "format/Scheme.h"
#include "runtime/core/AtomicDirectory.h"
#include "runtime/core/AtomicFile.h"
#include "runtime/core/Json.h"
#include "runtime/core/Sha256.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace lowbit;
namespace fs = std::filesystem;

namespace {

fs::path scratchDir(const char *name) {
  fs::path dir = fs::temp_directory_path() / (std::string("lowbit-") + name +
                                              "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string readAll(const fs::path &path) {
  std::ifstream stream(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(stream), {});
}

/// The pid of a process that has exited (and been reaped).
long deadPid() {
  pid_t child = ::fork();
  if (child == 0)
    ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return long(child);
}

bool acceptAll(std::string_view) { return true; }

} // namespace

TEST_CASE("sha256: FIPS 180-4 test vectors", "[output][sha256]") {
  CHECK(runtime::sha256Hex("") ==
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(runtime::sha256Hex("abc") ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(runtime::sha256Hex(
            "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(runtime::sha256Hex(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // 55 and 56 bytes: the padding fits one block, or needs a second.
  CHECK(runtime::sha256Hex(std::string(55, 'x')) ==
        "d5e285683cd4efc02d021a5c62014694958901005d6f71e89e0989fac77e4072");
  CHECK(runtime::sha256Hex(std::string(56, 'x')) ==
        "04c26261370ee7541549d16dee320c723e3fd14671e66a099afe0a377c16888e");
}

TEST_CASE("a directory is replaced whole", "[output][directory]") {
  fs::path dir = scratchDir("dirswap");
  fs::path target = dir / "out";
  std::string error;
  // A fresh target, under a parent that does not exist yet.
  fs::path nested = dir / "new" / "parent" / "out";
  REQUIRE(runtime::replaceDirectory(nested.string(), {{"a", "1"}}, acceptAll,
                                    &error));
  CHECK(readAll(nested / "a") == "1");
  REQUIRE(runtime::replaceDirectory(target.string(), {{"a", "1"}, {"b", "2"}},
                                    acceptAll, &error));
  // The new set has no "b": it is gone, not left over from the old one.
  REQUIRE(runtime::replaceDirectory(target.string() + "/", {{"a", "3"}},
                                    acceptAll, &error));
  CHECK(readAll(target / "a") == "3");
  CHECK_FALSE(fs::exists(target / "b"));
  // Nothing but the target is left in the parent.
  std::vector<std::string> names;
  for (const auto &entry : fs::directory_iterator(dir))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"new", "out"});
  // A directory holding something the caller does not own is refused and
  // left as it was.
  std::ofstream(target / "notes.txt") << "mine";
  auto onlyA = [](std::string_view name) { return name == "a"; };
  CHECK_FALSE(
      runtime::replaceDirectory(target.string(), {{"a", "4"}}, onlyA, &error));
  CHECK(error.find("holds 'notes.txt'") != std::string::npos);
  CHECK(readAll(target / "a") == "3");
  // A file name with '/' fails at the write, and leaves nothing behind.
  fs::remove(target / "notes.txt");
  CHECK_FALSE(runtime::replaceDirectory(
      target.string(), {{"a", "5"}, {"no/such", "x"}}, acceptAll, &error));
  CHECK(error.find("cannot create") == 0);
  CHECK(readAll(target / "a") == "3");
  names.clear();
  for (const auto &entry : fs::directory_iterator(dir))
    names.push_back(entry.path().filename().string());
  CHECK(names.size() == 2);
  fs::remove_all(dir);
}

TEST_CASE("dead writers' temporaries are swept, live ones kept",
          "[output][sweep]") {
  fs::path dir = scratchDir("sweep");
  long dead = deadPid();
  long alive = long(::getpid());
  fs::path deadDir = dir / (".out.lowbit-tmp." + std::to_string(dead) + ".0");
  fs::path liveDir = dir / (".out.lowbit-tmp." + std::to_string(alive) + ".7");
  fs::path otherDir =
      dir / (".other.lowbit-tmp." + std::to_string(dead) + ".0");
  for (const fs::path &path : {deadDir, liveDir, otherDir}) {
    fs::create_directories(path);
    std::ofstream(path / "q.npy") << "x";
  }
  runtime::sweepStaleDirectories((dir / "out").string());
  CHECK_FALSE(fs::exists(deadDir));
  CHECK(fs::exists(liveDir));
  CHECK(fs::exists(otherDir)); // another target's

  fs::path deadFile = dir / ("y.npy.tmp." + std::to_string(dead) + ".3");
  fs::path liveFile = dir / ("y.npy.tmp." + std::to_string(alive) + ".3");
  std::ofstream(deadFile) << "x";
  std::ofstream(liveFile) << "x";
  runtime::sweepStaleTemporaries((dir / "y.npy").string());
  CHECK_FALSE(fs::exists(deadFile));
  CHECK(fs::exists(liveFile));
  fs::remove_all(dir);
}

TEST_CASE("a directory reader reads through one descriptor",
          "[output][directory]") {
  fs::path dir = scratchDir("reader");
  fs::path target = dir / "out";
  std::string error;
  REQUIRE(runtime::replaceDirectory(target.string(), {{"a", "old"}}, acceptAll,
                                    &error));
  runtime::DirectoryReader reader;
  REQUIRE(reader.open(target.string(), &error));
  CHECK(reader.stillAt());
  // A writer swaps a new set in: the reader still sees the old directory,
  // whole or (once it is removed) not at all, never the new file.
  REQUIRE(runtime::replaceDirectory(target.string(), {{"a", "new"}}, acceptAll,
                                    &error));
  CHECK_FALSE(reader.stillAt());
  std::string bytes;
  CHECK_FALSE(reader.read("a", 100, bytes, &error));
  // Limits: a file larger than expected, and a FIFO, are refused.
  runtime::DirectoryReader fresh;
  REQUIRE(fresh.open(target.string(), &error));
  CHECK_FALSE(fresh.read("a", 2, bytes, &error));
  CHECK(error.find("more than the 2 expected") != std::string::npos);
  REQUIRE(::mkfifo((target / "fifo").c_str(), 0600) == 0);
  CHECK_FALSE(fresh.read("fifo", 100, bytes, &error));
  CHECK(error.find("is not a regular file") != std::string::npos);
  REQUIRE(fresh.read("a", 100, bytes, &error));
  CHECK(bytes == "new");
  fs::remove_all(dir);
}

TEST_CASE("json: a key given twice is refused", "[output][json]") {
  std::string error;
  CHECK_FALSE(json::parseJson(R"({"cols": 37, "cols": 36})", &error));
  CHECK(error.find("duplicate key \"cols\"") != std::string::npos);
  CHECK(json::parseJson(R"({"a": {"cols": 1}, "cols": 2})", &error));
}

TEST_CASE("json: a raw control character in a string is refused",
          "[output][json]") {
  std::string error;
  CHECK_FALSE(json::parseJson("{\"a\": \"x\x1b[2Jy\"}", &error));
  CHECK(error == "JSON: control character in a string at byte 8");
  // Escaped, as the writer writes it, it is a character like any other.
  std::optional<json::JsonValue> escaped =
      json::parseJson(R"({"a": "x\u001by"})", &error);
  REQUIRE(escaped);
  CHECK(escaped->get("a")->text() == "x\x1by");
  CHECK(json::parseJson(escaped->serialize(), &error));
}

TEST_CASE("sizes are bounded, not narrowed", "[output][bounds]") {
  std::string error;
  CHECK(scaleExtentFromInt64("group size", kMaxScaleExtent, &error) ==
        int(kMaxScaleExtent));
  CHECK_FALSE(scaleExtentFromInt64("group size", 4294967328, &error));
  CHECK(error == "group size 4294967328 is larger than the maximum 2^30 "
                 "(1073741824)");
  CHECK_FALSE(scaleExtentFromInt64("block width", 0, &error));
  CHECK(error == "block width must be positive, got 0");
  CHECK_FALSE(axisFromInt64(4294967297, &error));
  CHECK(validateShape(1, kMaxDimension, &error));
  CHECK(validateShape(kDynamic, kMaxDimension, &error));
  CHECK_FALSE(validateShape(1, kMaxDimension + 1, &error));
  CHECK(error == "cols 1099511627777 is larger than the maximum dimension "
                 "2^40 (1099511627776)");
  CHECK_FALSE(validateShape(2, kMaxDimension, &error));
  CHECK(error.find("more than the maximum 2^40") != std::string::npos);
  // validateSchemeForShape refuses what scaleShape could not compute.
  Scheme mxfp4 = *lookupScheme("mxfp4");
  CHECK_FALSE(validateSchemeForShape(mxfp4, 1, INT64_MAX, &error));
  CHECK(error.find("cols 9223372036854775807 is larger") == 0);
  // At the bound the shapes are exact (ceilDiv cannot overflow).
  CHECK(scaleShape(mxfp4, 1, kMaxDimension) == Shape2D{1, kMaxDimension / 32});
  CHECK(codesShape(mxfp4, 1, kMaxDimension - 1) ==
        Shape2D{1, kMaxDimension / 2});
  // A ScaleSpec built in C++ is held to the same bounds.
  ScaleSpec scale;
  scale.granularity = Granularity::Group;
  scale.groupSize = int(kMaxScaleExtent) + 1;
  CHECK_FALSE(validateScaleSpec(scale, &error));
  CHECK(error.find("larger than the maximum 2^30") != std::string::npos);
}
