//===- KvKernelSignature.h - The KV kernels' parameter lists ----*- C++ -*-===//
//
// The kernel ABI of the KV-cache, KIVI and decode-attention kernels, written
// once: for a spec, the ordered parameters with their names, element types,
// shapes and whether the kernel writes them. The compilers build their
// @kernel function's memref types from it (KernelCompileSupport.h,
// memrefTypeOf), their CPU kernels check buffers against it, and `lowbit
// aot` lists and sizes the bundle's parameters from it. MLIR-free, so the
// CLI's bundle code reads it without the compiler's headers.
//
// A shape holds a static size (>= 0) or, for a size the call fixes, a
// negative CallDim naming it; bindShape replaces those by a call's values.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_COMPILER_KVKERNELSIGNATURE_H
#define LOWBIT_RUNTIME_COMPILER_KVKERNELSIGNATURE_H

#include "kv/KiviAttentionSpec.h"
#include "kv/KvAttentionSpec.h"
#include "kv/KvKernelSpec.h"
#include "kv/KvKiviKernelSpec.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace lowbit::compiler {

/// A size the call fixes (dynamic in the kernel), stored negative in a
/// KvKernelParam's shape.
enum CallDim : int64_t {
  kBatch = -1,       ///< sequences
  kNewTokens = -2,   ///< tokens appended, or read, per sequence
  kCacheTokens = -3, ///< a contiguous cache's tokens per sequence
  kPages = -4,       ///< a paged cache's pages
  kGroupRows = -5,   ///< KIVI per-channel parameter rows: ceil(tokens / G)
  kMaxBlocks = -6,   ///< block-table columns
  kSplits = -7,      ///< split-K partitions: ceil(max tokens / split)
  kQueryRows = -8,   ///< kv_attend's 2-D rows: B * Hq
  kCacheRows = -9,   ///< kv_attend's: B * Hkv * T, or P * Hkv * 16
  kPartialRows = -10, ///< kv_attend's: B * Hkv * S * Hq / Hkv
  kMatmulRows = -11,  ///< matmul's M (X's and Y's rows)
  kMatmulCols = -12,  ///< matmul's N (output channels), when dynamic
  kMatmulDepth = -13, ///< matmul's K, when dynamic
  kMatmulCodeCols = -14,  ///< the weights' code bytes a row (K or ceil(K/2))
  kMatmulScaleRows = -15, ///< the weights' scale rows (scaleShape)
  kMatmulScaleCols = -16  ///< the weights' scale columns (scaleShape)
};

inline bool isCallDim(int64_t size) { return size < 0; }

/// One kernel parameter, a C-order buffer.
struct KvKernelParam {
  std::string name;           ///< "input", "codes", ..., "block_table"
  std::string elementType;    ///< "f32", "f16", "bf16", "i8", "i32"
  std::vector<int64_t> shape; ///< static sizes and CallDims
  bool isResult = false;      ///< written by the kernel (in place or whole)
};

/// A call's value of each CallDim its parameters use.
using CallSizes = std::map<CallDim, int64_t>;

/// `param`'s shape with every CallDim replaced by its size in `sizes` (0
/// where `sizes` has none).
std::vector<int64_t> bindShape(const KvKernelParam &param,
                               const CallSizes &sizes);

/// kv_append: input, codes, scales, positions[, block_table];
/// kv_dequantize: codes, scales, positions, output[, block_table]
/// (docs/kv-kernels.md, KvCompiler.h).
std::vector<KvKernelParam> kvKernelParams(const kv::KvKernelSpec &spec);

/// kivi_append: input, codes, scales, zeros, residual, lengths[,
/// block_table]; kivi_dequantize: codes, scales, zeros, residual,
/// positions, lengths, output[, block_table] (KiviCompiler.h).
std::vector<KvKernelParam> kiviKernelParams(const kv::KiviKernelSpec &spec);

/// kv_attend's 2-D parameters: query, key_codes, key_scales, value_codes,
/// value_scales, seq_lens[, block_table], output, partials
/// (KvAttentionCompiler.h).
std::vector<KvKernelParam> kvAttentionParams(const kv::KvAttentionSpec &spec);

/// kivi_attend: query, then each side's codes, scales, zeros and residual
/// (keys, then values), lengths, output, partials[, block_table]
/// (KiviAttentionCompiler.h).
std::vector<KvKernelParam>
kiviAttentionParams(const kv::KiviAttentionSpec &spec);

} // namespace lowbit::compiler

#endif // LOWBIT_RUNTIME_COMPILER_KVKERNELSIGNATURE_H
