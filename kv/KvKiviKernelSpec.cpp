//===- KvKiviKernelSpec.cpp - What one KIVI cache kernel computes ---------===//

#include "kv/KvKiviKernelSpec.h"

#include <charconv>
#include <set>
#include <vector>

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
  result.zero = zero;
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
          " zero=" + std::string(kiviZeroName(spec.side.zero)) +
          " from=" + std::string(kvValueTypeName(spec.residualType));
  if (!append)
    text += " to=" + std::string(kvValueTypeName(spec.outputType));
  text += " layout=" + std::string(kvLayoutName(spec.layout)) +
          " heads=" + std::to_string(spec.heads) +
          " head_dim=" + std::to_string(spec.headDim);
  return text;
}

std::optional<KiviKernelSpec> parseKiviKernelSpec(std::string_view text,
                                                  std::string *error) {
  std::vector<std::string_view> tokens;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find(' ', start);
    if (end == std::string_view::npos)
      end = text.size();
    if (end > start)
      tokens.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  KiviKernelSpec spec;
  if (tokens.size() < 2 ||
      (tokens[0] != "kivi_append" && tokens[0] != "kivi_dequantize")) {
    setError(error, "a KIVI kernel spec is 'kivi_append|kivi_dequantize "
                    "kv_kivi_int4|kv_kivi_int2 key=value...'");
    return std::nullopt;
  }
  spec.op =
      tokens[0] == "kivi_append" ? KvKernelOp::Append : KvKernelOp::Dequantize;
  std::optional<int> bits = parseKiviSchemeBits(tokens[1]);
  if (!bits) {
    setError(error, "'" + std::string(tokens[1]) +
                        "': the scheme is kv_kivi_int4 or kv_kivi_int2");
    return std::nullopt;
  }
  spec.side.bits = *bits;
  std::set<std::string_view> seen;
  bool haveHeads = false, haveHeadDim = false;
  for (size_t index = 2; index < tokens.size(); ++index) {
    std::string_view token = tokens[index];
    std::string quoted = "'" + std::string(token) + "'";
    auto refuse = [&](const std::string &why) {
      setError(error, quoted + ": " + why);
      return std::nullopt;
    };
    if (token == "per_channel" || token == "per_token") {
      if (!seen.insert("granularity").second)
        return refuse("per_channel or per_token is given twice");
      spec.side.perChannel = token == "per_channel";
      continue;
    }
    size_t equals = token.find('=');
    if (equals == std::string_view::npos)
      return refuse("expected key=value, per_channel or per_token");
    std::string_view key = token.substr(0, equals);
    std::string_view value = token.substr(equals + 1);
    if (!seen.insert(key).second)
      return refuse("the key '" + std::string(key) + "' is given twice");
    int64_t number = 0;
    bool isNumber = false;
    if (!value.empty()) {
      auto [end, status] =
          std::from_chars(value.data(), value.data() + value.size(), number);
      isNumber = status == std::errc() && end == value.data() + value.size();
    }
    if (key == "group" || key == "residual" || key == "heads" ||
        key == "head_dim") {
      if (!isNumber)
        return refuse("expected an integer");
      (key == "group"      ? spec.side.groupSize
       : key == "residual" ? spec.side.residual
       : key == "heads"    ? spec.heads
                           : spec.headDim) = number;
      haveHeads |= key == "heads";
      haveHeadDim |= key == "head_dim";
    } else if (key == "from" || key == "to") {
      std::optional<KvValueType> type = parseKvValueType(value);
      if (!type)
        return refuse("the type is f16, bf16 or f32");
      if (key == "to" && spec.op == KvKernelOp::Append)
        return refuse("to= belongs to kivi_dequantize only");
      (key == "from" ? spec.residualType : spec.outputType) = *type;
    } else if (key == "zero") {
      std::optional<KiviZero> zero = parseKiviZero(value);
      if (!zero)
        return refuse("the zero is float (KIVI's min) or int (the range "
                      "widened to include 0, an integer zero point)");
      spec.side.zero = *zero;
    } else if (key == "layout") {
      std::optional<KvLayout> layout = parseKvLayout(value);
      if (!layout)
        return refuse("the layout is contiguous or paged");
      spec.layout = *layout;
    } else {
      return refuse("unknown key '" + std::string(key) + "'");
    }
  }
  if (!haveHeads || !haveHeadDim) {
    setError(error, "heads= and head_dim= are required");
    return std::nullopt;
  }
  if (!validateKiviKernelSpec(spec, error))
    return std::nullopt;
  return spec;
}

} // namespace lowbit::kv
