//===- KvKiviKernelSpec.cpp - What one KIVI cache kernel computes ---------===//

#include "kv/KvKiviKernelSpec.h"

namespace lowbit::kv {

namespace {

void setError(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
}

int64_t ceilDiv(int64_t value, int64_t divisor) {
  return (value + divisor - 1) / divisor;
}

} // namespace

std::string kiviSchemeName(int bits) {
  return "kv_kivi_int" + std::to_string(bits);
}

std::optional<int> parseKiviSchemeBits(std::string_view name) {
  if (name == "kv_kivi_int4")
    return 4;
  if (name == "kv_kivi_int2")
    return 2;
  return std::nullopt;
}

KiviOptions KiviSide::options() const {
  KiviOptions result;
  result.bits = bits;
  result.groupSize = groupSize;
  result.residual = residual;
  result.keys =
      perChannel ? KeyGranularity::PerChannel : KeyGranularity::PerToken;
  return result;
}

Scheme KiviSide::scheme() const {
  // Per-token keys and values are the same scheme (groups of G channels).
  return perChannel ? keySchemeOf(options()) : valueSchemeOf(options());
}

int64_t KiviSide::codeWidth(int64_t headDim) const {
  return bits == 4 ? ceilDiv(headDim, 2) : headDim;
}

int64_t KiviSide::paramWidth(int64_t headDim) const {
  return perChannel ? headDim : ceilDiv(headDim, groupSize);
}

int64_t KiviSide::pageParamRows() const {
  return ceilDiv(kPageTokens, groupSize);
}

int64_t KiviSide::quantizedPrefix(int64_t tokens) const {
  int64_t beyond = tokens - residual;
  return beyond <= 0 ? 0 : beyond / groupSize * groupSize;
}

bool validateKiviSide(const KiviSide &side, std::string *error) {
  return validateKiviOptions(side.options(), error);
}

bool validateKiviKernelSpec(const KiviKernelSpec &spec, std::string *error) {
  if (!validateKiviSide(spec.side, error))
    return false;
  if (spec.residualType == KvValueType::F32) {
    setError(error, "the KIVI residual holds f16 or bf16 tokens, not f32");
    return false;
  }
  for (auto [name, value] :
       {std::pair{"heads", spec.heads}, std::pair{"head_dim", spec.headDim}})
    if (value < 1 || value > kMaxScaleExtent) {
      setError(error, std::string(name) + " " + std::to_string(value) +
                          " is not in [1, 2^30]");
      return false;
    }
  return true;
}

std::string formatKiviKernelSpec(const KiviKernelSpec &spec) {
  bool append = spec.op == KvKernelOp::Append;
  std::string text = append ? "kivi_append " : "kivi_dequantize ";
  text += kiviSchemeName(spec.side.bits) +
          " group=" + std::to_string(spec.side.groupSize) +
          " residual=" + std::to_string(spec.side.residual) +
          (spec.side.perChannel ? " per_channel" : " per_token") +
          " from=" + std::string(kvValueTypeName(spec.residualType));
  if (!append)
    text += " to=" + std::string(kvValueTypeName(spec.outputType));
  text += " layout=" + std::string(kvLayoutName(spec.layout)) +
          " heads=" + std::to_string(spec.heads) +
          " head_dim=" + std::to_string(spec.headDim);
  return text;
}

} // namespace lowbit::kv
