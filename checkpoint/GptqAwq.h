//===- GptqAwq.h - GPTQ and AWQ int32-packed weights ------------*- C++ -*-===//
//
// AutoGPTQ / GPTQModel and AutoAWQ store a linear layer's integer codes
// eight (4-bit) or four (8-bit) to an int32 word, with fp16 scales and
// packed zero points per group of input channels:
//
//   GPTQ  qweight [K/pf, N]  packed along K, field j of word (i, n) is
//                            code (k = pf*i + j, n), low field first
//         qzeros  [G, N/pf]  packed along N, same field order
//         scales  [G, N]
//         g_idx   [K]        group of input channel k (act-order permutes)
//         v1 ("gptq") stores zero - 1; v2 ("gptq_v2") stores the zero
//   AWQ   qweight [K, N/8]   packed along N, nibble i of word (k, j) is
//                            code (k, n = 8*j + order[i]),
//                            order = 0, 2, 4, 6, 1, 3, 5, 7
//         qzeros  [G, N/8]   the same order
//         scales  [G, N]
//
// with pf = 32 / bits and G = ceil(K / group size); W[n, k] = (q - z) * s
// for the group of k. The importers give lowbit's layout (ImportedWeight.h)
// losslessly; the exporters write it back bit for bit (docs/checkpoints.md
// has the formulas and what each layout cannot hold).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_CHECKPOINT_GPTQAWQ_H
#define LOWBIT_CHECKPOINT_GPTQAWQ_H

#include "checkpoint/ImportedWeight.h"

namespace lowbit::checkpoint {

/// How a GPTQ checkpoint stores its zero points (quantize_config.json's
/// "checkpoint_format"): v1 ("gptq") stores zero - 1, v2 ("gptq_v2") the
/// zero itself.
enum class GptqZeroFormat : uint8_t { V1, V2 };

struct GptqConfig {
  int bits = 4;        ///< 4 or 8
  int groupSize = 128; ///< -1: one group over all of K
  GptqZeroFormat zeroFormat = GptqZeroFormat::V1;
};

/// Reads `<prefix>.qweight`, `.qzeros`, `.scales` and, if present,
/// `.g_idx`. An act-order g_idx becomes the weight's inputOrder.
Expected<ImportedWeight> importGptq(const Checkpoint &checkpoint,
                                    const std::string &prefix,
                                    const GptqConfig &config);
/// The four tensors (g_idx always) of `weight`, named `<prefix>.<part>`.
Expected<std::vector<OwnedTensor>> exportGptq(const ImportedWeight &weight,
                                              const std::string &prefix,
                                              const GptqConfig &config);

/// AWQ's GEMM layout: 4-bit codes, zero points.
Expected<ImportedWeight> importAwq(const Checkpoint &checkpoint,
                                   const std::string &prefix, int groupSize);
Expected<std::vector<OwnedTensor>> exportAwq(const ImportedWeight &weight,
                                             const std::string &prefix);

} // namespace lowbit::checkpoint

#endif // LOWBIT_CHECKPOINT_GPTQAWQ_H
