//===- GgufWeightsTest.cpp - Q8_0 and Q4_0 as lowbit schemes --------------===//
//
// llama.cpp's Q8_0 and Q4_0 through lowbit's format model: the gguf
// package's fixture imports to its own dequantization bit for bit, lowbit's
// reference quantizer makes the very blocks the package's quantizer made
// (a transcription of quantize_row_q8_0_ref / quantize_row_q4_0_ref, kept
// bit-exact to them), every tensor exports back to the file's bytes, and
// blocks computed by hand from the reference formulas check the corners:
// ties, a positive signed max, a zero block, the nibble order.
//
//===----------------------------------------------------------------------===//

#include "checkpoint/GgufWeights.h"
#include "checkpoint/Checkpoint.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>

using namespace lowbit;
using namespace lowbit::checkpoint;
using Catch::Matchers::Contains;

namespace {

std::string fixture(const std::string &file) {
  return std::string(LOWBIT_CHECKPOINT_FIXTURES) + "/gguf-q8_0-q4_0/" + file;
}

std::vector<float> floats(std::span<const std::byte> bytes) {
  std::vector<float> values(bytes.size() / 4);
  std::memcpy(values.data(), bytes.data(), values.size() * 4);
  return values;
}

std::vector<uint32_t> bitsOf(const std::vector<float> &values) {
  std::vector<uint32_t> bits(values.size());
  std::memcpy(bits.data(), values.data(), values.size() * 4);
  return bits;
}

QuantizedTensor quantizeOrFail(uint32_t type, const std::vector<float> &input,
                               int64_t rows, int64_t cols) {
  Expected<Scheme> scheme = ggufBlockScheme(type);
  REQUIRE(scheme.ok());
  std::string error;
  std::optional<QuantizedTensor> tensor =
      quantize(*scheme, input, rows, cols, &error);
  INFO(error);
  REQUIRE(tensor);
  return std::move(*tensor);
}

/// One block quantized by lowbit, as GGUF bytes.
std::vector<uint8_t> block(uint32_t type, const std::vector<float> &input) {
  QuantizedTensor tensor = quantizeOrFail(type, input, 1, 32);
  Expected<std::vector<std::byte>> bytes = exportGgufBlocks(tensor, type);
  REQUIRE(bytes.ok());
  std::vector<uint8_t> out(bytes->size());
  std::memcpy(out.data(), bytes->data(), out.size());
  return out;
}

} // namespace

TEST_CASE("the gguf package's Q8_0 and Q4_0 tensors read, quantize and "
          "write back bit for bit") {
  Expected<GgufFile> file = GgufFile::open(fixture("model.gguf"));
  REQUIRE(file.ok());
  Expected<Checkpoint> source = Checkpoint::open(fixture("source.safetensors"));
  Expected<Checkpoint> dequantized =
      Checkpoint::open(fixture("dequantized.safetensors"));
  REQUIRE(source.ok());
  REQUIRE(dequantized.ok());
  int checked = 0;
  for (const GgufTensorInfo &info : file->header().tensors) {
    if (info.type->id != kGgmlQ8_0 && info.type->id != kGgmlQ4_0)
      continue;
    INFO(info.name << " " << info.type->name);
    ++checked;
    Expected<QuantizedTensor> tensor = importGgufTensor(*file, info);
    INFO((tensor.ok() ? "" : tensor.error().message));
    REQUIRE(tensor.ok());
    // lowbit's dequantization equals the package's (dequantize_row_*).
    std::string error;
    std::optional<std::vector<float>> values = dequantize(*tensor, &error);
    REQUIRE(values);
    Expected<Checkpoint::Entry> expected = dequantized->get(info.name);
    REQUIRE(expected.ok());
    CHECK(bitsOf(*values) == bitsOf(floats(expected->data())));
    // lowbit's quantizer makes the package's blocks from the same input.
    Expected<Checkpoint::Entry> input = source->get(info.name);
    REQUIRE(input.ok());
    QuantizedTensor requantized = quantizeOrFail(
        info.type->id, floats(input->data()), tensor->rows, tensor->cols);
    Expected<std::vector<std::byte>> blocks =
        exportGgufBlocks(requantized, info.type->id);
    REQUIRE(blocks.ok());
    std::span<const std::byte> original = file->data(info);
    CHECK(std::equal(blocks->begin(), blocks->end(), original.begin(),
                     original.end()));
    // And the import exports back to the same bytes.
    Expected<std::vector<std::byte>> back =
        exportGgufBlocks(*tensor, info.type->id);
    REQUIRE(back.ok());
    CHECK(std::equal(back->begin(), back->end(), original.begin(),
                     original.end()));
  }
  CHECK(checked == 4);
}

TEST_CASE("Q8_0 blocks computed by hand from quantize_row_q8_0_ref") {
  // amax 127: d = 127 / 127 = 1 (f16 0x3c00), 1 / d = 1, so x - 0.5 for
  // integers x are roundf's ties, rounded away from zero.
  std::vector<float> input(32);
  for (int j = 0; j < 31; ++j)
    input[size_t(j)] = float(j) - 15.5f;
  input[31] = 127;
  std::vector<uint8_t> bytes = block(kGgmlQ8_0, input);
  CHECK(bytes[0] == 0x00);
  CHECK(bytes[1] == 0x3c);
  CHECK(int8_t(bytes[2 + 0]) == -16); // roundf(-15.5)
  CHECK(int8_t(bytes[2 + 15]) == -1); // roundf(-0.5)
  CHECK(int8_t(bytes[2 + 16]) == 1);  // roundf(0.5), not 0 (even)
  CHECK(int8_t(bytes[2 + 18]) == 3);  // roundf(2.5), not 2
  CHECK(int8_t(bytes[2 + 31]) == 127);
  // An all-zero block stores d = 0 and codes 0; lowbit's absmax would store
  // 1.
  std::vector<uint8_t> zero = block(kGgmlQ8_0, std::vector<float>(32, 0.0f));
  CHECK(zero == std::vector<uint8_t>(34, 0));
}

