//===- KvKernelTestSupport.h - KV kernel test cases and references -*- C++
//-*-===//
//
// One KV cache test case: a small batch of new tokens with the values that
// matter (all-zero groups, NaN, inf, outlier channels, FP8 overflow), the
// cache buffers the kernels write, and what kv/KvQuantize.h says they must
// hold afterwards, byte for byte.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TESTS_KVKERNELS_KVKERNELTESTSUPPORT_H
#define LOWBIT_TESTS_KVKERNELS_KVKERNELTESTSUPPORT_H

#include "kv/KvKernelSpec.h"
#include "runtime/compiler/KvCompiler.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace lowbit::kvtest {

/// "" for success, else the error's message.
std::string errorText(llvm::Error error);
/// "" when equal, else the first differing byte's offset and values.
std::string firstDifference(const std::vector<uint8_t> &actual,
                            const std::vector<uint8_t> &expected);

/// Every f16/bf16 NaN in `bytes` (elements of `type`) becomes one positive
/// quiet NaN: the sign and payload of a NaN narrowed from f32 differ
/// between targets (the CPU's F16C keeps them, the bf16 expansion and PTX
/// cvt canonicalize), so only NaN-ness is compared there. f32 is left as
/// it is and compared bit for bit.
void canonicalizeNarrowNans(std::vector<uint8_t> &bytes, kv::KvValueType type);

/// Codes and scales as bytes, with their shapes.
struct KvCacheBuffers {
  std::vector<uint8_t> codes, scales;
  std::vector<int64_t> codeShape, scaleShape;
};

struct KvCase {
  kv::KvKernelSpec appendSpec;
  int64_t batch = 2, heads = 3, tokens = 5;
  int64_t capacity = 24;            ///< contiguous
  int64_t pages = 6, maxBlocks = 2; ///< paged
  std::vector<int32_t> positions{3, 14};
  std::vector<int32_t> blockTable{4, -1, 1, 5};
  std::vector<uint16_t> inputBits; ///< [batch, heads, tokens, head_dim]
  std::vector<float> inputValues;  ///< the same, widened exactly
  std::vector<float> fp8Scales;    ///< kv_fp8: 1 or heads static scales

  bool paged() const { return appendSpec.layout == kv::KvLayout::Paged; }
  int64_t headDim() const { return appendSpec.headDim; }
  /// Codes 0x5A and int8 scales -7.0 everywhere (fp8: the static scales).
  KvCacheBuffers emptyCache() const;
  /// The cache after the append, from kv/KvQuantize.h.
  KvCacheBuffers expectedCache() const;
  std::vector<compiler::KvBuffer> appendBuffers(KvCacheBuffers &cache);

  kv::KvKernelSpec dequantizeSpec(kv::KvValueType type) const;
  size_t valueBytes(kv::KvValueType type) const;
  std::vector<compiler::KvBuffer>
  dequantizeBuffers(KvCacheBuffers &cache, std::vector<uint8_t> &output);
  /// kv/KvQuantize.h's dequantized tokens (0 outside the cache), as bytes
  /// of `type` (f16/bf16 rounded to nearest even).
  std::vector<uint8_t> expectedDequantized(kv::KvValueType type) const;

  /// Where token `token` of (sequence, head) lives in a cache row of
  /// `width` elements; -1 when it is outside the cache.
  int64_t rowOffset(int64_t sequence, int64_t head, int64_t token,
                    int64_t width) const;
};

/// `schemeText` is the spec's scheme part ("kv_int8_g64
/// convention=divisor", "kv_fp8_e4m3 scale=per_head").
KvCase makeCase(const std::string &schemeText, bool paged, kv::KvValueType type,
                int64_t headDim);

/// Runs `spec`'s kernel over `buffers` (ABI order) on some target: the CPU
/// tail or the GPU emulator. "" or the error.
using KvRunner = std::function<std::string(
    const kv::KvKernelSpec &spec, const std::vector<compiler::KvBuffer> &)>;

/// Appends `setup`'s tokens to its empty cache and checks every byte of
/// codes and scales against the reference; returns the cache.
KvCacheBuffers appendAndCheck(const KvRunner &run, KvCase &setup);
/// The append, then dequantize of the same range to f32, f16 and bf16,
/// each checked against the reference.
void checkAppendAndDequantize(const KvRunner &run,
                              const std::string &schemeText, bool paged,
                              kv::KvValueType type, int64_t headDim);
/// Appends that start 2 tokens before the end of a contiguous cache, reach
/// a table entry of -1 or run past the table write only the tokens that
/// fit, and nothing else.
void checkAppendSkipsOutsideTheCache(const KvRunner &run);
/// checkAppendAndDequantize contiguous and paged, f16 and bf16 input.
void checkEveryLayoutAndType(const KvRunner &run, const std::string &schemeText,
                             int64_t headDim);

} // namespace lowbit::kvtest

#endif // LOWBIT_TESTS_KVKERNELS_KVKERNELTESTSUPPORT_H
