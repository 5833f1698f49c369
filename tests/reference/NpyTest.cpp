//===- NpyTest.cpp - .npy reading and writing -----------------------------===//

#include "runtime/core/Npy.h"
#include "runtime/core/AtomicFile.h"

#include <catch2/catch.hpp>

#include <filesystem>

#include <unistd.h>

using namespace lowbit;
using namespace lowbit::npy;

namespace {

/// A .npy file built by hand, as NumPy 1.x writes it.
std::string handMade(std::string_view dict, std::string_view data,
                     int major = 1) {
  std::string header(dict);
  size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + header.size() + 1) % 64)
    header += ' ';
  header += '\n';
  std::string contents = "\x93NUMPY";
  contents += char(major);
  contents += char(0);
  for (size_t index = 0; index < prefix - 8; ++index)
    contents += char((header.size() >> (8 * index)) & 0xFF);
  return contents + header + std::string(data);
}

std::string parseError(std::string_view contents) {
  std::string error;
  CHECK_FALSE(parseNpy(contents, &error));
  return error;
}

std::filesystem::path scratchDir() {
  auto dir = std::filesystem::temp_directory_path() /
             ("lowbit-npy-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

} // namespace

TEST_CASE("npy: a hand-made file parses", "[npy]") {
  std::string data("\x00\x00\x80\x3F\x00\x00\x00\xC0", 8); // 1.0f, -2.0f
  std::string error;
  auto array = parseNpy(
      handMade("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2), }",
               data),
      &error);
  INFO(error);
  REQUIRE(array);
  CHECK(array->dtype == DType::F32);
  CHECK(array->shape == std::vector<int64_t>{1, 2});
  CHECK(array->values<float>() == std::vector<float>{1.0f, -2.0f});
  // Version 2.0 and a 1-D shape, keys in another order.
  array = parseNpy(handMade("{'shape': (2,), 'fortran_order': False, "
                            "'descr': '|u1'}",
                            std::string("\x07\xF0", 2), 2),
                   &error);
  REQUIRE(array);
  CHECK(array->shape == std::vector<int64_t>{2});
  CHECK(array->values<uint8_t>() == std::vector<uint8_t>{0x07, 0xF0});
}

TEST_CASE("npy: every dtype round trips", "[npy]") {
  for (DType dtype :
       {DType::F32, DType::F16, DType::U16, DType::U8, DType::I8, DType::I32}) {
    INFO(dtypeName(dtype));
    Array array;
    array.dtype = dtype;
    array.shape = {3, 5};
    for (size_t index = 0; index < 15 * dtypeSize(dtype); ++index)
      array.bytes.push_back(uint8_t(index * 37 + 1));
    std::string error;
    auto contents = serializeNpy(array, &error);
    REQUIRE(contents);
    CHECK(contents->size() % 64 == 15 * dtypeSize(dtype) % 64);
    auto parsed = parseNpy(*contents, &error);
    REQUIRE(parsed);
    CHECK(parsed->dtype == dtype);
    CHECK(parsed->shape == array.shape);
    CHECK(parsed->bytes == array.bytes);
  }
}

TEST_CASE("npy: malformed files are refused with a reason", "[npy]") {
  std::string dict2x2 =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }";
  std::string data(16, '\0');
  CHECK(parseError("hello world") == "not a .npy file (bad magic)");
  CHECK(parseError("\x93NUMPY") == "truncated header (no version)");
  std::string whole = handMade(dict2x2, data);
  CHECK(parseError(whole.substr(0, 9)) ==
        "truncated header (no header length)");
  CHECK(parseError(whole.substr(0, 40)).find("truncated header: it claims") ==
        0);
  CHECK(parseError(whole.substr(0, whole.size() - 1)) ==
        "truncated data: shape (2, 2) of float32 needs 16 bytes, the file "
        "has 15");
  CHECK(parseError(whole + "x") ==
        "trailing data: shape (2, 2) of float32 needs 16 bytes, the file "
        "has 17");
  std::string version3 = whole;
  version3[6] = 3;
  CHECK(parseError(version3) ==
        "unsupported .npy version 3.0 (1.0 and 2.0 are supported)");
  CHECK(parseError(handMade("{'descr': '<f4', 'fortran_order': True, "
                            "'shape': (2, 2), }",
                            data))
            .find("Fortran-order arrays are not supported") == 0);
  CHECK(parseError(handMade("{'descr': '>f4', 'fortran_order': False, "
                            "'shape': (2, 2), }",
                            data)) ==
        "unsupported dtype '>f4' (supported: <f4, <f2, <u2, |u1, |i1, <i4)");
  CHECK(parseError(handMade("{'descr': '<f8', 'fortran_order': False, "
                            "'shape': (2, 1), }",
                            data))
            .find("unsupported dtype '<f8'") == 0);
  CHECK(parseError(handMade("{'descr': '<f4', 'fortran_order': False, "
                            "'shape': (2, 1, 2), }",
                            data)) ==
        "only 1-D and 2-D arrays are supported, got shape (2, 1, 2)");
  CHECK(parseError(handMade("{'descr': '<f4', 'fortran_order': False, "
                            "'shape': (), }",
                            std::string(4, '\0'))) ==
        "only 1-D and 2-D arrays are supported, got shape ()");
  CHECK(parseError(handMade("{'descr': '<f4', 'shape': (2, 2), }", data)) ==
        "malformed header: the header lacks 'descr', 'fortran_order' or "
        "'shape'");
  CHECK(parseError(handMade("{'descr': [('a', '<f4')], 'fortran_order': "
                            "False, 'shape': (2, 2), }",
                            data))
            .find("malformed header: 'descr' is not a simple dtype") == 0);
  CHECK(parseError(handMade("{'descr': '<f4', 'fortran_order': False, "
                            "'shape': (2, -2), }",
                            data))
            .find("malformed header: 'shape' holds") == 0);
  // The header is ASCII: a binary or escape byte is refused where it is,
  // never quoted back into a message (the npy fuzzer's refusals echoed
  // whole runs of 0xff, and an ESC would reach the terminal).
  CHECK(parseError(handMade("{'descr': '<f4', '\x1b[2J': False, "
                            "'shape': (2, 2), }",
                            data)) ==
        "malformed header: byte 0x1b at offset 28 is not printable ASCII");
  CHECK(parseError(handMade("{'descr': '<f4\xff', 'fortran_order': False, "
                            "'shape': (2, 2), }",
                            data)) ==
        "malformed header: byte 0xff at offset 24 is not printable ASCII");
}