TEST_CASE("Q4_0 blocks computed by hand from quantize_row_q4_0_ref") {
  SECTION("a negative signed max: d = -8 / -8 = 1, truncation after +8.5") {
    std::vector<float> input(32, 0.0f);
    input[0] = -8;     // the signed max: d = 1, 1/d = 1; 0.5 -> 0
    input[1] = 7.6f;   // 16.1 -> 16 -> MIN(15, 16) = 15
    input[2] = 0.5f;   // 9.0 -> 9 (a tie rounds up)
    input[3] = -0.5f;  // 8.0 -> 8 (a tie rounds up: 0, not -1)
    input[16] = -1.5f; // 7.0 -> 7
    input[17] = 3.49f; // 11.99 -> 11 (truncated)
    std::vector<uint8_t> bytes = block(kGgmlQ4_0, input);
    CHECK(bytes[0] == 0x00);
    CHECK(bytes[1] == 0x3c);
    // Byte j: element j in the low nibble, element j + 16 in the high one.
    CHECK(bytes[2 + 0] == 0x70);
    CHECK(bytes[2 + 1] == 0xbf);
    CHECK(bytes[2 + 2] == 0x89);
    CHECK(bytes[2 + 3] == 0x88);
  }
  SECTION("a positive signed max gives a negative d") {
    std::vector<float> input(32, 0.0f);
    input[0] = 8;   // d = 8 / -8 = -1, 1/d = -1: -8 + 8.5 -> 0
    input[1] = -8;  // 8 + 8.5 = 16.5 -> 16 -> 15: the reference's clamp
    input[2] = 2;   // -2 + 8.5 = 6.5 -> 6
    input[16] = -3; // 3 + 8.5 = 11.5 -> 11
    std::vector<uint8_t> bytes = block(kGgmlQ4_0, input);
    CHECK(bytes[0] == 0x00);
    CHECK(bytes[1] == 0xbc); // f16 -1
    CHECK(bytes[2 + 0] == 0xb0);
    CHECK(bytes[2 + 1] == 0x8f);
    CHECK(bytes[2 + 2] == 0x86);
    // Dequantized as (q - 8) * d: 8, -7 (clamped), 2, -3.
    QuantizedTensor tensor = quantizeOrFail(kGgmlQ4_0, input, 1, 32);
    std::string error;
    std::optional<std::vector<float>> values = dequantize(tensor, &error);
    REQUIRE(values);
    CHECK((*values)[0] == 8);
    CHECK((*values)[1] == -7);
    CHECK((*values)[2] == 2);
    CHECK((*values)[16] == -3);
  }
  SECTION("+m and -m tie: the first one is the signed max") {
    std::vector<float> input(32, 0.0f);
    input[0] = -2;
    input[5] = 2;
    CHECK(block(kGgmlQ4_0, input)[1] == 0x34); // d = 0.25
    input[0] = 2;
    input[5] = -2;
    CHECK(block(kGgmlQ4_0, input)[1] == 0xb4); // d = -0.25
  }
  SECTION("a zero block stores d = -0 and the zero code 8") {
    std::vector<uint8_t> bytes = block(kGgmlQ4_0, std::vector<float>(32, 0.0f));
    // max = 0.0f, d = 0.0f / -8 = -0.0f: f16 0x8000.
    CHECK(bytes[0] == 0x00);
    CHECK(bytes[1] == 0x80);
    CHECK(std::all_of(bytes.begin() + 2, bytes.end(),
                      [](uint8_t byte) { return byte == 0x88; }));
  }
}

TEST_CASE("GGUF block schemes are refused where they do not apply") {
  CHECK_THAT(ggufBlockScheme(kGgmlF32).error().message,
             Contains("F32 has no lowbit scheme"));
  Expected<Scheme> q4 = ggufBlockScheme(kGgmlQ4_0);
  REQUIRE(q4.ok());
  std::string error;
  // Whole blocks only: nibble_halves pairs the halves of a group.
  CHECK_FALSE(validateSchemeForShape(*q4, 1, 48, &error));
  CHECK_THAT(error, Contains("whole groups"));
  // The compiler has no kernel for them yet, and says so.
  REQUIRE(referenceOnlyReason(*q4));
  CHECK_THAT(*referenceOnlyReason(*q4), Contains("signed_max_reciprocal"));
  // A negative scale is the signed max's alone.
  Scheme q8 = *ggufBlockScheme(kGgmlQ8_0);
  QuantizedTensor tensor =
      quantizeOrFail(kGgmlQ8_0, std::vector<float>(32, 1.0f), 1, 32);
  tensor.scaleCodes[0] = 0xbc00; // -1
  CHECK_FALSE(validateQuantized(tensor, &error));
  CHECK_THAT(error, Contains("not negative"));
}
