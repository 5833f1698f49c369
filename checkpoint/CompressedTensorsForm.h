//===- CompressedTensorsForm.h - A lowbit scheme as compressed-tensors -*- C++
//-*-===//
//
// `lowbit quantize-model` writes compressed-tensors checkpoints (vLLM's
// native format). This says which lowbit schemes that format holds and
// how: integer codes of 4 or 8 bits (signed, or unsigned with zero points)
// with F16/BF16/F32 scales in groups along K or one per output channel
// ("pack-quantized", strategy group or channel), and e4m3 codes with
// F32/BF16/F16 scales per tensor, per output channel or per block
// ("float-quantized"), NVFP4 ("nvfp4-pack-quantized", weights only: the
// global scale in the layout's encode convention) and MXFP4
// ("mxfp4-pack-quantized"). Any other scheme is refused with the reason
// (e5m2, MXFP8, MXFP6 have no compressed-tensors layout). For a weight it
// gives the scheme to quantize with,
// the tensors the exporter writes (before quantizing, so a streamed
// shard's header can be written first) and config.json's
// quantization_config, which detectLayout reads back as the same layout
// (docs/checkpoints.md, "lowbit quantize-model").
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_CHECKPOINT_COMPRESSEDTENSORSFORM_H
#define LOWBIT_CHECKPOINT_COMPRESSEDTENSORSFORM_H

#include "checkpoint/CompressedTensors.h"
#include "checkpoint/Nvfp4.h"
#include "runtime/core/Json.h"

namespace lowbit::checkpoint {

class CompressedTensorsForm {
public:
  /// The form of `scheme`, or an error saying what the format holds.
  static Expected<CompressedTensorsForm> of(const Scheme &scheme);

  /// The scheme a weight [n, k] is quantized with (strategy channel is one
  /// group of k; a short last group is allowed as the format holds it), or
  /// an error naming `name` when the scheme asked for does not take the
  /// shape (a group that does not divide k without tail=true).
  Expected<Scheme> schemeFor(const std::string &name, int64_t n,
                             int64_t k) const;
  /// The tensors exportWeight writes for `prefix`'s weight [n, k], in order.
  std::vector<TensorSpec> plannedTensors(const std::string &prefix, int64_t n,
                                         int64_t k) const;
  /// The tensors of a weight quantized with schemeFor(n, k).
  Expected<std::vector<OwnedTensor>>
  exportWeight(QuantizedTensor tensor, const std::string &prefix) const;
  /// config.json's "quantization_config": one config group targeting
  /// Linear, and `ignore` (module names left unquantized).
  json::JsonValue quantizationConfig(std::span<const std::string> ignore) const;
  /// "pack-quantized int4, group 128" (for the summary).
  std::string describe() const;

private:
  explicit CompressedTensorsForm(Scheme scheme) : given(std::move(scheme)) {}

  enum class Kind : uint8_t { PackQuantized, FloatQuantized, Nvfp4, Mxfp4 };
  Scheme given;
  Kind kind = Kind::PackQuantized;
  PackQuantizedConfig pack;
  bool zeroPoint = false;
  ScaleType scaleType = ScaleType::F32;
  FloatQuantizedConfig fp8;
};

} // namespace lowbit::checkpoint

#endif // LOWBIT_CHECKPOINT_COMPRESSEDTENSORSFORM_H
