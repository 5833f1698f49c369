//===- CompressedTensors.h - compressed-tensors' pack-quantized -*- C++ -*-===//
//
// compressed-tensors (vLLM's native checkpoint format; config.json's
// quantization_config with "format": "pack-quantized") stores an integer
// weight W [N, K] as
//
//   weight_packed      I32 [N, ceil(K/pf)]  packed along K, field j of word
//                      (n, i) = q[n][pf*i + j] + 2^(bits-1) (signed codes
//                      offset to unsigned)
//   weight_scale       [N, G] in the model's dtype (BF16, F16, F32)
//   weight_zero_point  I32 [ceil(N/pf), G], asymmetric only: packed along N
//                      (dim 0), field j of word (i, t) = zp[pf*i + j][t] +
//                      2^(bits-1)
//   weight_shape       I64 (or I32) [2] = [N, K]
//   weight_g_idx       I32 [K], activation ordering: the group of channel k
//
// with W[n, k] = (q - zp) * s for the group of k (zp = 0 when symmetric).
// Symmetric weights become lowbit's signed int4/int8 (two's complement
// code = stored field XOR 2^(bits-1)); asymmetric ones its uint4/uint8 with
// zero points, where both offset fields are the unsigned code and zero
// as they are (q + 8 - (zp + 8) = q - zp). docs/checkpoints.md.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_CHECKPOINT_COMPRESSEDTENSORS_H
#define LOWBIT_CHECKPOINT_COMPRESSEDTENSORS_H

#include "checkpoint/ImportedWeight.h"

namespace lowbit::checkpoint {

struct PackQuantizedConfig {
  int bits = 4;       ///< num_bits: 4 or 8
  int groupSize = -1; ///< group_size; -1: strategy "channel" (one group)
};

/// Reads `<prefix>.weight_packed`, `.weight_scale`, `.weight_shape` and,
/// when present, `.weight_zero_point` (asymmetric) and `.weight_g_idx`
/// (activation ordering, read as GPTQ's g_idx into the input order).
Expected<ImportedWeight> importPackQuantized(const Checkpoint &checkpoint,
                                             const std::string &prefix,
                                             const PackQuantizedConfig &config);
/// The tensors compressed-tensors writes for `weight` (a zero point only
/// when the scheme has one, weight_g_idx only with an input order).
Expected<std::vector<OwnedTensor>>
exportPackQuantized(const ImportedWeight &weight, const std::string &prefix);

/// compressed-tensors' "float-quantized" FP8 weight: `weight` F8_E4M3
/// [N, K] and `weight_scale` (F32, BF16 or F16), W = q * s, with one scale
/// per tensor ([1] or []), per output channel ([N, 1]) or per block
/// ([ceil(N/br), ceil(K/bc)], 128 x 128 by default). The activations'
/// `input_scale`, if any, is not part of the weight and not read.
struct FloatQuantizedConfig {
  enum class Strategy : uint8_t { Tensor, Channel, Block };
  Strategy strategy = Strategy::Tensor;
  int blockRows = 128, blockCols = 128;
};

/// lowbit's scheme for a float-quantized strategy: e4m3 codes, AbsMax,
/// scales of `scaleType` per tensor, per row, or per block.
Expected<Scheme> floatQuantizedScheme(const FloatQuantizedConfig &config,
                                      ScaleType scaleType);

Expected<ImportedWeight>
importFloatQuantized(const Checkpoint &checkpoint, const std::string &prefix,
                     const FloatQuantizedConfig &config);
/// `weight` and `weight_scale` (per tensor as [1]).
Expected<std::vector<OwnedTensor>>
exportFloatQuantized(const ImportedWeight &weight, const std::string &prefix);

} // namespace lowbit::checkpoint

#endif // LOWBIT_CHECKPOINT_COMPRESSEDTENSORS_H
