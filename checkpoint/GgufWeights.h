//===- GgufWeights.h - Q8_0 / Q4_0 blocks as lowbit tensors ----*- C++ -*-===//
//
// GGUF stores a matrix [rows = ne[1], cols = ne[0]] of Q8_0 or Q4_0 as
// rows of 32-element blocks:
//
//   Q8_0  f16 d, then 32 int8 codes q[j]:             x[j] = q[j] * d
//   Q4_0  f16 d, then 16 bytes; byte j holds element j (low nibble) and
//         element j + 16 (high nibble), unsigned:     x[j] = (q[j] - 8) * d
//
// lowbit holds them as schemes of its own (ggufBlockScheme): int8 with the
// absmax_reciprocal rule, and int4 with the signed_max_reciprocal rule and
// nibble_halves packing, one f16 scale per group of 32 along the columns,
// so format/Quantize.h quantizes exactly as llama.cpp's reference
// quantizer and dequantizes as its dequantize_row. The conversion moves
// bits: the Q8_0 bytes and the scale codes are copied, and a Q4_0 nibble
// q becomes lowbit's two's complement code of q - 8, q XOR 8.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_CHECKPOINT_GGUFWEIGHTS_H
#define LOWBIT_CHECKPOINT_GGUFWEIGHTS_H

#include "checkpoint/Gguf.h"
#include "checkpoint/ImportedWeight.h"
#include "format/Quantize.h"

namespace lowbit::checkpoint {

/// lowbit's scheme of ggml type `typeId` (kGgmlQ8_0 or kGgmlQ4_0); an
/// error for any other type.
Expected<Scheme> ggufBlockScheme(uint32_t typeId);

/// A 2-D Q8_0 or Q4_0 tensor of `file` as lowbit's tensor.
Expected<QuantizedTensor> importGgufTensor(const GgufFile &file,
                                           const GgufTensorInfo &tensor);
/// The matrix `name` of `file` (`name` + ".weight" when the file has no
/// tensor `name`) as an imported weight: rows ne[1] (llama.cpp's
/// outputs), cols ne[0], no input reordering. An error naming the file
/// when neither name is there or the tensor is not Q8_0 or Q4_0.
Expected<ImportedWeight> importGgufWeight(const GgufFile &file,
                                          std::string_view name);
/// The same from the tensor's blocks (`tensor.byteSize` bytes, as
/// parseGguf checked).
Expected<QuantizedTensor> importGgufBlocks(const GgufTensorInfo &tensor,
                                           std::span<const std::byte> blocks);
/// A Q8_0 or Q4_0 tensor of ggufBlockScheme as a scheme lowbit's matmul
/// kernels run (they have no llama.cpp rules or nibble_halves unpacking
/// yet; the rules only matter when quantizing), with every value equal:
/// Q8_0 as int8 AbsMax (an all-zero block, d = 0, gets scale 1);
/// Q4_0 as uint4 with zero points, nibble-packed, a block of code c and
/// scale d stored as q = c + 8, z = 8, s = d when d > 0, and as
/// q = 7 - c, z = 7, s = -d when d < 0 ((7 - c - 7) * -d = c * d
/// exactly), q = z = 8 and s = 1 when d is +-0. Only the sign of a zero
/// value can differ (c * d with d < 0 is -0 for c = 0).
Expected<QuantizedTensor> ggufAsKernelScheme(const QuantizedTensor &tensor);
/// The blocks of a tensor of ggufBlockScheme(typeId), as GGUF stores them.
Expected<std::vector<std::byte>> exportGgufBlocks(const QuantizedTensor &tensor,
                                                  uint32_t typeId);

} // namespace lowbit::checkpoint

#endif // LOWBIT_CHECKPOINT_GGUFWEIGHTS_H
