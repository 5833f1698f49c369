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
        &row.mmaSyncIssueSlots,      &row.l1WavefrontsPerClock,
        &row.launchOverheadSeconds,  &row.contendedAtomicSeconds,
        &row.conversionLanesPerClock};
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
