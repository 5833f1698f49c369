//===- NativeConversionTable.cpp - Which cvt each chip has ----------------===//
//
// The rows. Only conversions whose PTX semantics equal lowbit's model are
// listed (docs/numerics.md; tests/unit/NvidiaConversionTest.cpp checks the
// model against NVIDIA's own host implementations of the same cvt):
//   - the FP8/FP6/FP4 cvt instructions exist only as .satfinite, so the
//     non-saturating encodes always use the codec;
//   - ue8m0x2 exists only with .rz and .rp;
//   - decodes to f16x2 are exact for e4m3/e5m2/e2m3/e3m2/e2m1 (every value
//     is an f16), and f16 -> f32 is exact.
//
//===----------------------------------------------------------------------===//

#include "target/NativeConversionTable.h"

namespace lowbit {
namespace {

using Dir = ConversionDirection;
using Instr = NativeInstruction;

// LLVM 22: hasFP8ConversionSupport() = (sm >= 90 && ptx >= 78) ||
// (sm >= 89 && ptx >= 81).
const std::vector<ChipRequirement> kFp8Chips = {{90, false, 78},
                                                {89, false, 81}};
// LLVM 22: the e2m1/e2m3/e3m2/ue8m0 cvt intrinsics select on these chips
// only, each from its own minimum PTX version (llc, one child process per
// chip, PTX version and intrinsic). sm_101a has none of them.
const std::vector<ChipRequirement> kBlackwellChips = {
    {100, true, 86, "sm_100a"}, {100, true, 88, "sm_100f"},
    {103, true, 88, "sm_103a"}, {120, true, 87, "sm_120a"},
    {120, true, 88, "sm_120f"}, {121, true, 88, "sm_121a"}};

} // namespace

const std::vector<NativeConversion> &nativeConversionTable() {
  static const std::vector<NativeConversion> table = {
      // f32 -> FP8, sm_89+.
      {"e4m3", Dir::Encode, Rounding::NearestEven, true, kFp8Chips,
       Instr::F32x2ToF8x2, "cvt.rn.satfinite.e4m3x2.f32"},
      {"e5m2", Dir::Encode, Rounding::NearestEven, true, kFp8Chips,
       Instr::F32x2ToF8x2, "cvt.rn.satfinite.e5m2x2.f32"},
      {"ue4m3", Dir::Encode, Rounding::NearestEven, true, kFp8Chips,
       Instr::F32x2ToF8x2, "cvt.rn.satfinite.e4m3x2.f32", true},
      // f32 -> FP6/FP4/E8M0, Blackwell accelerated features only.
      {"e2m3", Dir::Encode, Rounding::NearestEven, true, kBlackwellChips,
       Instr::F32x2ToF6x2, "cvt.rn.satfinite.e2m3x2.f32"},
      {"e3m2", Dir::Encode, Rounding::NearestEven, true, kBlackwellChips,
       Instr::F32x2ToF6x2, "cvt.rn.satfinite.e3m2x2.f32"},
      {"e2m1", Dir::Encode, Rounding::NearestEven, true, kBlackwellChips,
       Instr::F32x2ToF4x2, "cvt.rn.satfinite.e2m1x2.f32"},
      {"e8m0", Dir::Encode, Rounding::TowardZero, true, kBlackwellChips,
       Instr::F32x2ToF8x2, "cvt.rz.satfinite.ue8m0x2.f32"},
      {"e8m0", Dir::Encode, Rounding::TowardPosInf, true, kBlackwellChips,
       Instr::F32x2ToF8x2, "cvt.rp.satfinite.ue8m0x2.f32"},
      // Decodes.
      {"e4m3", Dir::Decode, Rounding::NearestEven, true, kFp8Chips,
       Instr::F8x2ToF16x2, "cvt.rn.f16x2.e4m3x2"},
      {"e5m2", Dir::Decode, Rounding::NearestEven, true, kFp8Chips,
       Instr::F8x2ToF16x2, "cvt.rn.f16x2.e5m2x2"},
      {"e2m3", Dir::Decode, Rounding::NearestEven, true, kBlackwellChips,
       Instr::F6x2ToF16x2, "cvt.rn.f16x2.e2m3x2"},
      {"e3m2", Dir::Decode, Rounding::NearestEven, true, kBlackwellChips,
       Instr::F6x2ToF16x2, "cvt.rn.f16x2.e3m2x2"},
      {"e2m1", Dir::Decode, Rounding::NearestEven, true, kBlackwellChips,
       Instr::F4x2ToF16x2, "cvt.rn.f16x2.e2m1x2"},
  };
  return table;
}

bool targetHas(const Target &target, const NativeConversion &row) {
  return targetMeetsAny(target, row.anyOf);
}

const NativeConversion *findNativeConversion(const Target &target,
                                             const Format &format,
                                             ConversionDirection direction,
                                             Rounding rounding, bool saturate) {
  for (const NativeConversion &row : nativeConversionTable()) {
    if (row.formatName != format.name() || row.direction != direction ||
        row.rounding != rounding || row.saturate != saturate)
      continue;
    if (targetHas(target, row))
      return &row;
  }
  return nullptr;
}

std::vector<std::string> describeNativeConversions(const Target &target) {
  std::vector<std::string> lines;
  for (const NativeConversion &row : nativeConversionTable())
    if (targetHas(target, row))
      lines.push_back(std::string(row.formatName) + " " +
                      (row.direction == Dir::Encode ? "encode" : "decode") +
                      ": " + std::string(row.ptxMnemonic));
  return lines;
}

} // namespace lowbit
