//===- GgufTest.cpp - GGUF files: the gguf package's, and malformed ones --===//
//
// The fixture written by the gguf package's GGUFWriter
// (tests/data/checkpoints/gguf-q8_0-q4_0) reads with its metadata, tensor
// infos and data; a small file built here byte by byte reads too, and every
// way of breaking it (each prefix, bad magic or version, counts, lengths,
// extents and offsets past the end, duplicates) is refused with a message
// naming the field.
//
//===----------------------------------------------------------------------===//

#include "checkpoint/Gguf.h"

#include <catch2/catch.hpp>

#include <cstring>

using namespace lowbit;
using namespace lowbit::checkpoint;
using Catch::Matchers::Contains;

namespace {

/// A GGUF file assembled field by field.
struct Builder {
  std::string bytes;

  template <typename T> Builder &put(T value) {
    bytes.append(reinterpret_cast<const char *>(&value), sizeof(T));
    return *this;
  }
  Builder &u32(uint32_t value) { return put(value); }
  Builder &u64(uint64_t value) { return put(value); }
  Builder &str(std::string_view text) {
    u64(text.size());
    bytes.append(text);
    return *this;
  }
  Builder &header(uint64_t tensors, uint64_t kvs, uint32_t version = 3) {
    bytes.append("GGUF");
    return u32(version).u64(tensors).u64(kvs);
  }
  Builder &tensorInfo(std::string_view name, std::vector<uint64_t> extents,
                      uint32_t type, uint64_t offset) {
    str(name).u32(uint32_t(extents.size()));
    for (uint64_t extent : extents)
      u64(extent);
    return u32(type).u64(offset);
  }
  Builder &pad(size_t alignment) {
    while (bytes.size() % alignment)
      bytes.push_back('\0');
    return *this;
  }
  std::span<const std::byte> span() const {
    return {reinterpret_cast<const std::byte *>(bytes.data()), bytes.size()};
  }
};

/// A valid file: one u32 KV, a string array, an F32 [2, 3] tensor and a
/// Q8_0 [1, 32] one, default alignment.
Builder validFile() {
  Builder file;
  file.header(2, 2);
  file.str("general.name").u32(8).str("tiny");
  file.str("tokenizer.tokens").u32(9).u32(8).u64(2).str("a").str("bc");
  file.tensorInfo("w", {3, 2}, kGgmlF32, 0);
  file.tensorInfo("q", {32, 1}, kGgmlQ8_0, 32);
  file.pad(32);
  for (int i = 0; i < 6; ++i)
    file.put(float(i));
  file.pad(32);
  file.bytes.append(34, '\x01');
  return file;
}

std::string errorOf(const Builder &file) {
  Expected<GgufHeader> header = parseGguf(file.span());
  REQUIRE_FALSE(header.ok());
  CHECK(header.error().code == ErrorCode::InvalidArgument);
  return header.error().message;
}

} // namespace

TEST_CASE("a GGUF file built by hand reads back") {
  Builder file = validFile();
  Expected<GgufHeader> header = parseGguf(file.span());
  INFO((header.ok() ? "" : header.error().message));
  REQUIRE(header.ok());
  CHECK(header->version == 3);
  CHECK(header->alignment == 32);
  CHECK(header->dataOffset % 32 == 0);
  REQUIRE(header->find("general.name"));
  CHECK(header->find("general.name")->string == "tiny");
  const GgufValue *tokens = header->find("tokenizer.tokens");
  REQUIRE(tokens);
  CHECK(tokens->elementType == GgufValueType::String);
  REQUIRE(tokens->elements.size() == 2);
  CHECK(tokens->elements[1].string == "bc");
  REQUIRE(header->tensors.size() == 2);
  CHECK(header->tensors[0].extents == std::vector<int64_t>{3, 2});
  CHECK(header->tensors[0].byteSize == 24);
  CHECK(header->tensors[1].type->name == "Q8_0");
  CHECK(header->tensors[1].byteSize == 34);
}

