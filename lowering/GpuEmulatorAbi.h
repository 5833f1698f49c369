//===- GpuEmulatorAbi.h - What emulated kernels and the runtime share -*- C++
//-*-===//
//
// The contract between the two halves of the GPU emulator (docs/emulator.md):
// lowering/GpuEmulator.cpp rewrites the NVVM ops of a kernel into calls to
// lowbit_emu_* functions with the codes below, and runtime/emulator/Simt.cpp
// defines those functions. Plain C++ (no MLIR, no runtime), so both include
// it and the dependency points one way: the runtime includes lowering's
// headers, never the reverse.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_GPUEMULATORABI_H
#define LOWBIT_LOWERING_GPUEMULATORABI_H

#include "lowering/GpuMmaLayout.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace lowbit::emulator {

/// A kernel's host entry: takes cuLaunchKernel's parameter array (each
/// element points at one parameter's value).
using KernelEntry = void (*)(void **parameters);

/// A range of host memory the kernels may access.
struct MemoryRange {
  const void *base = nullptr;
  size_t bytes = 0;
  bool writable = true;
  std::string name;
};

/// A runtime function the rewritten kernels call, by symbol name (the JIT
/// resolves the host module's declarations with these).
struct RuntimeSymbol {
  std::string_view name;
  void *address;
};

/// Codes of lowbit_emu_sreg's argument (the special registers).
enum class SpecialRegister : int32_t {
  TidX,
  TidY,
  TidZ,
  NtidX,
  NtidY,
  NtidZ,
  CtaidX,
  CtaidY,
  CtaidZ,
  NctaidX,
  NctaidY,
  NctaidZ,
  LaneId,
  WarpSize,
};

/// The warp-synchronous operations (lowbit_emu_warp_op's `kind`).
enum class WarpOpKind : int32_t {
  ShflBfly,
  ShflUp,
  ShflDown,
  ShflIdx,
  VoteAny,
  VoteAll,
  VoteBallot,
  VoteUni,
  ReduxAdd,
  ReduxAnd,
  ReduxMax,
  ReduxMin,
  ReduxOr,
  ReduxUmax,
  ReduxUmin,
  ReduxXor,
  ReduxFmin,
  ReduxFmax,
  ReduxFminAbs,
  ReduxFmaxAbs,
  ReduxFminNan,
  ReduxFmaxNan,
  ReduxFminAbsNan,
  ReduxFmaxAbsNan,
  SyncWarp,
  Elect,
  // The .aligned matrix ops: every lane of the warp at the same instruction
  // (its site), with the same variant (an MmaVariant or LdMatrixVariant
  // code).
  MmaSync,  ///< lowbit_emu_mma
  LdMatrix, ///< lowbit_emu_ldmatrix
};

/// One mma.sync.aligned.m16n8kK.row.col form: the multiplicands' element
/// types (A and B may differ for the 8-bit kinds), K, and .satfinite (the
/// integer kinds). The accumulators are s32 for s8/u8 multiplicands, f32
/// otherwise. The block-scaled forms (.kind::mxf4 / .kind::mxf4nvf4
/// .block_scale, m16n8k64 e2m1) add the scale vector size, the scales'
/// type and the byte-id / thread-id selectors of scale_A and scale_B
/// (immediates of the instruction, so part of the form).
struct MmaVariant {
  mma::MmaElement a = mma::MmaElement::F16, b = mma::MmaElement::F16;
  int k = 16;
  bool satfinite = false;
  /// .scale_vec::NX: 1, 2 or 4 scales per row of A and column of B; 0 for
  /// an mma without block scaling.
  int scaleVec = 0;
  /// ue4m3 scales (.kind::mxf4nvf4 .scale_vec::4X), else ue8m0.
  bool ue4m3 = false;
  /// .kind::mxf4nvf4 rather than .kind::mxf4.
  bool nvf4 = false;
  int byteIdA = 0, threadIdA = 0, byteIdB = 0, threadIdB = 0;

  bool integer() const {
    return a == mma::MmaElement::S8 || a == mma::MmaElement::U8;
  }
  bool blockScaled() const { return scaleVec != 0; }
  mma::MmaFragmentShape shapeA() const { return {k, a}; }
  mma::MmaFragmentShape shapeB() const { return {k, b}; }

  /// lowbit_emu_mma's `variant` argument.
  int32_t code() const {
    return int32_t(a) | int32_t(b) << 4 | k << 8 | int32_t(satfinite) << 16 |
           scaleVec << 17 | int32_t(ue4m3) << 20 | byteIdA << 21 |
           threadIdA << 23 | byteIdB << 25 | threadIdB << 27 |
           int32_t(nvf4) << 29;
  }
  static MmaVariant fromCode(int32_t code) {
    MmaVariant variant{mma::MmaElement(code & 15),
                       mma::MmaElement(code >> 4 & 15), code >> 8 & 255,
                       bool(code >> 16 & 1)};
    variant.scaleVec = code >> 17 & 7;
    variant.ue4m3 = bool(code >> 20 & 1);
    variant.byteIdA = code >> 21 & 3;
    variant.threadIdA = code >> 23 & 3;
    variant.byteIdB = code >> 25 & 3;
    variant.threadIdB = code >> 27 & 3;
    variant.nvf4 = bool(code >> 29 & 1);
    return variant;
  }
  /// The PTX instruction, e.g.
  /// mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32.
  std::string name() const {
    auto type = [](mma::MmaElement element) -> std::string {
      static const char *const names[] = {"f16", "bf16", "e4m3", "e5m2",
                                          "s8",  "u8",   "e2m1", "e2m1"};
      return names[int(element) & 7];
    };
    std::string accumulator = integer() ? "s32" : "f32";
    std::string scaling;
    if (blockScaled())
      scaling = std::string(".kind::") + (nvf4 ? "mxf4nvf4" : "mxf4") +
                ".block_scale.scale_vec::" + std::to_string(scaleVec) + "X";
    return "mma.sync.aligned.m16n8k" + std::to_string(k) + ".row.col" +
           scaling + (satfinite ? ".satfinite." : ".") + accumulator + "." +
           type(a) + "." + type(b) + "." + accumulator +
           (blockScaled() ? (ue4m3 ? ".ue4m3" : ".ue8m0") : "");
  }
};

/// One ldmatrix.sync.aligned.m8n8.xN{.trans}.shared.b16 form.
struct LdMatrixVariant {
  int matrices = 1; ///< .x1, .x2, .x4
  bool transpose = false;

  int32_t code() const { return matrices | int32_t(transpose) << 4; }
  static LdMatrixVariant fromCode(int32_t code) {
    return {code & 15, bool(code >> 4 & 1)};
  }
  std::string name() const {
    return "ldmatrix.sync.aligned.m8n8.x" + std::to_string(matrices) +
           (transpose ? ".trans" : "") + ".shared.b16";
  }
};

/// The formats of the native cvt ops (lowbit_emu_cvt_* `format`).
enum class CvtFormat : int32_t { E4M3, E5M2, UE8M0, E2M3, E3M2, E2M1 };

/// lowbit_emu_access's `kind`.
enum class AccessKind : int32_t { Load, Store, Atomic };

} // namespace lowbit::emulator

#endif // LOWBIT_LOWERING_GPUEMULATORABI_H
