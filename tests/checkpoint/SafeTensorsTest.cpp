//===- SafeTensorsTest.cpp - safetensors files, good and malformed --------===//
//
// Every dtype written and read back through a mapping; hand-written files in
// the reference layout; and each kind of malformed file the spec rules out
// (docs/checkpoints.md), which must be refused with a message, never read
// past its end.
//
//===----------------------------------------------------------------------===//

#include "checkpoint/SafeTensors.h"

#include "tests/checkpoint/CheckpointTesting.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>

using namespace lowbit::checkpoint;
using Catch::Matchers::Contains;
using namespace lowbit::checkpoint::testing;

namespace {

/// A file: the 8-byte little-endian length of `header`, `header`, `data`.
std::string fileBytes(const std::string &header, const std::string &data) {
  std::string file(8, '\0');
  uint64_t length = header.size();
  std::memcpy(file.data(), &length, 8);
  return file + header + data;
}

std::span<const std::byte> asBytes(const std::string &text) {
  return std::as_bytes(std::span(text.data(), text.size()));
}

std::string parseError(const std::string &file) {
  lowbit::Expected<Header> header = parseFileBytes(asBytes(file));
  REQUIRE_FALSE(header.ok());
  CHECK(header.error().code == lowbit::ErrorCode::InvalidArgument);
  return header.error().message;
}

std::string oneTensor(const std::string &dtype, const std::string &shape,
                      const std::string &offsets) {
  return R"({"w":{"dtype":")" + dtype + R"(","shape":)" + shape +
         R"(,"data_offsets":)" + offsets + "}}";
}

} // namespace

TEST_CASE("every dtype the format names writes and maps back",
          "[safetensors]") {
  const std::vector<std::pair<std::string, int>> names = {
      {"BOOL", 8}, {"F4", 4},      {"F6_E2M3", 6}, {"F6_E3M2", 6}, {"U8", 8},
      {"I8", 8},   {"F8_E5M2", 8}, {"F8_E4M3", 8}, {"F8_E8M0", 8}, {"I16", 16},
      {"U16", 16}, {"F16", 16},    {"BF16", 16},   {"I32", 32},    {"U32", 32},
      {"F32", 32}, {"C64", 64},    {"F64", 64},    {"I64", 64},    {"U64", 64}};
  std::vector<std::string> payloads;
  std::vector<TensorData> tensors;
  for (const auto &[name, bits] : names) {
    std::optional<DType> dtype = dtypeFromName(name);
    REQUIRE(dtype);
    CHECK(dtypeName(*dtype) == name);
    CHECK(dtypeBits(*dtype) == bits);
    // 8 elements fill whole bytes for every width (F4: 4 bytes, F6: 6).
    std::string payload;
    for (int i = 0; i < bits; ++i)
      payload += char(payloads.size() * 31 + i * 7 + 1);
    payloads.push_back(payload);
    tensors.push_back({"t." + name, *dtype, {2, 4}, {}});
  }
  for (size_t i = 0; i < tensors.size(); ++i)
    tensors[i].bytes = asBytes(payloads[i]);
  CHECK_FALSE(dtypeFromName("F8_E4M3FN"));
  CHECK_FALSE(dtypeFromName("f32"));

  std::filesystem::path directory = scratchDirectory("st-dtypes");
  std::string path = (directory / "all.safetensors").string();
  std::vector<std::pair<std::string, std::string>> metadata = {
      {"format", "pt"}, {"note", "a \"quoted\" value"}};
  REQUIRE(writeSafeTensors(path, tensors, metadata).ok());

  lowbit::Expected<SafeTensorsFile> file = SafeTensorsFile::open(path);
  REQUIRE(file.ok());
  CHECK(file->header().metadata == metadata);
  REQUIRE(file->header().tensors.size() == tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo *info = file->header().find(tensors[i].name);
    REQUIRE(info);
    CHECK(info->dtype == tensors[i].dtype);
    CHECK(info->shape == std::vector<int64_t>{2, 4});
    CHECK(info->elementCount() == 8);
    std::span<const std::byte> data = file->data(*info);
    REQUIRE(data.size() == payloads[i].size());
    CHECK(std::memcmp(data.data(), payloads[i].data(), data.size()) == 0);
  }
  // The buffer starts 8-byte aligned in the mapping (the header is padded),
  // and views point into it, not at copies.
  const TensorInfo &first = file->header().tensors.front();
  CHECK(reinterpret_cast<uintptr_t>(file->data(first).data()) % 8 == 0);
  CHECK(file->data(first).data() == file->data(first.name)->data());
  CHECK_FALSE(file->data("absent").ok());
  std::filesystem::remove_all(directory);
}