TEST_CASE("every truncation of a GGUF file is refused") {
  Builder file = validFile();
  // Every prefix but the whole file: the header, the KVs, the infos, the
  // padding or the data is cut short.
  for (size_t size = 0; size < file.bytes.size(); ++size) {
    Builder prefix;
    prefix.bytes = file.bytes.substr(0, size);
    INFO("prefix of " << size << " bytes");
    Expected<GgufHeader> header = parseGguf(prefix.span());
    CHECK_FALSE(header.ok());
  }
}

TEST_CASE("malformed GGUF headers are refused with the field named") {
  SECTION("bad magic") {
    Builder file = validFile();
    file.bytes[0] = 'X';
    CHECK_THAT(errorOf(file), Contains("bad magic"));
  }
  SECTION("unsupported versions, big-endian included") {
    for (uint32_t version : {1u, 4u, 0x03000000u}) {
      Builder file;
      file.header(0, 0, version);
      CHECK_THAT(errorOf(file), Contains("version"));
    }
  }
  SECTION("counts past the end") {
    Builder tensors;
    tensors.header(uint64_t(1) << 60, 0);
    CHECK_THAT(errorOf(tensors), Contains("tensor count 1152921504606846976"));
    Builder kvs;
    kvs.header(0, ~uint64_t(0));
    CHECK_THAT(errorOf(kvs), Contains("metadata count"));
  }
  SECTION("a string length of 2^63") {
    Builder file;
    file.header(0, 1).u64(uint64_t(1) << 63);
    file.bytes.append(64, 'k');
    CHECK_THAT(errorOf(file), Contains("has length 9223372036854775808"));
  }
  SECTION("an array count past the end") {
    Builder file;
    file.header(0, 1).str("a").u32(9).u32(4).u64(uint64_t(1) << 62);
    file.bytes.append(16, '\0');
    CHECK_THAT(errorOf(file), Contains("array of 4611686018427387904"));
  }
  SECTION("an array of arrays, an unknown value type, a bool of 2") {
    Builder nested;
    nested.header(0, 1).str("a").u32(9).u32(9).u64(1).u32(4).u64(0);
    CHECK_THAT(errorOf(nested), Contains("array of arrays"));
    Builder unknown;
    unknown.header(0, 1).str("a").u32(13).u64(0);
    CHECK_THAT(errorOf(unknown), Contains("unknown value type 13"));
    Builder boolean;
    boolean.header(0, 1).str("a").u32(7).put(uint8_t(2));
    boolean.bytes.append(16, '\0');
    CHECK_THAT(errorOf(boolean), Contains("bool of value 2"));
  }
  SECTION("a key or a tensor given twice") {
    Builder keys;
    keys.header(0, 2).str("a").u32(4).u32(1).str("a").u32(4).u32(2);
    CHECK_THAT(errorOf(keys), Contains("'a' is given twice"));
    Builder tensors;
    tensors.header(2, 0)
        .tensorInfo("t", {1}, kGgmlF32, 0)
        .tensorInfo("t", {1}, kGgmlF32, 32)
        .pad(32);
    tensors.bytes.append(64, '\0');
    CHECK_THAT(errorOf(tensors), Contains("tensor 't' is given twice"));
  }
  SECTION("an alignment that is not a u32 power of two") {
    Builder file;
    file.header(0, 1).str("general.alignment").u32(4).u32(24);
    CHECK_THAT(errorOf(file), Contains("general.alignment"));
    Builder zero;
    zero.header(0, 1).str("general.alignment").u32(4).u32(0);
    CHECK_THAT(errorOf(zero), Contains("general.alignment"));
  }
  SECTION("ranks, extents and types") {
    auto withInfo = [](std::vector<uint64_t> extents, uint32_t type) {
      Builder file;
      file.header(1, 0).tensorInfo("t", std::move(extents), type, 0).pad(32);
      file.bytes.append(64, '\0');
      return file;
    };
    CHECK_THAT(errorOf(withInfo({}, kGgmlF32)), Contains("0 dimensions"));
    CHECK_THAT(errorOf(withInfo({1, 1, 1, 1, 1}, kGgmlF32)),
               Contains("5 dimensions"));
    CHECK_THAT(
        errorOf(withInfo({uint64_t(1) << 32, uint64_t(1) << 32}, kGgmlF32)),
        Contains("overflows 2^63"));
    CHECK_THAT(errorOf(withInfo({uint64_t(1) << 63}, kGgmlF32)),
               Contains("overflows 2^63"));
    CHECK_THAT(errorOf(withInfo({4}, 5)), Contains("unknown ggml type 5"));
    CHECK_THAT(errorOf(withInfo({16}, kGgmlQ4_0)),
               Contains("not a multiple of its block of 32"));
    CHECK_THAT(errorOf(withInfo({uint64_t(1) << 40}, kGgmlF32)),
               Contains("runs past the end of the data section"));
  }
  SECTION("offsets that overlap, leave a gap or run past the end") {
    auto twoTensors = [](uint64_t second) {
      Builder file;
      file.header(2, 0)
          .tensorInfo("a", {8}, kGgmlF32, 0)
          .tensorInfo("b", {8}, kGgmlF32, second)
          .pad(32);
      file.bytes.append(64, '\0');
      return file;
    };
    CHECK(parseGguf(twoTensors(32).span()).ok());
    CHECK_THAT(errorOf(twoTensors(16)), Contains("offset 16, expected 32"));
    CHECK_THAT(errorOf(twoTensors(64)), Contains("offset 64, expected 32"));
    Builder file = twoTensors(32);
    file.bytes.resize(file.bytes.size() - 1);
    CHECK_THAT(errorOf(file), Contains("'b' (32 bytes at offset 32) runs "
                                       "past the end"));
  }
}

