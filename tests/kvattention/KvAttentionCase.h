//===- KvAttentionCase.h - One decode-attention test case -------*- C++ -*-===//
//
// A quantized cache made with the kv/ reference (random K and V with an
// outlier channel, fixed seed), laid out as the kernel ABI wants
// (runtime/compiler/KvAttentionCompiler.h), with every position a sequence
// does not reach poisoned (NaN codes or scales), plus the references the
// kernels are compared against.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TESTS_KVATTENTION_KVATTENTIONCASE_H
#define LOWBIT_TESTS_KVATTENTION_KVATTENTIONCASE_H

#include "kv/KvAttention.h"
#include "kv/KvAttentionSpec.h"
#include "runtime/compiler/Compiler.h"
#include "runtime/emulator/EmulatedProgram.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lowbit::testing {

struct AttentionCase {
  kv::KvAttentionSpec spec;
  kv::DecodeShape shape; ///< the references' contiguous shape
  int64_t pages = 0, maxBlocks = 0;
  std::vector<uint8_t> query; ///< the kernel's bytes (f32, f16 or bf16)
  std::vector<float> queryF32;
  std::vector<int8_t> keyCodes, valueCodes;  ///< storage layout
  std::vector<float> keyScales, valueScales; ///< storage layout
  std::vector<int32_t> seqLens, blockTable;
  std::vector<int64_t> lengths;
  /// The dequantized cache, contiguous [batch, kvHeads, maxTokens, dim].
  std::vector<float> keys, values;
  /// FP8 only: the decoded codes (unscaled), same layout, and each kv
  /// head's scale (the kernels apply it once per dot and per summed value).
  std::vector<float> decodedKeys, decodedValues, keyHeadScales, valueHeadScales;

  /// Builds the case for a kv_attend spec text (a test failure if it does
  /// not parse).
  /// The query's values are uniform in [0, 2 queryScale) (before the
  /// query's type rounds them).
  static AttentionCase make(const std::string &specText,
                            std::vector<int64_t> lengths, uint64_t seed,
                            float queryScale = 1.0f);

  size_t outputSize() const;
  size_t partialsSize() const;
  std::vector<compiler::HostBuffer> hostBuffers(float *output,
                                                float *partials) const;
  std::vector<emulator::EmulatorBuffer> emulatorBuffers(float *output,
                                                        float *partials) const;
  /// The GPU kernels (both launches) run in the emulator for `chip`; the
  /// output (a test failure if they do not compile or run).
  std::vector<float> runEmulator(const std::string &chip) const;
  /// The CPU tail's kernel (compileKvAttentionForCpu); the output.
  std::vector<float> runCpu() const;
  std::vector<float> kernelOrderReference() const;
  std::vector<double> float64Reference() const;
};

} // namespace lowbit::testing

#endif // LOWBIT_TESTS_KVATTENTION_KVATTENTIONCASE_H