TEST_CASE("a hand-written file in the reference layout reads",
          "[safetensors]") {
  // As the reference writer lays it out: tensors by offset, header padded
  // with spaces, a scalar, an empty tensor sharing its offset.
  std::string header =
      R"({"__metadata__":{"format":"pt"},"b":{"dtype":"F32","shape":[2],)"
      R"("data_offsets":[4,12]},"a":{"dtype":"I32","shape":[],)"
      R"("data_offsets":[0,4]},"e":{"dtype":"F16","shape":[0,3],)"
      R"("data_offsets":[12,12]}}    )";
  float values[2] = {1.5f, -2.0f};
  int32_t scalar = -7;
  std::string data(12, '\0');
  std::memcpy(data.data(), &scalar, 4);
  std::memcpy(data.data() + 4, values, 8);
  uint64_t dataOffset = 0;
  lowbit::Expected<Header> parsed =
      parseFileBytes(asBytes(fileBytes(header, data)), &dataOffset);
  REQUIRE(parsed.ok());
  CHECK(dataOffset == 8 + header.size());
  REQUIRE(parsed->tensors.size() == 3);
  CHECK(parsed->tensors[0].name == "a");
  CHECK(parsed->tensors[0].shape.empty());
  CHECK(parsed->tensors[0].elementCount() == 1);
  CHECK(parsed->tensors[1].name == "b");
  CHECK(parsed->tensors[1].begin == 4);
  CHECK(parsed->tensors[2].name == "e");
  CHECK(parsed->tensors[2].byteSize() == 0);
}

TEST_CASE("malformed files are refused with a message", "[safetensors]") {
  std::string good = oneTensor("F32", "[2]", "[0,8]");
  std::string eight(8, 'x');
  REQUIRE(parseFileBytes(asBytes(fileBytes(good, eight))).ok());

  SECTION("truncated anywhere") {
    std::string whole = fileBytes(good, eight);
    for (size_t length = 0; length < whole.size(); ++length) {
      std::string message = parseError(whole.substr(0, length));
      if (length < 8)
        CHECK_THAT(message, Contains("fewer than the 8"));
      else if (length < 8 + good.size())
        CHECK_THAT(message, Contains("runs past the end"));
      else
        CHECK_THAT(message, Contains("past the end of the"));
    }
  }
  SECTION("a header length of 2^63") {
    std::string file = fileBytes(good, eight);
    uint64_t huge = uint64_t(1) << 63;
    std::memcpy(file.data(), &huge, 8);
    CHECK_THAT(parseError(file), Contains("9223372036854775808"));
    huge = ~uint64_t(0);
    std::memcpy(file.data(), &huge, 8);
    CHECK_THAT(parseError(file), Contains("past the limit"));
  }
  SECTION("a range past the end") {
    std::string header = oneTensor("F32", "[4]", "[0,16]");
    CHECK_THAT(parseError(fileBytes(header, eight)),
               Contains("ends at byte 16, past the end"));
  }
  SECTION("overlapping ranges") {
    std::string header =
        R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
        R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
    CHECK_THAT(parseError(fileBytes(header, std::string(12, 'x'))),
               Contains("ranges overlap"));
  }
  SECTION("ranges that leave a gap or do not reach the end") {
    std::string gap =
        R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
        R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})";
    CHECK_THAT(parseError(fileBytes(gap, std::string(12, 'x'))),
               Contains("must cover the buffer"));
    std::string late = oneTensor("F32", "[1]", "[4,8]");
    CHECK_THAT(parseError(fileBytes(late, eight)),
               Contains("must cover the buffer"));
    CHECK_THAT(parseError(fileBytes(good, eight + "xy")),
               Contains("cover 8 bytes of the 10-byte"));
  }
  SECTION("a duplicate name") {
    std::string header =
        R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
        R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
    CHECK_THAT(parseError(fileBytes(header, eight)),
               Contains("duplicate key \"a\""));
  }
  SECTION("an unknown dtype") {
    CHECK_THAT(parseError(fileBytes(oneTensor("F33", "[2]", "[0,8]"), eight)),
               Contains("unknown dtype 'F33'"));
    CHECK_THAT(parseError(fileBytes(oneTensor("f32", "[2]", "[0,8]"), eight)),
               Contains("unknown dtype 'f32'"));
  }
  SECTION("a size that disagrees with shape and dtype") {
    CHECK_THAT(parseError(fileBytes(oneTensor("F16", "[2]", "[0,8]"), eight)),
               Contains("need 4 bytes"));
    CHECK_THAT(parseError(fileBytes(oneTensor("F4", "[3]", "[0,8]"), eight)),
               Contains("12 bits of F4 do not fill whole bytes"));
    CHECK_THAT(
        parseError(fileBytes(
            oneTensor("F64", "[4294967296,4294967296]", "[0,8]"), eight)),
        Contains("overflows"));
    // As the reference: the running product of the extents must fit, so
    // an empty tensor may have a huge extent before its zero, not after.
    CHECK(parseFileBytes(
              asBytes(fileBytes(
                  oneTensor("I32", "[4611686018427387904,0]", "[0,0]"), "")))
              .ok());
    CHECK_THAT(parseError(fileBytes(
                   oneTensor("I32", "[4611686018427387904,4,0]", "[0,0]"), "")),
               Contains("overflows"));
  }
  SECTION("malformed fields") {
    CHECK_THAT(parseError(fileBytes(oneTensor("F32", "[-2]", "[0,8]"), eight)),
               Contains("not a non-negative integer"));
    CHECK_THAT(parseError(fileBytes(oneTensor("F32", "[2.0]", "[0,8]"), eight)),
               Contains("not a non-negative integer"));
    CHECK_THAT(parseError(fileBytes(oneTensor("F32", "[2]", "[8,0]"), eight)),
               Contains("end before they begin"));
    CHECK_THAT(parseError(fileBytes(oneTensor("F32", "[2]", "[0]"), eight)),
               Contains("not [begin, end]"));
    CHECK_THAT(parseError(fileBytes(
                   oneTensor("F32", "[2]", "[0,9223372036854775808]"), eight)),
               Contains("not non-negative integers"));
    CHECK_THAT(parseError(fileBytes(
                   R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8],)"
                   R"("extra":1}})",
                   eight)),
               Contains("unknown field 'extra'"));
    CHECK_THAT(
        parseError(fileBytes(R"({"w":{"dtype":"F32","shape":[2]}})", eight)),
        Contains("needs 'dtype', 'shape' and 'data_offsets'"));
    CHECK_THAT(parseError(fileBytes(R"({"__metadata__":{"a":1}})", "")),
               Contains("is not a string"));
    CHECK_THAT(parseError(fileBytes(R"(["a"])", "")),
               Contains("does not start with '{'"));
    CHECK_THAT(parseError(fileBytes(good + "x", eight)),
               Contains("trailing characters"));
    std::string deep = std::string(200, '[');
    CHECK_THAT(parseError(fileBytes("{\"w\":" + deep, "")),
               Contains("nesting too deep"));
  }
}

