//===- KvGpuMappingTest.cpp - The one-warp-per-row KV kernels -------------===//
//
// lowbit-to-gpu's mapping of lowbit.kv_append / kv_dequantize
// (lowering/GpuKvAppend.h) in the GPU emulator, bit for bit against
// kv/KvQuantize.h: rows whose head_dim is not a multiple of the 16-byte
// vector, groups that do not divide head_dim, groups wider than a warp's
// lanes and many groups per warp trip; buffers whose base is not aligned
// to a vector (the scalar accesses); the mapping's sizes; and that the
// compile entry takes it (one warp per row, shuffles, vector accesses).
//
//===----------------------------------------------------------------------===//

#include "KvEmulatorRun.h"
#include "KvKernelTestSupport.h"

#include "lowering/GpuKvAppend.h"
#include "runtime/compiler/KvFamilyCompile.h"

#include <catch2/catch.hpp>

#include <array>
#include <cstring>

using namespace lowbit;
using namespace lowbit::kv;
using namespace lowbit::kvtest;

TEST_CASE("kvRowMapping spreads a row over the warp", "[kvgpu]") {
  // bf16 in, kv_int8_g64, head_dim 256: 16-byte chunks of 8, a group's 8
  // chunks on 8 lanes, 4 groups per warp trip.
  KvRowMapping wide = kvRowMapping(256, 64, 2);
  CHECK(wide.width == 8);
  CHECK(wide.chunksPerRow == 32);
  CHECK(wide.chunksPerGroup == 8);
  CHECK(wide.groupsPerRow == 4);
  CHECK(wide.lanesPerGroup == 8);
  CHECK(wide.groupsPerTrip == 4);
  CHECK(wide.trips == 1);
  // head_dim 128: 8-byte chunks of 4, so that every lane has one; a group
  // on 16 lanes.
  KvRowMapping narrow = kvRowMapping(128, 64, 2);
  CHECK(narrow.width == 4);
  CHECK(narrow.chunksPerRow == 32);
  CHECK(narrow.lanesPerGroup == 16);
  CHECK(narrow.groupsPerTrip == 2);
  // G = 48 does not divide 144: chunks of 4, 12 per group on 16 lanes,
  // 3 groups (the last one short) in 2 trips.
  KvRowMapping ragged = kvRowMapping(144, 48, 2);
  CHECK(ragged.width == 4);
  CHECK(ragged.chunksPerRow == 36);
  CHECK(ragged.chunksPerGroup == 12);
  CHECK(ragged.groupsPerRow == 3);
  CHECK(ragged.lanesPerGroup == 16);
  CHECK(ragged.trips == 2);
  // G = 7: single elements, 7 chunks on 8 lanes, 6 groups in 2 trips.
  KvRowMapping odd = kvRowMapping(40, 7, 2);
  CHECK(odd.width == 1);
  CHECK(odd.lanesPerGroup == 8);
  CHECK(odd.groupsPerTrip == 4);
  CHECK(odd.trips == 2);
  // A group wider than the warp: each lane folds several chunks.
  KvRowMapping wideGroup = kvRowMapping(520, 512, 2);
  CHECK(wideGroup.chunksPerGroup == 64);
  CHECK(wideGroup.lanesPerGroup == 32);
  CHECK(wideGroup.trips == 2);
  // kv_fp8: one group, lanes stride over the chunks; f32 out: chunks of 4.
  KvRowMapping fp8 = kvRowMapping(512, 0, 2);
  CHECK(fp8.width == 8);
  CHECK(fp8.chunksPerRow == 64);
  CHECK(kvRowMapping(128, 64, 4).width == 4);
  CHECK(kvRowMapping(72, 64, 2).width == 2);
  CHECK(kvRowMapping(7, 0, 2).width == 1);
}

TEST_CASE("kv_int8 rows that are not whole vectors in the GPU emulator",
          "[kvemu][kvgpu]") {
  KvRunner run = emulatorOn("sm_90a");
  // head_dim 144: 36 chunks of 4 (lanes 0-3 take a second one), groups
  // of 48 on 16 lanes and a short one of 48 - 0; G = 32 leaves 144 = 4 x
  // 32 + 16.
  checkEveryLayoutAndType(run, "kv_int8_g48 convention=multiplier", 144);
  checkEveryLayoutAndType(run, "kv_int8_g32 convention=divisor", 144);
  // head_dim 36: single elements, groups of 16 and a short one of 4.
  checkEveryLayoutAndType(run, "kv_int8_g16 convention=multiplier", 36);
  // head_dim 256, G = 64: 16-byte chunks, 4 groups per trip.
  checkEveryLayoutAndType(run, "kv_int8_g64 convention=divisor", 256);
  // G = 2: 36 one-chunk groups, 32 per trip, in 2 trips.
  checkEveryLayoutAndType(run, "kv_int8_g2 convention=multiplier", 72);
  // G = 512: 64 chunks on 32 lanes, then a short group of 8.
  checkEveryLayoutAndType(run, "kv_int8_g512 convention=divisor", 520);
}

