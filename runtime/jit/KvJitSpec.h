//===- KvJitSpec.h - The KV kernels' specs, one type, without MLIR -*- C++
//-*-===//
//
// lowbit::Jit::getKv takes the one-line spec of any KV-cache kernel
// (kv_append, kv_dequantize, kivi_append, kivi_dequantize, kv_attend,
// kivi_attend; docs/kv-kernels.md, docs/decode-attention.md) or of the
// quantized-weight matmul (matmul; docs/matmul.md), the kernels whose
// buffers are listed by a KvKernelParam signature. This is that
// spec parsed, its canonical text (what the cache key holds) and its
// parameter list (KvKernelSignature.h, the one source of the KV kernel
// ABI). MLIR-free: Jit.cpp and the C API use it; the compiler library
// parses the same text on a miss.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_JIT_KVJITSPEC_H
#define LOWBIT_RUNTIME_JIT_KVJITSPEC_H

#include "lowbit/Expected.h"
#include "runtime/compiler/KvKernelSignature.h"
#include "runtime/compiler/MatmulSignature.h"

#include <string>
#include <string_view>
#include <vector>

namespace lowbit::jit {

struct KvJitSpec {
  enum class Kind { Cache, Kivi, Attention, KiviAttention, Matmul };
  Kind kind = Kind::Cache;
  kv::KvKernelSpec cache;           ///< Cache: kv_append, kv_dequantize
  kv::KiviKernelSpec kivi;          ///< Kivi: kivi_append, kivi_dequantize
  kv::KvAttentionSpec decode;       ///< Attention: kv_attend
  kv::KiviAttentionSpec kiviDecode; ///< KiviAttention: kivi_attend
  matmul::MatmulSpec matmul;        ///< Matmul: matmul

  /// The canonical one-line text (every key spelled out).
  std::string text() const;
  /// The spec's first word: "kv_append", ..., "kivi_attend", "matmul".
  std::string_view opName() const;
  /// The kernel ABI, in order (KvKernelSignature.h).
  std::vector<compiler::KvKernelParam> params() const;
};

/// Whether `text`'s first word names a KV kernel (or matmul).
bool isKvSpecText(std::string_view text);

/// Parses and checks the spec; InvalidArgument naming the bad token.
Expected<KvJitSpec> parseKvJitSpec(std::string_view text);

/// The name of a call-fixed size (compiler::CallDim): "batch",
/// "new_tokens", ...; "" for a static size.
std::string_view kvCallDimName(int64_t dim);

} // namespace lowbit::jit

#endif // LOWBIT_RUNTIME_JIT_KVJITSPEC_H
