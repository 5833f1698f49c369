//===- KernelSpec.h - What one kernel computes, as data and text -*- C++
//-*-===//
//
// The kernel spec is the input of the compiler and part of the cache key:
// the op, the scheme, the value dtype, where the scales come from, and the
// shape (static sizes or dynamic). It has no MLIR dependency so that the
// CLI and the MLIR-free runtime can parse and print it.
//
// Text form (one line, tokens separated by spaces):
//   quantize   SCHEME [from=f32|f16|bf16] [scale=static|dynamic]
//              [global=computed|given] [rows=N cols=N | dynamic]
//   dequantize SCHEME [to=f32|f16|bf16] [scale=static|dynamic]
//              [rows=N cols=N | dynamic]
// A quantize spec may start with prologues, fused in front of it
// (docs/fusion.md), each one token followed by '|':
//   rmsnorm(eps=1e-6) | quantize nvfp4 from=bf16
//   add_rmsnorm(eps=1e-5) | quantize fp8_e4m3
//   silu_mul | quantize mxfp4          smooth | quantize int8
//   hadamard(128) | quantize mxfp4     map(x * 0.5 + 1) | quantize e4m3
// SCHEME is a named scheme or the compact `scheme(...)` form
// (format/SchemeText.h, which also gives printSchemeText/parseSchemeText).
//
// The text is a cache key and must have one meaning, so contradictions are
// refused with a message naming the token: a key given twice (even with
// the same value), `dynamic` beside rows=/cols=, global= where the scheme
// is static or has no global scale, a compact scheme's mode= that scale=
// contradicts, a granularity argument it does not take (per_tensor(axis=0))
// or gives twice. Sizes are int64, bounded as format/Scheme.h says
// (kMaxDimension, kMaxScaleExtent), never narrowed.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_SPEC_KERNELSPEC_H
#define LOWBIT_RUNTIME_SPEC_KERNELSPEC_H

#include "format/Prologue.h"
#include "format/Scheme.h"
#include "format/SchemeText.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lowbit {

enum class KernelOp : uint8_t { Quantize, Dequantize };

/// For dynamic schemes with a second-level scale: computed from the
/// tensor's amax in the kernel, or passed in by the caller (vLLM's NVFP4).
enum class GlobalSource : uint8_t { Computed, Given };

struct KernelSpec {
  KernelOp op = KernelOp::Quantize;
  /// The scheme; its scale.mode says static or dynamic. (Scheme has no
  /// default constructor; the first named scheme stands in.)
  Scheme scheme = namedSchemes().front();
  ValueType valueType = ValueType::F32;
  GlobalSource globalSource = GlobalSource::Computed;
  /// Fused in front of the quantize, applied in order (empty: none).
  std::vector<Prologue> prologues;
  /// kDynamic, or the static size (of the quantized tensor; silu_mul reads
  /// twice as many input columns).
  int64_t rows = kDynamic, cols = kDynamic;

  bool hasGlobal() const {
    return scheme.scale.globalScale != GlobalScale::None;
  }
  bool isStatic() const { return scheme.scale.mode == ScaleMode::Static; }
  bool operator==(const KernelSpec &other) const = default;
};

/// Parses the one-line text form. On failure returns nullopt and a message
/// naming the bad token in `error`.
std::optional<KernelSpec> parseKernelSpec(std::string_view text,
                                          std::string *error = nullptr);
/// The canonical text: every key spelled out, in a fixed order, so equal
/// specs print equal (the cache key uses it). parseKernelSpec reads it back.
std::string printKernelSpec(const KernelSpec &spec);

/// Checks the spec as a whole: the scheme is valid for the shape, and
/// `global=given` only appears where a dynamic scheme has a global scale.
bool validateKernelSpec(const KernelSpec &spec, std::string *error);

} // namespace lowbit

#endif // LOWBIT_RUNTIME_SPEC_KERNELSPEC_H