TEST_CASE("kv_fp8 rows that are not whole vectors in the GPU emulator",
          "[kvemu][kvgpu]") {
  for (const char *targetName : {"sm_90a", "sm_80"}) {
    INFO(targetName);
    KvRunner run = emulatorOn(targetName);
    // 72: 36 chunks of 2; 7: single elements.
    checkEveryLayoutAndType(run, "kv_fp8_e4m3 scale=per_head", 72);
    // Odd: single elements, the scalar encode.
    checkEveryLayoutAndType(run, "kv_fp8_e5m2 scale=per_tensor", 7);
  }
}

namespace {

/// A copy of `bytes` whose first byte sits `offset` bytes past a 16-byte
/// boundary.
struct ShiftedCopy {
  ShiftedCopy(const void *bytes, size_t size, size_t offset)
      : storage(size + 32) {
    auto base = reinterpret_cast<uintptr_t>(storage.data());
    start = storage.data() + ((16 - base % 16) % 16) + offset;
    std::memcpy(start, bytes, size);
  }
  std::vector<uint8_t> bytes(size_t size) const {
    return std::vector<uint8_t>(start, start + size);
  }
  std::vector<uint8_t> storage;
  uint8_t *start;
};

/// Appends and reads back `schemeText`'s case with the streamed buffers
/// (values, codes) off their vector alignment, which the emulator would
/// fault on a vector access: the kernels must take their scalar accesses
/// and still write the reference's bytes.
void checkMisaligned(const std::string &schemeText, int64_t headDim) {
  KvRunner run = emulatorOn("sm_90a");
  KvCase setup = makeCase(schemeText, false, KvValueType::F16, headDim);
  INFO(formatKvKernelSpec(setup.appendSpec));
  KvCacheBuffers cache = setup.emptyCache();
  std::vector<compiler::KvBuffer> buffers = setup.appendBuffers(cache);
  ShiftedCopy input(setup.inputBits.data(), setup.inputBits.size() * 2, 2);
  ShiftedCopy codes(cache.codes.data(), cache.codes.size(), 1);
  buffers[0].data = input.start;
  buffers[1].data = codes.start;
  REQUIRE("" == run(setup.appendSpec, buffers));
  KvCacheBuffers expected = setup.expectedCache();
  CHECK(firstDifference(codes.bytes(cache.codes.size()), expected.codes) == "");
  CHECK(firstDifference(cache.scales, expected.scales) == "");

  KvKernelSpec readSpec = setup.dequantizeSpec(KvValueType::F32);
  std::vector<uint8_t> output(setup.valueBytes(KvValueType::F32), 0xEE);
  std::vector<compiler::KvBuffer> readBuffers =
      setup.dequantizeBuffers(expected, output);
  ShiftedCopy readCodes(expected.codes.data(), expected.codes.size(), 3);
  ShiftedCopy shiftedOutput(output.data(), output.size(), 4);
  readBuffers[0].data = readCodes.start;
  readBuffers[3].data = shiftedOutput.start;
  REQUIRE("" == run(readSpec, readBuffers));
  CHECK(firstDifference(shiftedOutput.bytes(output.size()),
                        setup.expectedDequantized(KvValueType::F32)) == "");
}

} // namespace

TEST_CASE("KV kernels on buffers off the vector alignment", "[kvemu][kvgpu]") {
  checkMisaligned("kv_int8_g64 convention=multiplier", 72);
  checkMisaligned("kv_fp8_e4m3 scale=per_head", 256);
}

TEST_CASE("the KV kernels are one warp per row", "[kvgpu]") {
  // 2 sequences x 3 heads x 5 tokens = 30 rows = 960 threads: 4 blocks
  // of 256.
  for (bool paged : {false, true}) {
    KvCase setup = makeCase("kv_int8_g64 convention=multiplier", paged,
                            KvValueType::BF16, 256);
    KvCacheBuffers cache = setup.emptyCache();
    std::vector<uint8_t> output(setup.valueBytes(KvValueType::F16));
    for (const auto &[spec, buffers] :
         {std::pair{setup.appendSpec, setup.appendBuffers(cache)},
          std::pair{setup.dequantizeSpec(KvValueType::F16),
                    setup.dequantizeBuffers(cache, output)}}) {
      INFO(formatKvKernelSpec(spec));
      const KvEmulatedKernel &kernel = emulatedKernelFor(spec, "sm_90a");
      REQUIRE(kernel.plan().steps.size() == 1);
      auto resolved = std::make_unique<launch::ResolvedStep>();
      REQUIRE(kernel.resolve(0, buffers, *resolved) == "");
      CHECK(std::array<int64_t, 6>{resolved->sizes[0], resolved->sizes[1],
                                   resolved->sizes[2], resolved->sizes[3],
                                   resolved->sizes[4], resolved->sizes[5]} ==
            std::array<int64_t, 6>{4, 1, 1, 256, 1, 1});
      std::string error;
      std::optional<Target> target = parseTarget("sm_90a", &error);
      REQUIRE(target);
      auto ptx = compiler::compileKvFamilyToPtx(spec, *target);
      REQUIRE(errorText(ptx.takeError()) == "");
      bool append = spec.op == KvKernelOp::Append;
      // head_dim 256: 16-byte loads of the values (append) or stores
      // (dequantize), and the group amax's shuffles (append).
      CHECK(ptx->ptx.find(append ? "ld.global.v4" : "st.global.v4") !=
            std::string::npos);
      CHECK((ptx->ptx.find("shfl.sync.bfly") != std::string::npos) == append);
    }
  }
}
