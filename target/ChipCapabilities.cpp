//===- ChipCapabilities.cpp - What each chip has --------------------------===//
//
// The instruction rows were found as NativeConversionTable.cpp's were: llc
// 22 on one intrinsic of each family (llvm.nvvm.mma.m16n8k16.row.col.f32.f32,
// llvm.nvvm.mma.m16n8k32.row.col.s8, ...e4m3.e4m3.f32,
// llvm.nvvm.mma.block.scale.m16n8k32...mxf8f6f4..., llvm.nvvm.wgmma.fence,
// llvm.nvvm.tcgen05.fence) for every chip of the target table, at its
// minimum PTX version and around the row's: LLVM aborts on the others.
//
//===----------------------------------------------------------------------===//

#include "target/ChipCapabilities.h"

#include "target/ChipTable.h"

namespace lowbit {

bool targetMeetsAny(const Target &target,
                    const std::vector<ChipRequirement> &anyOf) {
  if (!target.isNvidia())
    return false;
  const ChipInfo *chip = lookupChip(target.chip);
  if (!chip)
    return false;
  bool accelerated = chip->featureSet != FeatureSet::Portable;
  for (const ChipRequirement &requirement : anyOf) {
    if (chip->smVersion < requirement.minSmVersion ||
        target.ptxVersion < requirement.minPtxVersion)
      continue;
    if (requirement.maxPtxVersion &&
        target.ptxVersion > requirement.maxPtxVersion)
      continue;
    if (requirement.needsAcceleratedFeatures && !accelerated)
      continue;
    if (!requirement.chip.empty() && requirement.chip != chip->name)
      continue;
    return true;
  }
  return false;
}

const std::vector<TensorInstructionInfo> &tensorInstructionTable() {
  using TI = TensorInstruction;
  static const std::vector<TensorInstructionInfo> table = {
      {TI::MmaSyncF16,
       "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
       {{80, false, 70}}},
      {TI::MmaSyncS8,
       "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32",
       {{80, false, 70}}},
      // sm_89 and newer, from PTX 8.4 on every one of them.
      {TI::MmaSyncF8,
       "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32",
       {{89, false, 84}}},
      // The consumer Blackwell chips only; the data-center ones block-scale
      // through tcgen05.
      {TI::MmaSyncBlockScale,
       "mma.sync.aligned.m16n8k32.row.col.kind::mxf8f6f4.block_scale",
       {{120, true, 87, "sm_120a"},
        {120, true, 88, "sm_120f"},
        {121, true, 88, "sm_121a"}}},
      {TI::Wgmma, "wgmma.mma_async.sync.aligned", {{90, true, 80, "sm_90a"}}},
      {TI::Tcgen05,
       "tcgen05.mma",
       {{100, true, 86, "sm_100a"},
        {100, true, 88, "sm_100f"},
        {101, true, 86, "sm_101a", /*maxPtxVersion=*/88},
        {103, true, 88, "sm_103a"}}},
  };
  return table;
}

bool targetHas(const Target &target, TensorInstruction instruction) {
  for (const TensorInstructionInfo &row : tensorInstructionTable())
    if (row.instruction == instruction)
      return targetMeetsAny(target, row.anyOf);
  return false;
}

std::optional<ChipResources> chipResources(const ChipInfo &chip) {
  const ChipConstants *row = chipConstants(chip);
  if (!row)
    return std::nullopt;
  ChipResources resources;
  resources.registersPerSm = int(row->registersPerSm.value);
  resources.registerAllocationUnit = int(row->registerAllocationUnit.value);
  resources.maxRegistersPerThread = int(row->maxRegistersPerThread.value);
  resources.maxThreadsPerSm = int(row->maxThreadsPerSm.value);
  resources.maxThreadsPerBlock = int(row->maxThreadsPerBlock.value);
  resources.maxBlocksPerSm = int(row->maxBlocksPerSm.value);
  resources.sharedBytesPerSm = int(row->sharedBytesPerSm.value);
  resources.maxSharedBytesPerBlock = int(row->maxSharedBytesPerBlock.value);
  resources.staticSharedBytesPerBlock =
      int(row->staticSharedBytesPerBlock.value);
  return resources;
}

} // namespace lowbit