TEST_CASE("opening a file checks it too", "[safetensors]") {
  std::filesystem::path directory = scratchDirectory("st-open");
  auto write = [&](const std::string &name, const std::string &bytes) {
    std::ofstream(directory / name, std::ios::binary) << bytes;
    return (directory / name).string();
  };
  std::string empty = write("empty.safetensors", "");
  lowbit::Expected<SafeTensorsFile> file = SafeTensorsFile::open(empty);
  REQUIRE_FALSE(file.ok());
  CHECK_THAT(file.error().message, Contains("empty.safetensors"));
  CHECK_THAT(file.error().message, Contains("fewer than the 8"));

  std::string good = fileBytes(oneTensor("U8", "[3]", "[0,3]"), "abc");
  std::string cut = write("cut.safetensors", good.substr(0, good.size() - 1));
  file = SafeTensorsFile::open(cut);
  REQUIRE_FALSE(file.ok());
  CHECK_THAT(file.error().message, Contains("truncated"));

  file = SafeTensorsFile::open((directory / "missing").string());
  REQUIRE_FALSE(file.ok());
  CHECK(file.error().code == lowbit::ErrorCode::Io);
  file = SafeTensorsFile::open(directory.string());
  REQUIRE_FALSE(file.ok());
  CHECK_THAT(file.error().message, Contains("not a regular file"));

  file = SafeTensorsFile::open(write("good.safetensors", good));
  REQUIRE(file.ok());
  SafeTensorsFile moved = std::move(*file);
  REQUIRE(moved.data("w").ok());
  CHECK(std::string(reinterpret_cast<const char *>(moved.data("w")->data()),
                    3) == "abc");
  std::filesystem::remove_all(directory);
}

TEST_CASE("the writer refuses what it could not read back", "[safetensors]") {
  std::filesystem::path directory = scratchDirectory("st-writer");
  std::string path = (directory / "out.safetensors").string();
  std::string bytes(8, 'x');
  std::vector<TensorData> wrongSize = {{"w", DType::F32, {3}, asBytes(bytes)}};
  lowbit::Status status = writeSafeTensors(path, wrongSize);
  REQUIRE_FALSE(status.ok());
  CHECK_THAT(status.error().message, Contains("need 12"));
  std::vector<TensorData> twice = {
      {"w", DType::F32, {1}, asBytes(bytes).first(4)},
      {"w", DType::F32, {1}, asBytes(bytes).first(4)}};
  CHECK_FALSE(writeSafeTensors(path, twice).ok());
  std::vector<TensorData> reserved = {
      {"__metadata__", DType::U8, {8}, asBytes(bytes)}};
  CHECK_FALSE(writeSafeTensors(path, reserved).ok());
  // Nothing was written, not even a temporary.
  CHECK(std::filesystem::is_empty(directory));

  // A failed rewrite leaves the old file whole.
  std::vector<TensorData> good = {{"w", DType::U8, {8}, asBytes(bytes)}};
  REQUIRE(writeSafeTensors(path, good).ok());
  CHECK_FALSE(writeSafeTensors(path, wrongSize).ok());
  lowbit::Expected<SafeTensorsFile> file = SafeTensorsFile::open(path);
  REQUIRE(file.ok());
  CHECK(file->header().tensors.size() == 1);
  CHECK(std::distance(std::filesystem::directory_iterator(directory),
                      std::filesystem::directory_iterator()) == 1);
  std::filesystem::remove_all(directory);
}
