//===- MatmulSpec.h - A quantized-weight matmul kernel, as text -*- C++ -*-===//
//
// The MLIR-free description of one lowbit.matmul kernel (docs/matmul.md):
//
//   Y[M,N] = X[M,K] . dequant(W)[N,K]^T (+ bias[N])
//
// and its one-line text form, a cache key like the kernel spec's:
//
//   matmul SCHEME [from=f32|f16|bf16] [to=f32|f16|bf16] [bias]
//          [n=N k=K | dynamic]
//
// or, with quantized activations (W8A8, W4A4; docs/matmul.md, "Quantized
// activations"), X quantized with a second scheme inside the same kernel,
// optionally behind the fused prologues quantize takes:
//
//   [PROLOGUE | ...] matmul w=SCHEME a=SCHEME [from=] [to=] [bias]
//          [n=N k=K | dynamic]
//
// SCHEME is a named scheme or the compact `scheme(...)` form
// (format/SchemeText.h), taken as the weights' scheme: W is [N, K] as
// `lowbit quantize` writes it from an [N, K] weight, rows are output
// channels, groups and blocks run along K. M (the batch) is always
// dynamic. Every contradiction is refused with a message naming the token.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_MATMUL_MATMULSPEC_H
#define LOWBIT_MATMUL_MATMULSPEC_H

#include "format/Prologue.h"
#include "format/Scheme.h"
#include "format/SchemeText.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lowbit::matmul {

struct MatmulSpec {
  /// The weights' scheme. Its scale mode is always Dynamic: the matmul reads
  /// the stored scales whatever rule picked them, so one kernel has one
  /// spelling. (Scheme has no default constructor; the first named scheme
  /// stands in.)
  Scheme scheme = namedSchemes().front();
  /// The activations' scheme (dynamic: X's scales come from X), or nullopt
  /// for the weight-only matmul.
  std::optional<Scheme> activation;
  /// Fused in front of X's quantize (only with an activation scheme).
  std::vector<Prologue> prologues;
  ValueType input = ValueType::F32;
  ValueType output = ValueType::F32;
  bool bias = false;
  /// kDynamic, or the static N (output channels) and K (reduction).
  int64_t n = kDynamic, k = kDynamic;

  bool isDynamic() const { return n == kDynamic; }
  bool quantizesActivations() const { return activation.has_value(); }
  bool operator==(const MatmulSpec &other) const = default;
};

/// Why `scheme` cannot be a weight scheme (empty when it can): it must be
/// valid (validateScheme: codes fit their byte or nibble container), and
/// its scales must run along K: one per tensor, one per output channel (per_token or
/// per_channel(axis=0)), groups along K (group(G;axis=1)) or blocks.
std::string weightSchemeRefusal(const Scheme &scheme);

/// Checks `scheme` against the weights' [n, k] (e.g. a group that straddles
/// K where the scheme forbids a tail), in the matmul's words.
bool validateWeightShape(const Scheme &scheme, int64_t n, int64_t k,
                         std::string *error);

/// Why X quantized with `activations` cannot meet W quantized with
/// `weights` in one product (empty when it can; docs/matmul.md, "Quantized
/// activations"): both sides symmetric (no zero point), codes of at most 8
/// bits packed in bytes or nibbles, both integer or both float, X's scales
/// per tensor, per token or in groups along K, row-major scale layouts,
/// and equal scale extents along K where both sides have one.
std::string activationPairRefusal(const Scheme &weights,
                                  const Scheme &activations);

/// validateWeightShape, and for a spec with quantized activations the
/// pair's checks at K: X's groups against K's end, the prologue chain at
/// width K, the integer accumulator's limit on K.
bool validateMatmulShape(const MatmulSpec &spec, int64_t n, int64_t k,
                         std::string *error);

/// Parses the text form; nullopt and a message naming the offending token.
std::optional<MatmulSpec> parseMatmulSpec(std::string_view text,
                                          std::string *error = nullptr);
/// The canonical text: every key written in a fixed order, `bias` when the
/// spec has one; parseMatmulSpec reads it back to the same spec.
std::string printMatmulSpec(const MatmulSpec &spec);

} // namespace lowbit::matmul

#endif // LOWBIT_MATMUL_MATMULSPEC_H
