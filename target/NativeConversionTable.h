//===- NativeConversionTable.h - Which cvt each chip has --------*- C++ -*-===//
//
// The one table of native conversions, keyed by (format, direction,
// rounding, saturate): each row says which chips and PTX versions have the
// instruction and which NVVM op emits it. Everything not in the table, or
// not available on the target, stays for the codec expansion
// (lowbit-expand-codecs). Plain C++, no MLIR: the runtime and the tests ask
// it too.
//
// The requirements are LLVM 22's, found by running llc 22 on each intrinsic
// for every chip and PTX version of the target table, each in a child
// process (llc, like the JIT, aborts on a cvt the chip lacks):
//   - f32 -> e4m3x2/e5m2x2 and e4m3x2/e5m2x2 -> f16x2: sm_89 with PTX 8.1,
//     or sm_90 and newer with PTX 7.8;
//   - e2m1x2, e2m3x2, e3m2x2, ue8m0x2 (both directions): exactly sm_100a,
//     sm_100f, sm_103a, sm_120a, sm_120f and sm_121a, each from its own
//     minimum PTX version. Not sm_101a (an arch-specific Blackwell chip
//     that LLVM 22 gives none of them: "Cannot select"), not plain
//     sm_100/sm_120, not sm_90a.
// tests/gpu/TargetSweepTest.cpp compiles every scheme for every chip and
// PTX version in process, so a row that promises too much aborts it.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TARGET_NATIVECONVERSIONTABLE_H
#define LOWBIT_TARGET_NATIVECONVERSIONTABLE_H

#include "format/Format.h"
#include "target/ChipCapabilities.h"
#include "target/Target.h"

#include <string>
#include <string_view>
#include <vector>

namespace lowbit {

enum class ConversionDirection { Encode, Decode };

/// The NVVM op a row emits (see LowbitNativeConversions.cpp).
enum class NativeInstruction {
  F32x2ToF8x2, ///< nvvm.convert.f32x2.to.f8x2 (e4m3, e5m2, ue8m0)
  F32x2ToF6x2, ///< nvvm.convert.f32x2.to.f6x2 (e2m3, e3m2)
  F32x2ToF4x2, ///< nvvm.convert.f32x2.to.f4x2 (e2m1)
  F8x2ToF16x2, ///< nvvm.convert.f8x2.to.f16x2 (e4m3, e5m2)
  F6x2ToF16x2, ///< nvvm.convert.f6x2.to.f16x2 (e2m3, e3m2)
  F4x2ToF16x2, ///< nvvm.convert.f4x2.to.f16x2 (e2m1)
};

struct NativeConversion {
  // Key.
  std::string_view formatName; ///< canonical model name ("e4m3")
  ConversionDirection direction;
  Rounding rounding;
  bool saturate; ///< encode only; decodes use `true`
  // What the target must have; any one of the requirements suffices.
  std::vector<ChipRequirement> anyOf;
  // What to emit.
  NativeInstruction instruction;
  std::string_view ptxMnemonic; ///< for docs and FileCheck tests
  /// Encode |x| (unsigned formats reuse the signed instruction: ue4m3 codes
  /// are e4m3 codes with a zero sign bit).
  bool encodeMagnitude = false;
};

/// Every row.
const std::vector<NativeConversion> &nativeConversionTable();

/// Whether `target` satisfies one of `row`'s requirements.
bool targetHas(const Target &target, const NativeConversion &row);

/// The row for a conversion that `target` can do natively, or nullptr
/// (then the codec expansion handles it). Encodes pass their rounding and
/// saturation; decodes pass NearestEven and true.
const NativeConversion *findNativeConversion(const Target &target,
                                             const Format &format,
                                             ConversionDirection direction,
                                             Rounding rounding, bool saturate);

/// "cvt.rn.satfinite.e4m3x2.f32 on sm_89 (PTX >= 8.1)" style text of what
/// `target` would use for each row: for docs, the CLI and tests.
std::vector<std::string> describeNativeConversions(const Target &target);

/// A unit attribute on a lowbit.decode whose consumer needs only a NaN's
/// NaN-ness, not the codec's NaN bits (decode attention: a NaN code makes
/// the output NaN either way): the native decode then keeps the cvt's
/// canonical NaN instead of rebuilding the codec's (docs/decode-attention.md).
inline constexpr std::string_view kDecodeAnyNanAttr = "lowbit.any_nan_bits";

} // namespace lowbit

#endif // LOWBIT_TARGET_NATIVECONVERSIONTABLE_H
