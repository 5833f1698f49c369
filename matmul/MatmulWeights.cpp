//===- MatmulWeights.cpp - A quantized set as the matmul's buffers --------===//

#include "matmul/MatmulWeights.h"

#include <cstring>

namespace lowbit::matmul {

WeightBuffers weightBuffers(const QuantizedTensor &weights) {
  const ScaleSpec &scale = weights.scheme.scale;
  WeightBuffers buffers;
  buffers.codes = weights.codes;
  size_t bytesPerScale = size_t(scaleStorageBits(scale.type) / 8);
  buffers.scales.resize(weights.scaleCodes.size() * bytesPerScale);
  for (size_t index = 0; index < weights.scaleCodes.size(); ++index)
    for (size_t byte = 0; byte < bytesPerScale; ++byte)
      buffers.scales[index * bytesPerScale + byte] =
          uint8_t(weights.scaleCodes[index] >> (8 * byte));
  if (scale.zeroPoint)
    buffers.zeros = weights.zeros;
  if (scale.globalScale != GlobalScale::None) {
    buffers.global.resize(sizeof(float));
    std::memcpy(buffers.global.data(), &weights.globalScale, sizeof(float));
  }
  return buffers;
}

} // namespace lowbit::matmul
