//===- EmulatorSchemeTest.cpp - lowbit's GPU kernels, run on the CPU ------===//
//
// Every named scheme x {quantize, dequantize} x {f32, f16, bf16} x ragged
// shapes, on sm_90a and sm_100a (sm_100a takes the native FP4/FP6/E8M0
// cvts): the GPU kernels as they leave the GPU tail run in the emulator and
// must equal the reference quantizer bit for bit (the same check as the CPU
// backend's, tests/compiler/BackendCheck.h).
//
//===----------------------------------------------------------------------===//

#include "tests/emulator/EmulatorTestSupport.h"

#include "format/Scheme.h"
#include "tests/compiler/BackendCheck.h"

#include <catch2/catch.hpp>

#include <iostream>

using namespace lowbit;

namespace {

/// Partial blocks and tails in both dimensions; 1xN and Nx1 (N prime);
/// rows of whole 16-byte vectors (lowbit-to-gpu's vector path), one with a
/// short last group of 128, and whole warp segments of 512 code bytes
/// across rows plus a partial one (the dequantize exchange).
const std::pair<int64_t, int64_t> kShapes[] = {
    {1, 1},    {3, 37},  {33, 257}, {1, 4099},
    {4099, 1}, {2, 256}, {3, 96},   {5, 320}};

void checkTarget(const char *targetName) {
  Target target = testing::targetNamed(targetName);
  emulator::Device device;
  int exact = 0, skipped = 0;
  for (const Scheme &scheme : namedSchemes())
    for (KernelOp op : {KernelOp::Quantize, KernelOp::Dequantize})
      for (ValueType type : {ValueType::F32, ValueType::F16, ValueType::BF16}) {
        KernelSpec spec;
        spec.op = op;
        spec.scheme = scheme;
        spec.valueType = type;
        std::string label =
            std::string(targetName) + " " + printKernelSpec(spec);
        auto program = emulator::EmulatedProgram::compile(spec, target);
        INFO(label);
        if (!program)
          FAIL("compile: " << program.error().message);
        testing::KernelRunner run = testing::emulatorRunner(**program, device);
        for (auto [rows, cols] : kShapes) {
          std::string error;
          if (!validateSchemeForShape(spec.scheme, rows, cols, &error)) {
            ++skipped;
            continue;
          }
          uint32_t seed = uint32_t(rows * 31 + cols);
          std::string mismatch =
              op == KernelOp::Quantize
                  ? testing::checkQuantize(spec, rows, cols, seed, run)
                  : testing::checkDequantize(spec, rows, cols, seed, run);
          INFO(rows << "x" << cols);
          CHECK(mismatch == "");
          if (!mismatch.empty())
            continue;
          ++exact;
          std::cout << "emulator: " << label << " " << rows << "x" << cols
                    << ": bit-exact\n";
        }
      }
  const emulator::EmulatorStats &stats = device.stats();
  std::cout << "emulator: " << targetName << ": " << exact
            << " scheme runs bit-exact (" << skipped
            << " shapes the scheme refuses), " << stats.launches
            << " launches, " << stats.blocks << " blocks, " << stats.threads
            << " threads, " << stats.checkedAccesses << " checked accesses\n";
  CHECK(exact >= 10 * 2 * 3 * 4);
}

} // namespace

TEST_CASE("emulator: named schemes bit-exact on sm_90a", "[emulator]") {
  checkTarget("sm_90a");
}

TEST_CASE("emulator: named schemes bit-exact on sm_100a", "[emulator]") {
  checkTarget("sm_100a");
}

TEST_CASE("emulator: static scales and a given global scale", "[emulator]") {
  Target target = testing::targetNamed("sm_100a");
  emulator::Device device;
  for (const char *text : {"quantize mxfp4 from=bf16 scale=static",
                           "quantize int4_g128 from=f16 scale=static",
                           "quantize fp8_e4m3 from=f32 scale=static",
                           "quantize nvfp4 from=f32 scale=static"}) {
    std::string error;
    std::optional<KernelSpec> spec = parseKernelSpec(text, &error);
    INFO(text << ": " << error);
    REQUIRE(spec);
    auto program = emulator::EmulatedProgram::compile(*spec, target);
    if (!program)
      FAIL("compile: " << program.error().message);
    testing::KernelRunner run = testing::emulatorRunner(**program, device);
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{3, 37}, {33, 257}}) {
      if (!validateSchemeForShape(spec->scheme, rows, cols, &error))
        continue;
      std::string mismatch = testing::checkQuantize(
          *spec, rows, cols, uint32_t(rows * 7 + cols), run);
      INFO(rows << "x" << cols);
      CHECK(mismatch == "");
      if (mismatch.empty())
        std::cout << "emulator: sm_100a " << text << " " << rows << "x" << cols
                  << ": bit-exact\n";
    }
  }
}
