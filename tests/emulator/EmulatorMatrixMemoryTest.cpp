//===- EmulatorMatrixMemoryTest.cpp - cp.async and ldmatrix in the emulator
//===//
//
// The kernels of MatrixMemoryKernels.h: cp.async of 4, 8 and 16 bytes (with
// a zero-filling src-size), commit/wait groups and ldmatrix .x1/.x2/.x4 with
// and without .trans, each lane's registers checked against the PTX ISA's
// distribution computed here (not from lowering/GpuMmaLayout.h); then the
// kernels that break a rule and must fail with a message saying which.
//
//===----------------------------------------------------------------------===//

#include "tests/emulator/EmulatorTestSupport.h"
#include "tests/emulator/MatrixMemoryKernels.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <iostream>

using namespace lowbit;
using namespace lowbit::testing;

namespace {

/// The shared tile after every copy landed: `in`'s bytes, with the end of
/// lane 3's last copy zero-filled.
std::vector<uint8_t> expectedTile(const std::vector<int32_t> &in,
                                  int copyBytes) {
  std::vector<uint8_t> tile(512);
  std::memcpy(tile.data(), in.data(), 512);
  int lastCopy = 3 * 16 + 16 - copyBytes;
  for (int i = lastCopy + zeroFilledSourceBytes(copyBytes); i < 3 * 16 + 16;
       ++i)
    tile[size_t(i)] = 0;
  return tile;
}

/// PTX ISA, ldmatrix: register j of lane l holds two 16-bit elements of
/// matrix j: (row l / 4, cols 2 (l % 4), + 1), transposed (rows 2 (l % 4),
/// + 1, col l / 4). Row r of matrix j starts at the address lane 8 j + r
/// supplies, which is shared row (7 (8 j + r)) % 32 here.
uint32_t expectedRegister(const std::vector<uint8_t> &tile, int lane,
                          int matrix, bool transpose) {
  uint32_t word = 0;
  for (int half = 0; half < 2; ++half) {
    int row = transpose ? 2 * (lane % 4) + half : lane / 4;
    int col = transpose ? lane / 4 : 2 * (lane % 4) + half;
    int sharedRow = (7 * (8 * matrix + row)) % 32;
    uint16_t value;
    std::memcpy(&value, &tile[size_t(16 * sharedRow + 2 * col)], 2);
    word |= uint32_t(value) << (16 * half);
  }
  return word;
}

std::vector<int32_t> inputWords() {
  std::vector<int32_t> in(128);
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = int32_t(0x9e3779b9u * uint32_t(i + 1));
  return in;
}

} // namespace

TEST_CASE("emulator: cp.async and ldmatrix move the bytes the PTX ISA says",
          "[emulator][mma]") {
  int checked = 0;
  for (int copyBytes : {4, 8, 16})
    for (int matrices : {1, 2, 4})
      for (bool transpose : {false, true}) {
        MatrixMemoryKernel kernel{copyBytes, matrices, transpose};
        std::vector<int32_t> in = inputWords(), out(128, 0x55555555);
        std::string error =
            runI32Kernel(matrixMemoryKernelText(kernel).c_str(), "sm_90a",
                         {{&in, false}, {&out, true}});
        INFO("cp-size " << copyBytes << ", ldmatrix .x" << matrices
                        << (transpose ? ".trans" : "") << ": " << error);
        REQUIRE(error == "");
        std::vector<uint8_t> tile = expectedTile(in, copyBytes);
        for (int lane = 0; lane < 32; ++lane)
          for (int j = 0; j < matrices; ++j) {
            INFO("lane " << lane << " register " << j);
            CHECK(uint32_t(out[size_t(4 * lane + j)]) ==
                  expectedRegister(tile, lane, j, transpose));
            ++checked;
          }
      }
  // Two commit groups, wait_group 1 then wait_group 0: every byte lands.
  MatrixMemoryKernel kernel{8, 4, false,
                            MatrixMemoryKernel::Rule::WaitOneThenZero};
  std::vector<int32_t> in = inputWords(), out(128, 0);
  REQUIRE(runI32Kernel(matrixMemoryKernelText(kernel).c_str(), "sm_90a",
                       {{&in, false}, {&out, true}}) == "");
  std::vector<uint8_t> tile = expectedTile(in, 8);
  for (int lane = 0; lane < 32; ++lane)
    for (int j = 0; j < 4; ++j)
      CHECK(uint32_t(out[size_t(4 * lane + j)]) ==
            expectedRegister(tile, lane, j, false));
  std::cout << "emulator: cp.async (4/8/16 bytes, zero-fill) + ldmatrix "
               "(x1/x2/x4, .trans): "
            << checked << " registers bit-exact\n";
}

TEST_CASE("emulator: a cp.async or ldmatrix that breaks a rule is an error",
          "[emulator][mma]") {
  using Rule = MatrixMemoryKernel::Rule;
  struct Case {
    const char *name;
    MatrixMemoryKernel kernel;
    std::vector<const char *> expected;
  } cases[] = {
      {"no cp.async.wait_group before the barrier",
       {16, 4, false, Rule::NoWait},
       {"ldmatrix row load", "has not landed",
        "cp.async.wait_group must complete it"}},
      {"wait_group 1 of two groups",
       {8, 4, false, Rule::WaitOneOfTwo},
       {"ldmatrix row load", "has not landed"}},
      {"no barrier after the wait",
       {16, 4, false, Rule::NoBarrier},
       {"shared-memory race", "ldmatrix row load", "no barrier between"}},
      {"a misaligned ldmatrix row",
       {16, 4, false, Rule::MisalignedRow},
       {"thread (0,0,0)", "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
        "is not aligned to 16 bytes"}},
      {"a cp.async source past the end",
       {16, 4, false, Rule::SourcePastEnd},
       {"thread (31,0,0)", "cp.async source read", "runs past the end of"}},
      {"an ldmatrix row in global memory",
       {16, 2, true, Rule::GlobalRow},
       {"thread (0,0,0)", "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16",
        "is not 16 bytes inside shared memory"}},
      {"a second cp.async into a pending destination",
       {8, 4, false, Rule::CopiedTwice},
       {"thread (31,0,0)", "is already the destination of a pending cp.async"}},
      {"wait_group 0 with the copies never committed",
       {16, 4, false, Rule::NotCommitted},
       {"ldmatrix row load", "has not landed"}},
  };
  for (const Case &c : cases) {
    std::vector<int32_t> in = inputWords(), out(128, 0);
    std::string error = runI32Kernel(matrixMemoryKernelText(c.kernel).c_str(),
                                     "sm_90a", {{&in, false}, {&out, true}});
    INFO(c.name << ": " << error);
    CHECK_THAT(error, Catch::Contains("thread ("));
    for (const char *expected : c.expected)
      CHECK_THAT(error, Catch::Contains(expected));
    std::cout << "emulator: refused (" << c.name << "): " << error << "\n";
  }
}
