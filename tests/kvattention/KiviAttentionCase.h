//===- KiviAttentionCase.h - One KIVI decode-attention test case -*- C++
//-*-===//
//
// A KIVI cache filled by the CPU tail's kivi_append (one append per
// sequence, through batch-1 views of the buffers), laid out as
// runtime/compiler/KiviAttentionCompiler.h's ABI, with every byte no
// append writes poisoned (NaN scales and ring slots, codes 0x5A, unused
// pages and table entries of -1), and the references the kernels are
// compared against: KiviStream (kv/KvKivi.h) fed the same tokens gives the
// dequantized K and V, kv::kiviDecodeAttentionOrder the kernels' bits and
// kv::decodeAttentionF64 the float64 yardstick.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TESTS_KVATTENTION_KIVIATTENTIONCASE_H
#define LOWBIT_TESTS_KVATTENTION_KIVIATTENTIONCASE_H

#include "kv/KiviAttentionSpec.h"
#include "kv/KvAttention.h"
#include "runtime/compiler/KvCompiler.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lowbit::testing {

struct KiviAttentionCase {
  kv::KiviAttentionSpec spec;
  /// The references' contiguous shape (maxTokens: the capacity, or 16 x
  /// max_blocks when paged).
  kv::DecodeShape shape;
  int64_t pages = 0, maxBlocks = 0;
  std::vector<int64_t> lengths;
  std::vector<uint8_t> query; ///< the kernel's bytes (f32, f16 or bf16)
  std::vector<float> queryF32;
  struct Side {
    std::vector<int8_t> codes;
    std::vector<float> scales, zeros;
    std::vector<uint16_t> residual;
    std::vector<int64_t> codeShape, paramShape, residualShape;
  };
  Side keys, values;
  std::vector<int32_t> seqLens, blockTable;
  /// KiviStream's dequantized cache, [batch, kvHeads, maxTokens, dim].
  std::vector<float> keysF32, valuesF32;

  /// The case for a kivi_attend spec text and the sequences' lengths (a
  /// test failure if the text does not parse or an append fails).
  static KiviAttentionCase make(const std::string &specText,
                                std::vector<int64_t> lengths, uint64_t seed);

  size_t outputSize() const;
  size_t partialsSize() const;
  /// The kernel's buffers in ABI order, writing `output` and `partials`.
  std::vector<compiler::KvBuffer> buffers(float *output, float *partials);
  /// Element bytes and whether the kernel writes each ABI parameter.
  std::vector<std::pair<size_t, bool>> paramBytes() const;
  std::vector<float> kernelOrderReference() const;
  std::vector<double> float64Reference() const;
};

} // namespace lowbit::testing

#endif // LOWBIT_TESTS_KVATTENTION_KIVIATTENTIONCASE_H
