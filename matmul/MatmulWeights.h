//===- MatmulWeights.h - A quantized set as the matmul's buffers -*- C++ -*-===//
//
// The weights' parameters of the matmul kernel (runtime/compiler/
// MatmulSignature.h) from a QuantizedTensor: the bytes the scheme's
// dequantize kernel reads, in the same layout (docs/kernel-abi.md).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_MATMUL_MATMULWEIGHTS_H
#define LOWBIT_MATMUL_MATMULWEIGHTS_H

#include "format/Quantize.h"

#include <cstdint>
#include <vector>

namespace lowbit::matmul {

struct WeightBuffers {
  /// Packed codes, codesShape(scheme, N, K) bytes.
  std::vector<uint8_t> codes;
  /// scaleShape(scheme, N, K) scales in their storage (4, 2 or 1 bytes
  /// each, little endian).
  std::vector<uint8_t> scales;
  /// Zero points (empty without a zero point).
  std::vector<uint8_t> zeros;
  /// The stored global scale as one f32 (empty without one).
  std::vector<uint8_t> global;
};

WeightBuffers weightBuffers(const QuantizedTensor &weights);

} // namespace lowbit::matmul

#endif // LOWBIT_MATMUL_MATMULWEIGHTS_H
