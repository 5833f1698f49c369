//===- KvKernelSpec.h - What one KV-cache kernel computes -------*- C++ -*-===//
//
// The MLIR-free description of a KV-cache kernel (append with the
// quantization fused into the write, or dequantize of a token range), with
// a one-line text form that the compiler, the CLI and tests share
// (docs/kv-kernels.md):
//
//   kv_append     SCHEME [convention=multiplier|divisor] [eps=F]
//                 [scale=per_tensor|per_head] [from=f16|bf16]
//                 [layout=contiguous|paged] heads=N head_dim=N
//   kv_dequantize SCHEME ... [to=f16|bf16|f32] ...
//
// SCHEME is kv_int8_g<G> (G in [1, 2^30]), kv_fp8_e4m3 or kv_fp8_e5m2.
// convention= and eps= belong to kv_int8 only, scale= to kv_fp8 only;
// from= to kv_append only, to= to kv_dequantize only. Each key at most
// once. Errors name the offending token.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_KV_KVKERNELSPEC_H
#define LOWBIT_KV_KVKERNELSPEC_H

#include "kv/KvCache.h"
#include "kv/KvQuantize.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lowbit::kv {

enum class KvKernelOp : uint8_t { Append, Dequantize };
enum class KvLayout : uint8_t { Contiguous, Paged };
/// The unquantized side: append's input, dequantize's output.
enum class KvValueType : uint8_t { F32, F16, BF16 };

std::string_view kvKernelOpName(KvKernelOp op);
std::string_view kvLayoutName(KvLayout layout);
std::optional<KvLayout> parseKvLayout(std::string_view name);
std::string_view kvValueTypeName(KvValueType type);
std::optional<KvValueType> parseKvValueType(std::string_view name);

/// A KV scheme with its parameters: kv_int8_g<G> with its convention and
/// epsilon, or kv_fp8_* with per-tensor or per-head static scales.
struct KvSchemeParams {
  KvScheme scheme = KvScheme::Int8Groups;
  Int8GroupOptions int8;
  bool perHead = false; ///< kv_fp8: one scale per kv head

  bool isInt8() const { return scheme == KvScheme::Int8Groups; }
  /// e4m3 or e5m2 (kv_fp8 only).
  Format fp8Format() const;
  /// "kv_int8_g64", "kv_fp8_e4m3", ...
  std::string name() const;
  bool operator==(const KvSchemeParams &other) const;
};

/// kv_int8_g<G>, kv_fp8_e4m3 or kv_fp8_e5m2 (defaults for the rest).
std::optional<KvSchemeParams> parseKvSchemeName(std::string_view name,
                                                std::string *error);

struct KvKernelSpec {
  KvKernelOp op = KvKernelOp::Append;
  KvSchemeParams scheme;
  KvValueType valueType = KvValueType::F16;
  KvLayout layout = KvLayout::Contiguous;
  int64_t heads = 1, headDim = 1;

  /// Scale columns per token row: ceil(headDim / G) for int8; the static
  /// scale count (1 or heads) for fp8.
  int64_t scaleWidth() const;
  bool operator==(const KvKernelSpec &other) const = default;
};

/// Parses the text form; nullopt and a message naming the bad token.
std::optional<KvKernelSpec> parseKvKernelSpec(std::string_view text,
                                              std::string *error);
/// The canonical text form (every key), which parses back to `spec`.
std::string formatKvKernelSpec(const KvKernelSpec &spec);

} // namespace lowbit::kv

#endif // LOWBIT_KV_KVKERNELSPEC_H
