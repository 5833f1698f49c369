//===- Nvfp4.h - NVFP4 weights of compressed-tensors and ModelOpt -*- C++
//-*-===//
//
// Both store an NVFP4 weight W [N, K] as e2m1 codes two to a byte (element
// 2i in the low nibble, as lowbit), ue4m3 block scales per 16 elements
// along K, and one f32 second-level scale, but with opposite conventions:
//
//   compressed-tensors ("nvfp4-pack-quantized"): weight_packed U8 [N, K/2],
//     weight_scale F8_E4M3 [N, K/16], weight_global_scale F32 [1] = the
//     encode multiplier 6*448 / amax (dequant: q * s / global), and
//     input_global_scale F32 [1], the activations' encode multiplier;
//   ModelOpt (hf_quant_config.json, "quant_algo": "NVFP4"): weight U8
//     [N, K/2], weight_scale F8_E4M3 [N, K/16], weight_scale_2 F32 [] or [1]
//     = the decode multiplier amax / (6*448) (dequant: q * s * scale_2), and
//     input_scale F32, the activations' decode multiplier.
//
// lowbit's nvfp4 scheme has both (GlobalScale::EncodeReciprocal and
// DecodeMultiplier), so each imports and exports bit for bit; converting
// one into the other (the ModelOpt -> compressed-tensors conversion users
// ask for) replaces each global by its f32 reciprocal and leaves codes and
// block scales as they are (docs/checkpoints.md).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_CHECKPOINT_NVFP4_H
#define LOWBIT_CHECKPOINT_NVFP4_H

#include "checkpoint/ImportedWeight.h"

namespace lowbit::checkpoint {

struct Nvfp4Layer {
  /// The nvfp4 scheme with the file's global-scale convention.
  ImportedWeight weight;
  /// The activations' global scale, in the same convention as the weight's.
  float inputGlobalScale = 0;
};

Expected<Nvfp4Layer> importNvfp4CompressedTensors(const Checkpoint &checkpoint,
                                                  const std::string &prefix);
Expected<Nvfp4Layer> importNvfp4ModelOpt(const Checkpoint &checkpoint,
                                         const std::string &prefix);
/// The layer in the file's convention; a layer of the other one is
/// converted first (convertGlobalConvention).
Expected<std::vector<OwnedTensor>>
exportNvfp4CompressedTensors(Nvfp4Layer layer, const std::string &prefix);
Expected<std::vector<OwnedTensor>>
exportNvfp4ModelOpt(Nvfp4Layer layer, const std::string &prefix);

/// Switches the layer to `target` (DecodeMultiplier or EncodeReciprocal):
/// each global scale becomes its f32 reciprocal, 1 / g. Codes and block
/// scales do not change. Since 1 / (1 / g) need not round back to g, a
/// conversion there and back is exact only for the codes and block scales.
Status convertGlobalConvention(Nvfp4Layer &layer, GlobalScale target);

} // namespace lowbit::checkpoint

#endif // LOWBIT_CHECKPOINT_NVFP4_H
