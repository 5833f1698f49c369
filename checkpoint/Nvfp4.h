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
//     input_global_scale F32 [1], the activations' encode multiplier, absent
//     in a weight-only (NVFP4A16) layer;
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

#include <optional>

namespace lowbit::checkpoint {

struct Nvfp4Layer {
  /// The nvfp4 scheme with the file's global-scale convention.
  ImportedWeight weight;
  /// The activations' global scale, in the same convention as the weight's;
  /// none in a weight-only layer (compressed-tensors' NVFP4A16, which RTN
  /// of the weights alone writes: it has no activations to calibrate).
  std::optional<float> inputGlobalScale;
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

/// compressed-tensors' "mxfp4-pack-quantized" (MXFP4A16): weight_packed
/// U8 [N, K/2] (element 2i in the low nibble, as lowbit's mxfp4) and
/// weight_scale U8 [N, K/32], each byte an e8m0 exponent code (2^(b - 127)),
/// as vLLM's CompressedTensorsW4A16Mxfp4 reads them. No global scale.
/// `scheme` is the mxfp4 scheme to import as (the file does not say which
/// rule, floor or rceil, picked the exponents; the values are the same).
Expected<ImportedWeight>
importMxfp4CompressedTensors(const Checkpoint &checkpoint,
                             const std::string &prefix, const Scheme &scheme);
Expected<std::vector<OwnedTensor>>
exportMxfp4CompressedTensors(const ImportedWeight &weight,
                             const std::string &prefix);
/// Whether `scheme` is MXFP4 as that layout holds it: e2m1 codes in nibbles,
/// e8m0 scales per 32 along K, row-major (either rule; the layout needs K a
/// multiple of 32, which the shape says, not the scheme).
bool isMxfp4Layout(const Scheme &scheme);

/// Switches the layer to `target` (DecodeMultiplier or EncodeReciprocal):
/// each global scale becomes its f32 reciprocal, 1 / g. Codes and block
/// scales do not change. Since 1 / (1 / g) need not round back to g, a
/// conversion there and back is exact only for the codes and block scales.
Status convertGlobalConvention(Nvfp4Layer &layer, GlobalScale target);

} // namespace lowbit::checkpoint

#endif // LOWBIT_CHECKPOINT_NVFP4_H
