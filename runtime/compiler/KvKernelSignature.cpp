//===- KvKernelSignature.cpp - The KV kernels' parameter lists ------------===//

#include "runtime/compiler/KvKernelSignature.h"

#include "kv/KvPaged.h"

namespace lowbit::compiler {

std::vector<int64_t> bindShape(const KvKernelParam &param,
                               const CallSizes &sizes) {
  std::vector<int64_t> shape = param.shape;
  for (int64_t &dim : shape)
    if (isCallDim(dim)) {
      auto size = sizes.find(CallDim(dim));
      dim = size == sizes.end() ? 0 : size->second;
    }
  return shape;
}

namespace {

/// A paged cache's leading dimensions, or a contiguous one's.
std::vector<int64_t> cacheRows(bool paged, int64_t heads) {
  return paged ? std::vector<int64_t>{kPages, heads, kv::kPageTokens}
               : std::vector<int64_t>{kBatch, heads, kCacheTokens};
}

std::vector<int64_t> withWidth(std::vector<int64_t> rows, int64_t width) {
  rows.push_back(width);
  return rows;
}

KvKernelParam blockTable() {
  return {"block_table", "i32", {kBatch, kMaxBlocks}, false};
}

} // namespace

std::vector<KvKernelParam> kvKernelParams(const kv::KvKernelSpec &spec) {
  bool paged = spec.layout == kv::KvLayout::Paged;
  bool append = spec.op == kv::KvKernelOp::Append;
  bool int8 = spec.scheme.isInt8();
  std::vector<int64_t> rows = cacheRows(paged, spec.heads);
  KvKernelParam values = {append ? "input" : "output",
                          std::string(kv::kvValueTypeName(spec.valueType)),
                          {kBatch, spec.heads, kNewTokens, spec.headDim},
                          !append};
  KvKernelParam codes = {"codes", "i8", withWidth(rows, spec.headDim), append};
  // kv_int8 writes a scale per group; kv_fp8's static scales are read.
  KvKernelParam scales = {"scales", "f32",
                          int8 ? withWidth(rows, spec.scaleWidth())
                               : std::vector<int64_t>{spec.scaleWidth()},
                          append && int8};
  KvKernelParam positions = {"positions", "i32", {kBatch}, false};
  std::vector<KvKernelParam> params =
      append ? std::vector<KvKernelParam>{values, codes, scales, positions}
             : std::vector<KvKernelParam>{codes, scales, positions, values};
  if (paged)
    params.push_back(blockTable());
  return params;
}

std::vector<KvKernelParam> kiviKernelParams(const kv::KiviKernelSpec &spec) {
  const kv::KiviSide &side = spec.side;
  bool paged = spec.layout == kv::KvLayout::Paged;
  bool append = spec.op == kv::KvKernelOp::Append;
  std::string ring(kv::kvValueTypeName(spec.residualType));
  std::vector<int64_t> rows = cacheRows(paged, spec.heads);
  // Per channel: a row per group (contiguous) or ceil(16 / G) per page.
  std::vector<int64_t> paramRows = rows;
  if (side.perChannel)
    paramRows.back() = paged ? side.pageParamRows() : int64_t(kGroupRows);
  std::vector<int64_t> params =
      withWidth(paramRows, side.paramWidth(spec.headDim));
  std::vector<int64_t> tokens = {kBatch, spec.heads, kNewTokens, spec.headDim};
  std::vector<KvKernelParam> cache = {
      {"codes", "i8", withWidth(rows, side.codeWidth(spec.headDim)), append},
      {"scales", "f32", params, append},
      {"zeros", "f32", params, append},
      {"residual",
       ring,
       {kBatch, spec.heads, side.residualSlots(), spec.headDim},
       append}};
  KvKernelParam lengths = {"lengths", "i32", {kBatch}, false};
  std::vector<KvKernelParam> result;
  if (append) {
    result.push_back({"input", ring, tokens, false});
    result.insert(result.end(), cache.begin(), cache.end());
    result.push_back(lengths);
  } else {
    result = cache;
    result.push_back({"positions", "i32", {kBatch}, false});
    result.push_back(lengths);
    result.push_back({"output",
                      std::string(kv::kvValueTypeName(spec.outputType)), tokens,
                      true});
  }
  if (paged)
    result.push_back(blockTable());
  return result;
}

std::vector<KvKernelParam> kvAttentionParams(const kv::KvAttentionSpec &spec) {
  std::vector<int64_t> scales =
      !spec.isFp8()  ? std::vector<int64_t>{kCacheRows, spec.scaleWidth()}
      : spec.perHead ? std::vector<int64_t>{1, spec.kvHeads}
                     : std::vector<int64_t>{1, 1};
  std::vector<KvKernelParam> params = {
      {"query",
       std::string(kv::queryDtypeName(spec.query)),
       {kQueryRows, spec.headDim},
       false},
      {"key_codes", "i8", {kCacheRows, spec.headDim}, false},
      {"key_scales", "f32", scales, false},
      {"value_codes", "i8", {kCacheRows, spec.headDim}, false},
      {"value_scales", "f32", scales, false},
      {"seq_lens", "i32", {1, kBatch}, false}};
  if (spec.paged)
    params.push_back(blockTable());
  params.push_back({"output", "f32", {kQueryRows, spec.headDim}, true});
  params.push_back({"partials", "f32", {kPartialRows, spec.headDim + 2}, true});
  return params;
}

std::vector<KvKernelParam>
kiviAttentionParams(const kv::KiviAttentionSpec &spec) {
  std::vector<int64_t> heads = {kBatch, spec.qHeads, spec.headDim};
  std::vector<KvKernelParam> params = {
      {"query", std::string(kv::kvValueTypeName(spec.query)), heads, false}};
  // Each side's cache buffers are kivi_dequantize's first four, read.
  for (const auto &[prefix, side] :
       {std::pair{"key_", spec.keys}, std::pair{"value_", spec.valueSide()}}) {
    kv::KiviKernelSpec sideSpec;
    sideSpec.op = kv::KvKernelOp::Dequantize;
    sideSpec.side = side;
    sideSpec.residualType = spec.cache;
    sideSpec.layout = spec.layout;
    sideSpec.heads = spec.kvHeads;
    sideSpec.headDim = spec.headDim;
    std::vector<KvKernelParam> sideParams = kiviKernelParams(sideSpec);
    for (size_t index = 0; index < 4; ++index) {
      KvKernelParam param = sideParams[index];
      param.name = prefix + param.name;
      params.push_back(std::move(param));
    }
  }
  params.push_back({"lengths", "i32", {kBatch}, false});
  params.push_back({"output", "f32", heads, true});
  params.push_back(
      {"partials",
       "f32",
       {kBatch, spec.kvHeads, kSplits, spec.groupHeads(), spec.headDim + 2},
       true});
  if (spec.paged())
    params.push_back(blockTable());
  return params;
}

} // namespace lowbit::compiler
