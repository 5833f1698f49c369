//===- ChipCapabilitiesTest.cpp - The tensor-core table against llc -------===//
//
// target/ChipCapabilities.h says which chip and PTX version has each
// tensor-core instruction family. LLVM 22's NVPTX backend is the judge:
// llc, one child process per probe (it aborts on an instruction the chip
// lacks), compiles one intrinsic of the family exactly where the table says
// the target has it. Each chip is probed at its oldest and newest PTX
// version and on both sides of every PTX bound a row names for it.
//
//===----------------------------------------------------------------------===//

#include "target/ChipCapabilities.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <unistd.h>

using namespace lowbit;

namespace {

/// A function calling one intrinsic of the family, as LLVM IR.
std::string probeIr(TensorInstruction instruction) {
  // The result is stored: an unused call would be deleted before
  // instruction selection, and llc would accept it anywhere.
  auto call = [](const std::string &result, const std::string &name,
                 const std::string &types, const std::string &arguments) {
    std::string element = result.substr(1, result.find(',') - 1);
    return "declare " + result + " @" + name + "(" + types +
           ")\ndefine void @probe(ptr %p, i32 %a, <2 x half> %h) {\n"
           "  %r = call " +
           result + " @" + name + "(" + arguments + ")\n  %x = extractvalue " +
           result + " %r, 0\n  store " + element +
           " %x, ptr %p\n  ret void\n}\n";
  };
  const std::string f32x4 = "{float, float, float, float}";
  const std::string zeros = "float 0.0, float 0.0, float 0.0, float 0.0";
  const std::string a6 = "i32 %a, i32 %a, i32 %a, i32 %a, i32 %a, i32 %a";
  const std::string i6 = "i32, i32, i32, i32, i32, i32";
  switch (instruction) {
  case TensorInstruction::MmaSyncF16:
    return call(f32x4, "llvm.nvvm.mma.m16n8k16.row.col.f32.f32",
                "<2 x half>, <2 x half>, <2 x half>, <2 x half>, <2 x half>, "
                "<2 x half>, float, float, float, float",
                "<2 x half> %h, <2 x half> %h, <2 x half> %h, <2 x half> %h, "
                "<2 x half> %h, <2 x half> %h, " +
                    zeros);
  case TensorInstruction::MmaSyncS8:
    return call("{i32, i32, i32, i32}", "llvm.nvvm.mma.m16n8k32.row.col.s8",
                i6 + ", i32, i32, i32, i32",
                a6 + ", i32 0, i32 0, i32 0, i32 0");
  case TensorInstruction::MmaSyncF8:
    return call(f32x4, "llvm.nvvm.mma.m16n8k32.row.col.f32.e4m3.e4m3.f32",
                i6 + ", float, float, float, float", a6 + ", " + zeros);
  case TensorInstruction::MmaSyncBlockScale:
    return call(f32x4,
                "llvm.nvvm.mma.block.scale.m16n8k32.row.col.mxf8f6f4.f32."
                "e2m1.e2m1.f32.ue8m0",
                i6 + ", float, float, float, float, i32, i16, i16, i32, i16, "
                     "i16",
                a6 + ", " + zeros +
                    ", i32 %a, i16 0, i16 0, i32 %a, i16 0, i16 0");
  case TensorInstruction::Wgmma:
  case TensorInstruction::Tcgen05: {
    std::string name = instruction == TensorInstruction::Wgmma
                           ? "llvm.nvvm.wgmma.fence.sync.aligned"
                           : "llvm.nvvm.tcgen05.fence.before.thread.sync";
    return "declare void @" + name +
           "()\ndefine void @probe() {\n  call void @" + name +
           "()\n  ret void\n}\n";
  }
  }
  return "";
}

/// Whether llc compiles `ir` for `chip` at `ptxVersion`.
bool llcAccepts(const std::string &ir, const std::string &chip,
                unsigned ptxVersion) {
  char path[] = "/tmp/lowbit-capability-XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  close(fd);
  std::ofstream(path) << ir;
  // exec: the shell reports no "Aborted" of its own.
  std::string command = "exec " LOWBIT_LLC " -march=nvptx64 -mcpu=" + chip +
                        " -mattr=+ptx" + std::to_string(ptxVersion) + " " +
                        path + " -o /dev/null > /dev/null 2>&1";
  int status = std::system(command.c_str());
  std::remove(path);
  return status == 0;
}

} // namespace

TEST_CASE("each tensor-core row promises exactly what llc compiles") {
  REQUIRE(access(LOWBIT_LLC, X_OK) == 0);
  int probes = 0, present = 0;
  for (const TensorInstructionInfo &row : tensorInstructionTable()) {
    std::string ir = probeIr(row.instruction);
    REQUIRE_FALSE(ir.empty());
    for (const ChipInfo &chip : knownChips()) {
      std::vector<unsigned> versions = ptxVersionsFor(chip);
      std::set<unsigned> probed = {versions.front(), versions.back()};
      // Both sides of each bound a requirement of this chip names.
      for (const ChipRequirement &requirement : row.anyOf)
        if (requirement.chip.empty() || requirement.chip == chip.name)
          for (unsigned bound :
               {requirement.minPtxVersion, requirement.maxPtxVersion + 1}) {
            auto at = std::lower_bound(versions.begin(), versions.end(), bound);
            if (at != versions.end())
              probed.insert(*at);
            if (at != versions.begin())
              probed.insert(*(at - 1));
          }
      for (unsigned ptx : probed) {
        Target target{Target::Kind::Nvidia, std::string(chip.name), ptx};
        bool promised = targetHas(target, row.instruction);
        INFO(row.ptxMnemonic << " on " << target.str());
        CHECK(llcAccepts(ir, target.chip, ptx) == promised);
        ++probes;
        present += promised;
      }
    }
  }
  // Every family is somewhere, and not everywhere.
  CHECK(present > 0);
  CHECK(present < probes);
}

TEST_CASE("the per-SM limits of the recorded chips") {
  const ChipInfo *hopper = lookupChip("sm_90a");
  REQUIRE(hopper);
  std::optional<ChipResources> h = chipResources(*hopper);
  REQUIRE(h);
  CHECK(h->registersPerSm == 65536);
  CHECK(h->maxThreadsPerSm == 2048);
  CHECK(h->maxBlocksPerSm == 32);
  CHECK(h->sharedBytesPerSm == 228 * 1024);
  CHECK(h->maxSharedBytesPerBlock == 227 * 1024);
  std::optional<ChipResources> ada = chipResources(*lookupChip("sm_89"));
  REQUIRE(ada);
  CHECK(ada->maxThreadsPerSm == 1536);
  CHECK(ada->sharedBytesPerSm == 100 * 1024);
  // Not recorded: no guess.
  CHECK_FALSE(chipResources(*lookupChip("sm_101a")));
  // Every recorded chip's limits are consistent.
  for (const ChipInfo &chip : knownChips())
    if (std::optional<ChipResources> r = chipResources(chip)) {
      INFO(chip.name);
      CHECK(r->maxSharedBytesPerBlock < r->sharedBytesPerSm);
      CHECK(r->staticSharedBytesPerBlock <= r->maxSharedBytesPerBlock);
      CHECK(r->maxThreadsPerBlock <= r->maxThreadsPerSm);
    }
}