TEST_CASE("GgufFile maps a file and refuses a missing or bad one") {
  Expected<GgufFile> missing = GgufFile::open("/nonexistent/model.gguf");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == ErrorCode::Io);
  Expected<GgufFile> directory = GgufFile::open(LOWBIT_CHECKPOINT_FIXTURES);
  REQUIRE_FALSE(directory.ok());
  CHECK_THAT(directory.error().message, Contains("not a regular file"));
}

TEST_CASE("the gguf package's file reads: metadata, infos and data") {
  std::string path =
      std::string(LOWBIT_CHECKPOINT_FIXTURES) + "/gguf-q8_0-q4_0/model.gguf";
  Expected<GgufFile> file = GgufFile::open(path);
  INFO((file.ok() ? "" : file.error().message));
  REQUIRE(file.ok());
  const GgufHeader &header = file->header();
  CHECK(header.version == 3);
  REQUIRE(header.find("general.architecture"));
  CHECK(header.find("general.architecture")->string == "llama");
  REQUIRE(header.find("lowbit.test.u32"));
  CHECK(header.find("lowbit.test.u32")->asUnsigned() == 29u);
  const GgufValue *half = header.find("lowbit.test.f32");
  REQUIRE(half);
  CHECK(half->type == GgufValueType::F32);
  CHECK(half->bits == 0x3f000000u);
  const GgufValue *ints = header.find("lowbit.test.ints");
  REQUIRE(ints);
  REQUIRE(ints->elements.size() == 3);
  CHECK(ints->elements[1].asUnsigned() == std::nullopt); // -2
  REQUIRE(header.tensors.size() == 6);
  const GgufTensorInfo *q4 = header.findTensor("blk.0.attn_output.weight");
  REQUIRE(q4);
  CHECK(q4->type->name == "Q4_0");
  CHECK(q4->extents == std::vector<int64_t>{96, 8});
  CHECK(q4->byteSize == 8 * 3 * 18);
  const GgufTensorInfo *norm = header.findTensor("blk.0.attn_norm.weight");
  REQUIRE(norm);
  CHECK(norm->type->name == "F32");
  std::span<const std::byte> values = file->data(*norm);
  REQUIRE(values.size() == 96 * 4);
  float first = 0, last = 0;
  std::memcpy(&first, values.data(), 4);
  std::memcpy(&last, values.data() + 95 * 4, 4);
  CHECK(first == -1.0f);
  CHECK(last == 1.0f);
  CHECK(header.findTensor("token_embd.weight")->type->name == "F16");
}
