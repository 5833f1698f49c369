//===- KvJitSpec.cpp - The KV kernels' specs, one type, without MLIR ------===//

#include "runtime/jit/KvJitSpec.h"

namespace lowbit::jit {

std::string KvJitSpec::text() const {
  switch (kind) {
  case Kind::Cache:
    return kv::formatKvKernelSpec(cache);
  case Kind::Kivi:
    return kv::formatKiviKernelSpec(kivi);
  case Kind::Attention:
    return kv::printKvAttentionSpec(decode);
  case Kind::KiviAttention:
    return kv::printKiviAttentionSpec(kiviDecode);
  case Kind::Matmul:
    return matmul::printMatmulSpec(matmul);
  }
  return {};
}

std::string_view KvJitSpec::opName() const {
  bool append = kind == Kind::Cache ? cache.op == kv::KvKernelOp::Append
                                    : kivi.op == kv::KvKernelOp::Append;
  switch (kind) {
  case Kind::Cache:
    return append ? "kv_append" : "kv_dequantize";
  case Kind::Kivi:
    return append ? "kivi_append" : "kivi_dequantize";
  case Kind::Attention:
    return "kv_attend";
  case Kind::KiviAttention:
    return "kivi_attend";
  case Kind::Matmul:
    return "matmul";
  }
  return {};
}

std::vector<compiler::KvKernelParam> KvJitSpec::params() const {
  switch (kind) {
  case Kind::Cache:
    return compiler::kvKernelParams(cache);
  case Kind::Kivi:
    return compiler::kiviKernelParams(kivi);
  case Kind::Attention:
    return compiler::kvAttentionParams(decode);
  case Kind::KiviAttention:
    return compiler::kiviAttentionParams(kiviDecode);
  case Kind::Matmul:
    return compiler::matmulParams(matmul);
  }
  return {};
}

namespace {
/// The kernel's word: the first word of the text, or behind a prologue
/// chain ('rmsnorm | matmul w=... a=...') the first word after the last
/// '|'.
std::string_view firstWord(std::string_view text) {
  if (size_t bar = text.rfind('|'); bar != std::string_view::npos)
    text.remove_prefix(bar + 1);
  size_t start = text.find_first_not_of(" \t");
  if (start == std::string_view::npos)
    return {};
  text.remove_prefix(start);
  return text.substr(0, text.find_first_of(" \t"));
}
} // namespace

bool isKvSpecText(std::string_view text) {
  std::string_view word = firstWord(text);
  return word == "kv_append" || word == "kv_dequantize" ||
         word == "kivi_append" || word == "kivi_dequantize" ||
         word == "kv_attend" || word == "kivi_attend" || word == "matmul";
}

Expected<KvJitSpec> parseKvJitSpec(std::string_view text) {
  std::string_view word = firstWord(text);
  KvJitSpec spec;
  std::string error;
  bool parsed = false;
  if (word == "kv_append" || word == "kv_dequantize") {
    std::optional<kv::KvKernelSpec> cache = kv::parseKvKernelSpec(text, &error);
    if ((parsed = cache.has_value()))
      spec.cache = *cache;
  } else if (word == "kivi_append" || word == "kivi_dequantize") {
    spec.kind = KvJitSpec::Kind::Kivi;
    std::optional<kv::KiviKernelSpec> kivi =
        kv::parseKiviKernelSpec(text, &error);
    if ((parsed = kivi.has_value()))
      spec.kivi = *kivi;
  } else if (word == "kv_attend") {
    spec.kind = KvJitSpec::Kind::Attention;
    std::optional<kv::KvAttentionSpec> decode =
        kv::parseKvAttentionSpec(text, &error);
    if ((parsed = decode.has_value()))
      spec.decode = *decode;
  } else if (word == "kivi_attend") {
    spec.kind = KvJitSpec::Kind::KiviAttention;
    std::optional<kv::KiviAttentionSpec> decode =
        kv::parseKiviAttentionSpec(text, &error);
    if ((parsed = decode.has_value()))
      spec.kiviDecode = *decode;
  } else if (word == "matmul") {
    spec.kind = KvJitSpec::Kind::Matmul;
    std::optional<matmul::MatmulSpec> parsedMatmul =
        matmul::parseMatmulSpec(text, &error);
    if ((parsed = parsedMatmul.has_value()))
      spec.matmul = *parsedMatmul;
  } else {
    error = "'" + std::string(word) +
            "' is not a KV kernel (kv_append, kv_dequantize, kivi_append, "
            "kivi_dequantize, kv_attend, kivi_attend) or matmul";
  }
  if (!parsed)
    return makeError(ErrorCode::InvalidArgument,
                     (spec.kind == KvJitSpec::Kind::Matmul ? "matmul spec: "
                                                            : "KV kernel spec: ") +
                         error);
  return spec;
}

std::string_view kvCallDimName(int64_t dim) {
  using namespace compiler;
  switch (dim) {
  case kBatch:
    return "batch";
  case kNewTokens:
    return "new_tokens";
  case kCacheTokens:
    return "cache_tokens";
  case kPages:
    return "pages";
  case kGroupRows:
    return "group_rows";
  case kMaxBlocks:
    return "max_blocks";
  case kSplits:
    return "splits";
  case kQueryRows:
    return "query_rows";
  case kCacheRows:
    return "cache_rows";
  case kPartialRows:
    return "partial_rows";
  case kMatmulRows:
    return "m";
  case kMatmulCols:
    return "n";
  case kMatmulDepth:
    return "k";
  case kMatmulCodeCols:
    return "code_cols";
  case kMatmulScaleRows:
    return "scale_rows";
  case kMatmulScaleCols:
    return "scale_cols";
  default:
    return "";
  }
}

} // namespace lowbit::jit
