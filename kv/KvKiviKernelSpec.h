//===- KvKiviKernelSpec.h - What one KIVI cache kernel computes -*- C++ -*-===//
//
// The MLIR-free description of a KIVI kernel (docs/kv-kernels.md, KIVI):
// lowbit.kivi_append (new tokens into the residual window, with every group
// of G tokens the append completes quantized: the flush) or
// lowbit.kivi_dequantize (a token range back to floats) on one side of the
// cache, keys or values. The buffer shapes below are the kernel ABI that
// the verifier, the compiler and the tests share; the arithmetic is
// kv/KvKivi.h's (the reference).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_KV_KVKIVIKERNELSPEC_H
#define LOWBIT_KV_KVKIVIKERNELSPEC_H

#include "kv/KvKernelSpec.h"
#include "kv/KvKivi.h"
#include "kv/KvPaged.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lowbit::kv {

/// "kv_kivi_int4" or "kv_kivi_int2".
std::string kiviSchemeName(int bits);
/// The bits of a KIVI scheme name; nullopt for any other name.
std::optional<int> parseKiviSchemeBits(std::string_view name);

/// One side of a KIVI cache: its grouping and the window it keeps.
struct KiviSide {
  int bits = 4;
  int64_t groupSize = 32; ///< G
  int64_t residual = 128; ///< R
  /// Keys (KIVI): one scale and zero per channel over G tokens. Otherwise
  /// per token in groups of G channels (values, and the per-token keys
  /// baseline).
  bool perChannel = false;
  /// KIVI's float zero (mn) by default; Integer: lowbit's zero-including
  /// range with an integer zero point. Zeros are f32 either way.
  KiviZero zero = KiviZero::Float;

  /// The reference options whose keys (perChannel) or values this side is.
  KiviOptions options() const;
  /// The scheme each group is quantized with (keySchemeOf / valueSchemeOf).
  Scheme scheme() const;
  /// Bytes per token row of codes: ceil(D / 2) (int4, nibble-packed, the
  /// even channel in the low nibble) or D (int2, one code per byte).
  int64_t codeWidth(int64_t headDim) const;
  /// Scale and zero columns: D (per channel) or ceil(D / G).
  int64_t paramWidth(int64_t headDim) const;
  /// Tokens of the residual ring: R + G (the window never holds more than
  /// R + G - 1 tokens after an append).
  int64_t residualSlots() const { return residual + groupSize; }
  /// Paged per-channel parameter rows per page: ceil(16 / G) (the groups
  /// that start in one page of 16 tokens).
  int64_t pageParamRows() const;
  /// Tokens quantized once a sequence holds `tokens`: floor(max(0, T - R)
  /// / G) * G.
  int64_t quantizedPrefix(int64_t tokens) const;
  bool operator==(const KiviSide &other) const = default;
};

/// KIVI's validation (bits 2 or 4, G in [1, 4096], R in [0, 128]).
bool validateKiviSide(const KiviSide &side, std::string *error);

struct KiviKernelSpec {
  KvKernelOp op = KvKernelOp::Append;
  KiviSide side;
  /// The residual's element type, and append's input: f16 or bf16.
  KvValueType residualType = KvValueType::F16;
  /// Dequantize's output: f16, bf16 or f32.
  KvValueType outputType = KvValueType::F32;
  KvLayout layout = KvLayout::Contiguous;
  int64_t heads = 1, headDim = 1;
  bool operator==(const KiviKernelSpec &other) const = default;
};

/// One line naming every field, for messages and compile caches:
/// "kivi_append kv_kivi_int4 group=32 residual=128 per_channel zero=float
/// from=f16 layout=paged heads=2 head_dim=40" (dequantize:
/// "kivi_dequantize ... to=f32").
std::string formatKiviKernelSpec(const KiviKernelSpec &spec);

/// The spec's own checks (the side, f16/bf16 residual, heads and head_dim
/// in [1, 2^30]); a message naming the bad value.
bool validateKiviKernelSpec(const KiviKernelSpec &spec, std::string *error);

/// Parses formatKiviKernelSpec's text: `kivi_append|kivi_dequantize
/// kv_kivi_int4|kv_kivi_int2 [group=G] [residual=R]
/// [per_channel|per_token] [zero=float|int] [from=f16|bf16]
/// [to=f16|bf16|f32] [layout=contiguous|paged] heads=N head_dim=N`
/// (defaults: group=32, residual=128, per_token, zero=float, from=f16,
/// to=f32, contiguous; to= belongs to kivi_dequantize only), then
/// validateKiviKernelSpec. nullopt and a message quoting the bad token.
std::optional<KiviKernelSpec> parseKiviKernelSpec(std::string_view text,
                                                  std::string *error);

} // namespace lowbit::kv

#endif // LOWBIT_KV_KVKIVIKERNELSPEC_H
