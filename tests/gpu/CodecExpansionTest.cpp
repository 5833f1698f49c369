//===- CodecExpansionTest.cpp - lowbit-expand-codecs == format/Codec ------===//
//
// JIT-runs lowbit.encode / lowbit.decode after lowbit-expand-codecs on the
// CPU and compares every result bit for bit with lowbit::Codec: every named
// format and a few parametric ones; all 65536 f16 inputs, all 65536 bf16
// inputs and 100000 random f32 bit patterns; saturating and not; rn, rz and
// rp; every code for decode.
//
//===----------------------------------------------------------------------===//

#include "CpuJit.h"

#include "format/Codec.h"
#include "format/Format.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

using namespace lowbit;
using lowbit::test::CpuJit;
using lowbit::test::MemRef1D;
using lowbit::test::viewOf;

namespace {

/// All f16 and bf16 values widened to f32, then random f32 bit patterns.
const std::vector<float> &testInputs() {
  static const std::vector<float> inputs = [] {
    std::vector<float> values;
    for (uint32_t bits = 0; bits < 65536; ++bits)
      values.push_back(halfToFloat(uint16_t(bits)));
    for (uint32_t bits = 0; bits < 65536; ++bits)
      values.push_back(bfloat16ToFloat(uint16_t(bits)));
    std::mt19937 random(20260501);
    for (int i = 0; i < 100000; ++i)
      values.push_back(bitsToFloat(uint32_t(random())));
    return values;
  }();
  return inputs;
}

const char *roundingName(Rounding rounding) {
  switch (rounding) {
  case Rounding::NearestEven:
    return "rn";
  case Rounding::TowardZero:
    return "rz";
  case Rounding::TowardPosInf:
    return "rp";
  }
  return "?";
}

std::string moduleText(const Format &format, const EncodeOptions &options) {
  std::string codeType = format.bits() <= 8 ? "i8" : "i16";
  std::string attr = lowbit::test::formatAttrText(format.name());
  std::string text = R"mlir(
func.func @encode(%in: memref<?xf32>, %out: memref<?xCODE>)
    attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %in, %c0 : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %x = memref.load %in[%i] : memref<?xf32>
    %c = lowbit.encode %x {format = FORMAT, saturate = SATURATE,
                           rounding = "ROUNDING"} : f32 to CODE
    memref.store %c, %out[%i] : memref<?xCODE>
  }
  return
}
func.func @decode(%in: memref<?xCODE>, %out: memref<?xf32>)
    attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %in, %c0 : memref<?xCODE>
  scf.for %i = %c0 to %n step %c1 {
    %c = memref.load %in[%i] : memref<?xCODE>
    %x = lowbit.decode %c {format = FORMAT} : CODE to f32
    memref.store %x, %out[%i] : memref<?xf32>
  }
  return
}
)mlir";
  auto replaceAll = [&](const std::string &from, const std::string &to) {
    for (size_t at = text.find(from); at != std::string::npos;
         at = text.find(from, at + to.size()))
      text.replace(at, from.size(), to);
  };
  replaceAll("CODE", codeType);
  replaceAll("FORMAT", attr);
  replaceAll("SATURATE", options.saturate ? "true" : "false");
  replaceAll("ROUNDING", roundingName(options.rounding));
  return text;
}

template <typename CodeT>
size_t countEncodeMismatches(CpuJit &jit, const Format &format,
                             const EncodeOptions &options,
                             std::string &firstMismatch) {
  const std::vector<float> &inputs = testInputs();
  std::vector<CodeT> codes(inputs.size(), 0);
  auto in = viewOf(const_cast<float *>(inputs.data()), int64_t(inputs.size()));
  auto out = viewOf(codes.data(), int64_t(codes.size()));
  auto encode =
      reinterpret_cast<void (*)(MemRef1D<float> *, MemRef1D<CodeT> *)>(
          jit.lookup("encode"));
  REQUIRE(encode);
  encode(&in, &out);
  Codec codec(format, options);
  size_t mismatches = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    uint32_t expected = codec.encode(inputs[i]);
    if (codes[i] == CodeT(expected))
      continue;
    if (mismatches++ == 0) {
      char buffer[160];
      std::snprintf(buffer, sizeof buffer,
                    "input %a (0x%08x): expansion 0x%x, codec 0x%x",
                    double(inputs[i]), floatBits(inputs[i]), unsigned(codes[i]),
                    expected);
      firstMismatch = buffer;
    }
  }
  return mismatches;
}

