//===- ChipTableTest.cpp - One row per chip, each value with a source -----===//
//
// target/ChipTable.h: every value has a source, an assumed one says so
// first, the limits are consistent, and the names of one chip (sm_100,
// sm_100a, sm_100f) read one row.
//
//===----------------------------------------------------------------------===//

#include "target/ChipTable.h"
#include "target/ChipCapabilities.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace lowbit;

TEST_CASE("every value of the chip table has a source") {
  int devices = 0;
  for (const ChipConstants &row : chipTable()) {
    INFO(row.chip);
    REQUIRE(lookupChip(row.chip));
    CHECK(lookupChip(row.chip)->smVersion == row.smVersion);
    std::vector<const Sourced *> values = {
        &row.registersPerSm,         &row.maxThreadsPerSm,
        &row.maxBlocksPerSm,         &row.sharedBytesPerSm,
        &row.registerAllocationUnit, &row.maxRegistersPerThread,
        &row.maxThreadsPerBlock,     &row.staticSharedBytesPerBlock,
        &row.maxSharedBytesPerBlock, &row.issuePerSmPerClock,
        &row.mufuLanesPerClock,      &row.int32LanesPerClock,
        &row.l1WavefrontsPerClock,   &row.launchOverheadSeconds,
        &row.contendedAtomicSeconds, &row.conversionLanesPerClock};
    if (row.hasDevice()) {
      ++devices;
      values.insert(values.end(),
                    {&row.smCount, &row.hbmBytesPerSecond, &row.clockHz,
                     &row.memoryLatencySeconds, &row.fp32LanesPerClock});
    }
    for (const Sourced *value : values) {
      CHECK(value->value > 0);
      CHECK_FALSE(value->source.empty());
      CHECK(value->assumed == value->source.starts_with("ASSUMED"));
    }
    CHECK(row.maxSharedBytesPerBlock.value < row.sharedBytesPerSm.value);
    CHECK(row.staticSharedBytesPerBlock.value <=
          row.maxSharedBytesPerBlock.value);
    CHECK(row.maxThreadsPerBlock.value <= row.maxThreadsPerSm.value);
  }
  CHECK(devices == 5);
}

TEST_CASE("a tensor peak per mma.sync kind, zero where the chip has none") {
  const std::vector<std::pair<MmaKind, TensorInstruction>> kinds = {
      {MmaKind::F16, TensorInstruction::MmaSyncF16},
      {MmaKind::Fp8, TensorInstruction::MmaSyncF8},
      {MmaKind::S8, TensorInstruction::MmaSyncS8},
      {MmaKind::Fp4BlockScaled, TensorInstruction::MmaSyncBlockScale}};
  for (const ChipConstants &row : chipTable()) {
    if (!row.hasDevice())
      continue;
    INFO(row.chip);
    std::string error;
    // At PTX 8.7 every chip has each instruction it can have (sm_89's
    // default 8.1 lacks its e4m3 mma.sync).
    std::optional<Target> target =
        parseTarget(std::string(row.chip) + "+ptx87", &error);
    REQUIRE(target);
    CHECK(row.mmaSyncShareOfPeak.value > 0);
    CHECK(row.mmaSyncShareOfPeak.value <= 1);
    CHECK_FALSE(row.mmaSyncShareOfPeak.source.empty());
    for (auto [kind, instruction] : kinds) {
      INFO(mmaKindName(kind));
      const Sourced &peak = tensorMacsPerClock(row, kind);
      CHECK_FALSE(peak.source.empty());
      CHECK(peak.assumed == peak.source.starts_with("ASSUMED"));
      CHECK((peak.value > 0) == targetHas(*target, instruction));
      CHECK(mmaSyncMacsPerClock(row, kind) ==
            peak.value * row.mmaSyncShareOfPeak.value);
    }
  }
  // The figures the report's GEMM lines rest on.
  const ChipConstants &h200 = *chipConstants("sm_90a");
  CHECK(mmaSyncMacsPerClock(h200, MmaKind::F16) == 1024);
  CHECK(mmaSyncMacsPerClock(h200, MmaKind::Fp8) == 2048);
  CHECK(mmaSyncMacsPerClock(h200, MmaKind::S8) == 2048);
  CHECK(mmaSyncMacsPerClock(*chipConstants("sm_120a"),
                            MmaKind::Fp4BlockScaled) == 2048);
  CHECK(mmaSyncMacsPerClock(*chipConstants("sm_80"), MmaKind::S8) == 2048);
  CHECK(mmaSyncMacsPerClock(*chipConstants("sm_89"), MmaKind::Fp8) == 1024);
}

TEST_CASE("the names of one chip read one row") {
  const ChipConstants *b200 = chipConstants("sm_100a");
  REQUIRE(b200);
  CHECK(b200->device == "B200");
  CHECK(chipConstants("sm_100") == b200);
  CHECK(chipConstants("sm_100f") == b200);
  CHECK(chipConstants("sm_90") == chipConstants("sm_90a"));
  // Not recorded, or not a chip: no row rather than a guess.
  CHECK_FALSE(chipConstants("sm_87"));
  CHECK_FALSE(chipConstants("sm_101a"));
  CHECK_FALSE(chipConstants("sm_999"));
  // The largest shared memory a block of any recorded chip may take.
  CHECK(largestSharedBytesPerBlock() == 227 * 1024);
  // ChipCapabilities' limits are the row's.
  std::optional<ChipResources> blackwell =
      chipResources(*lookupChip("sm_120a"));
  REQUIRE(blackwell);
  CHECK(blackwell->maxBlocksPerSm ==
        int(chipConstants("sm_120a")->maxBlocksPerSm.value));
}