// A manifest or a symlink in a directory may name a device: /dev/zero was
// read until memory ran out. It is refused by what it is (shown with
// /dev/null, which a broken check would read as an empty file).
TEST_CASE("npy: a device is refused, not read", "[npy]") {
  std::string error;
  CHECK_FALSE(readNpy("/dev/null", &error));
  CHECK(error == "'/dev/null' is a device or socket, not a file");
}

TEST_CASE("npy: writes are atomic and report failures", "[npy]") {
  auto dir = scratchDir();
  std::string path = (dir / "a.npy").string();
  std::vector<float> values = {1, 2, 3};
  Array array = Array::fromValues<float>(DType::F32, {3}, values);
  std::string error;
  REQUIRE(writeNpy(path, array, &error));
  auto read = readNpy(path, &error);
  REQUIRE(read);
  CHECK(read->values<float>() == values);
  // Nothing but the file itself is left behind.
  size_t entries = 0;
  for (auto &entry : std::filesystem::directory_iterator(dir)) {
    (void)entry;
    ++entries;
  }
  CHECK(entries == 1);
  // A shape that does not match the data is refused before any write.
  Array bad = array;
  bad.shape = {4};
  CHECK_FALSE(writeNpy(path, bad, &error));
  CHECK(error == "shape (4,) does not match 12 bytes of data");
  CHECK(readNpy(path, &error)->shape == std::vector<int64_t>{3});
  // A missing directory is an error value, not an exception.
  CHECK_FALSE(writeNpy((dir / "missing" / "b.npy").string(), array, &error));
  CHECK(error.find("cannot create") == 0);
  CHECK_FALSE(readNpy((dir / "none.npy").string(), &error));
  CHECK(error.find("cannot open") == 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("staged files are renamed together or not at all", "[npy]") {
  auto dir = scratchDir();
  {
    runtime::StagedFiles staged;
    std::string error;
    REQUIRE(staged.stage((dir / "x").string(), "one", &error));
    // Dropped without commit: the temporary file is removed.
  }
  CHECK(std::filesystem::is_empty(dir));
  runtime::StagedFiles staged;
  std::string error;
  REQUIRE(staged.stage((dir / "x").string(), "one", &error));
  REQUIRE(staged.stage((dir / "y").string(), "two", &error));
  CHECK_FALSE(std::filesystem::exists(dir / "x"));
  REQUIRE(staged.commit(&error));
  CHECK(std::filesystem::exists(dir / "x"));
  CHECK(std::filesystem::exists(dir / "y"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("npy: N-D arrays where the reader asks for them", "[npy]") {
  // A [2, 1, 3, 2] f32 array (a small KV cache) round trips at rank 4; the
  // quantize commands' 2-D readers still refuse it.
  std::vector<float> values(12);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = float(i) - 5.5f;
  npy::Array array = npy::Array::fromValues<float>(
      npy::DType::F32, {2, 1, 3, 2}, std::span<const float>(values));
  std::string error;
  std::optional<std::string> bytes = npy::serializeNpy(array, &error);
  REQUIRE(bytes);
  std::optional<npy::Array> back = npy::parseNpy(*bytes, &error, 4);
  REQUIRE(back);
  CHECK(back->shape == std::vector<int64_t>{2, 1, 3, 2});
  CHECK(back->values<float>() == values);
  CHECK_FALSE(npy::parseNpy(*bytes, &error));
  CHECK(error ==
        "only 1-D and 2-D arrays are supported, got shape (2, 1, 3, 2)");
  CHECK_FALSE(npy::parseNpy(*bytes, &error, 3));
  CHECK(error == "only arrays of rank 1 to 3 are supported, got shape (2, 1, "
                 "3, 2)");
  array.shape = std::vector<int64_t>(9, 1);
  array.bytes.resize(4);
  CHECK_FALSE(npy::serializeNpy(array, &error));
  CHECK(error.find("rank 1 to 8") != std::string::npos);
}