template <typename CodeT>
size_t countDecodeMismatches(CpuJit &jit, const Format &format,
                             std::string &firstMismatch) {
  std::vector<CodeT> codes;
  // Every code, plus codes with garbage above the format's bits (decode
  // reads only the low bits).
  for (uint32_t code = 0; code < format.codeCount(); ++code)
    codes.push_back(CodeT(code));
  if (format.bits() < int(8 * sizeof(CodeT)))
    for (uint32_t code = 0; code < format.codeCount(); ++code)
      codes.push_back(CodeT(code | ~format.codeMask()));
  std::vector<float> values(codes.size(), 0.0f);
  auto in = viewOf(codes.data(), int64_t(codes.size()));
  auto out = viewOf(values.data(), int64_t(values.size()));
  auto decode =
      reinterpret_cast<void (*)(MemRef1D<CodeT> *, MemRef1D<float> *)>(
          jit.lookup("decode"));
  REQUIRE(decode);
  decode(&in, &out);
  Codec codec(format);
  size_t mismatches = 0;
  for (size_t i = 0; i < codes.size(); ++i) {
    float expected = codec.decode(codes[i]);
    bool same = std::isnan(expected)
                    ? std::isnan(values[i])
                    : floatBits(expected) == floatBits(values[i]);
    if (same)
      continue;
    if (mismatches++ == 0) {
      char buffer[160];
      std::snprintf(buffer, sizeof buffer, "code 0x%x: expansion %a, codec %a",
                    unsigned(codes[i]), double(values[i]), double(expected));
      firstMismatch = buffer;
    }
  }
  return mismatches;
}

std::vector<Format> formatsUnderTest() {
  std::vector<Format> formats = namedFormats();
  for (const char *name : {"e3m4", "e4m3b11-ieee", "ue5m3", "e5m3", "e6m2-fn",
                           "e8m3-ieee", "e8m5b127-ieee", "e7m3b70", "e2m2-finite",
                           "e3m2b1-finite", "uint2", "int12", "e1m2"}) {
    std::string error;
    std::optional<Format> format = lookupFormat(name, &error);
    if (format)
      formats.push_back(*format);
    else
      FAIL("parametric format " << name << " was refused: " << error);
  }
  return formats;
}

} // namespace

TEST_CASE("codec expansion is bit-exact to format/Codec", "[codec]") {
  size_t totalChecked = 0, totalMismatches = 0;
  for (const Format &format : formatsUnderTest()) {
    for (bool saturate : {true, false}) {
      for (Rounding rounding : {Rounding::NearestEven, Rounding::TowardZero,
                                Rounding::TowardPosInf}) {
        EncodeOptions options{saturate, rounding};
        std::string error;
        std::unique_ptr<CpuJit> jit =
            CpuJit::compile(moduleText(format, options), error);
        INFO(format.name() << ": " << error);
        REQUIRE(jit);
        std::string firstMismatch;
        size_t mismatches = format.bits() <= 8
                                ? countEncodeMismatches<uint8_t>(
                                      *jit, format, options, firstMismatch)
                                : countEncodeMismatches<uint16_t>(
                                      *jit, format, options, firstMismatch);
        std::printf(
            "codec-expansion: %s %s %s: %zu checked, %zu mismatches%s%s\n",
            format.name().c_str(), saturate ? "sat" : "nosat",
            roundingName(rounding), testInputs().size(), mismatches,
            mismatches ? "; first: " : "", firstMismatch.c_str());
        totalChecked += testInputs().size();
        totalMismatches += mismatches;
        CHECK(mismatches == 0);

        // Decoding does not depend on the options; check it once.
        if (saturate && rounding == Rounding::NearestEven) {
          std::string firstDecodeMismatch;
          size_t decodeMismatches =
              format.bits() <= 8
                  ? countDecodeMismatches<uint8_t>(*jit, format,
                                                   firstDecodeMismatch)
                  : countDecodeMismatches<uint16_t>(*jit, format,
                                                    firstDecodeMismatch);
          std::printf(
              "codec-expansion: %s decode: %u codes, %zu mismatches%s%s\n",
              format.name().c_str(), format.codeCount(), decodeMismatches,
              decodeMismatches ? "; first: " : "", firstDecodeMismatch.c_str());
          CHECK(decodeMismatches == 0);
        }
      }
    }
  }
  std::printf("codec-expansion: total %zu checked, %zu mismatches\n",
              totalChecked, totalMismatches);
}
