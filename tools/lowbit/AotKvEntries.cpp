//===- AotKvEntries.cpp - lowbit aot: KV-cache and attention entries ------===//
//
// The entries' kernels (the compilers' PTX, the launch plan read off the
// lowered module), their bench sizes with the index buffers as files, and
// their data (AotKvData.cpp, AotAttentionData.cpp).
//
//===----------------------------------------------------------------------===//

#include "tools/lowbit/AotKvEntries.h"

#include "runtime/compiler/KiviAttentionCompiler.h"
#include "runtime/compiler/KiviCompiler.h"
#include "runtime/compiler/KvAttentionCompiler.h"
#include "runtime/compiler/KvCompiler.h"
#include "runtime/jit/KvLinkedCompiler.h"
#include "runtime/jit/LaunchPlan.h"
#include "target/KernelAbi.h"
#include "tools/lowbit/AotKvData.h"

#include <fmt/format.h>

namespace lowbit::cli {

using namespace aotdata;

namespace {

/// The bench size's index buffers (the rest the runner fills itself).
bool stageBenchInputs(aot::BundleEntry &entry, const std::vector<Bytes> &index,
                      const AotOptions &options, runtime::StagedFiles &staged,
                      std::string &error) {
  aot::SizeInstance &bench = *entry.bench;
  bench.inputs.assign(entry.params.size(), "");
  for (size_t i = 0; i < entry.params.size(); ++i) {
    if (index[i].empty())
      continue;
    bench.inputs[i] =
        fmt::format("{}.{}.{}.bench.npy", entry.name, i, entry.params[i].role);
    std::vector<int64_t> shape =
        bench.dims.empty()
            ? std::vector<int64_t>{bench.shapes[i][0], bench.shapes[i][1]}
            : bench.dims[i];
    if (!stageNpy(options.outDirectory, bench.inputs[i],
                  npyTypeFor(entry.params[i].element), shape, index[i], staged,
                  error))
      return false;
  }
  return true;
}

} // namespace

bool isKvAotSpecText(std::string_view text) { return jit::isKvSpecText(text); }

std::optional<KvAotSpec> parseKvAotSpec(std::string_view text,
                                        std::string &error) {
  Expected<KvAotSpec> spec = jit::parseKvJitSpec(text);
  if (!spec) {
    error = spec.error().message;
    return std::nullopt;
  }
  // The manifest has no matmul entry kind (ABI, bench sizes, data) yet.
  if (spec->kind == KvAotSpec::Kind::Matmul) {
    error = "a matmul has no AOT bundle entry yet; lowbit::Jit::getKv, the "
            "C API and Python compile and launch it (docs/matmul.md)";
    return std::nullopt;
  }
  return *spec;
}

std::optional<aot::BundleEntry>
buildKvAotEntry(const KvAotSpec &spec, const AotOptions &options,
                std::set<std::string> &usedStems, runtime::StagedFiles &staged,
                std::string &error) {
  aot::BundleEntry entry;
  entry.spec = spec.text();
  const bool attention = spec.kind == KvAotSpec::Kind::Attention;
  const bool kivi = spec.kind == KvAotSpec::Kind::Kivi;
  const bool kiviAttention = spec.kind == KvAotSpec::Kind::KiviAttention;
  if (kiviAttention && options.dataSize) {
    error = "kivi_attend entries have no --with-data yet (kernels and bench "
            "sizes only)";
    return std::nullopt;
  }
  llvm::Expected<compiler::GpuCompilation> ptx =
      jit::compileKvSpecForGpu(spec, options.target);
  if (!ptx) {
    error = llvm::toString(ptx.takeError());
    return std::nullopt;
  }
  const jit::LaunchPlan &plan = ptx->plan;
  std::string stem;
  Dims benchDims;
  KvGeometry benchGeometry;
  if (attention) {
    const kv::KvAttentionSpec &decode = spec.decode;
    entry.kind = "attention";
    entry.op = "kv_attend";
    entry.scheme = decode.isFp8()
                       ? std::string(kv::kvSchemeName(decode.scheme))
                       : fmt::format("kv_int8_g{}", decode.groupSize);
    entry.valueType = std::string(kv::queryDtypeName(decode.query));
    entry.params = paramsOf(compiler::kvAttentionParams(decode));
    stem = fmt::format("kv_attend-{}{}-{}-{}", entry.scheme,
                       decode.isFp8() && decode.perHead ? "-per_head" : "",
                       entry.valueType, decode.paged ? "paged" : "contiguous");
  } else if (kiviAttention) {
    // A "kv" entry (ranked dims): the bench is the key side's cache as a
    // kivi_dequantize of the same layout reads it, every sequence full.
    const kv::KiviAttentionSpec &decode = spec.kiviDecode;
    entry.kind = "kv";
    entry.op = "kivi_attend";
    entry.scheme = kv::kiviSchemeName(decode.keys.bits);
    entry.valueType = std::string(kv::kvValueTypeName(decode.query));
    std::vector<compiler::KvKernelParam> params =
        compiler::kiviAttentionParams(decode);
    entry.params = paramsOf(params);
    stem = fmt::format("kivi_attend-{}-g{}-r{}-{}-{}-{}", entry.scheme,
                       decode.keys.groupSize, decode.keys.residual,
                       decode.keys.perChannel ? "per_channel" : "per_token",
                       entry.valueType, kv::kvLayoutName(decode.layout));
    kv::KiviKernelSpec keySide;
    keySide.op = kv::KvKernelOp::Dequantize;
    keySide.side = decode.keys;
    keySide.residualType = decode.cache;
    keySide.layout = decode.layout;
    keySide.heads = decode.kvHeads;
    keySide.headDim = decode.headDim;
    benchGeometry = kiviGeometry(keySide, options.kvBench, nullptr);
    int64_t maxTokens = decode.paged()
                            ? benchGeometry.maxBlocks * kv::kPageTokens
                            : benchGeometry.capacity;
    benchGeometry.splits =
        (maxTokens + decode.splitTokens - 1) / decode.splitTokens;
    benchDims = dimsOf(params, benchGeometry);
  } else if (kivi) {
    const kv::KiviKernelSpec &kiviSpec = spec.kivi;
    entry.kind = "kv";
    entry.op = kiviSpec.op == kv::KvKernelOp::Append ? "kivi_append"
                                                     : "kivi_dequantize";
    entry.scheme = kv::kiviSchemeName(kiviSpec.side.bits);
    entry.valueType = std::string(kv::kvValueTypeName(
        kiviSpec.op == kv::KvKernelOp::Append ? kiviSpec.residualType
                                              : kiviSpec.outputType));
    entry.params = paramsOf(compiler::kiviKernelParams(kiviSpec));
    stem = fmt::format("{}-{}-g{}-r{}-{}-{}-{}", entry.op, entry.scheme,
                       kiviSpec.side.groupSize, kiviSpec.side.residual,
                       kiviSpec.side.perChannel ? "per_channel" : "per_token",
                       entry.valueType, kv::kvLayoutName(kiviSpec.layout));
    benchGeometry = kiviGeometry(kiviSpec, options.kvBench, nullptr);
    benchDims = dimsOf(compiler::kiviKernelParams(kiviSpec), benchGeometry);
  } else {
    const kv::KvKernelSpec &cache = spec.cache;
    entry.kind = "kv";
    entry.op = std::string(kv::kvKernelOpName(cache.op));
    entry.scheme = cache.scheme.name();
    entry.valueType = std::string(kv::kvValueTypeName(cache.valueType));
    entry.params = paramsOf(compiler::kvKernelParams(cache));
    stem = fmt::format("{}-{}-{}-{}", entry.op, entry.scheme, entry.valueType,
                       kv::kvLayoutName(cache.layout));
    benchGeometry = kvGeometry(cache, options.kvBench, nullptr);
    benchDims = dimsOf(compiler::kvKernelParams(cache), benchGeometry);
  }
  // A memref operand is its rank-N descriptor: 3 + 2N kernel parameters
  // (the ranks do not depend on the sizes).
  auto slotsOf = [&](int memref) {
    size_t rank = size_t(memref) < benchDims.size()
                      ? benchDims[size_t(memref)].size()
                      : 2;
    return abi::memrefDescriptorSlots(rank);
  };
  std::optional<std::vector<aot::Launch>> launches =
      checkedLaunchesFromPlan(plan, ptx->ptx, slotsOf, error);
  if (!launches)
    return std::nullopt;
  entry.launches = std::move(*launches);
  if (!stageKernelImages(entry, stem, /*keyedStem=*/false, ptx->ptx, options,
                         usedStems, staged, error))
    return std::nullopt;

  // The bench size, with its index buffers (positions from 0, full
  // sequences, pages in order) as files.
  std::vector<Bytes> index(entry.params.size());
  if (attention) {
    std::vector<int64_t> lengths =
        attentionLengths(options.kvBench, /*ragged=*/false);
    compiler::KvAttentionSizes sizes =
        attentionSizes(spec.decode, options.kvBench, /*ragged=*/false);
    entry.bench = sizeOf(options.kvBench.batch, options.kvBench.tokens,
                         compiler::kvAttentionShapes(spec.decode, sizes));
    for (size_t i = 0; i < entry.params.size(); ++i) {
      if (entry.params[i].role == "seq_lens")
        index[i] =
            bytesOf(std::vector<int32_t>(lengths.begin(), lengths.end()));
      if (entry.params[i].role == "block_table")
        index[i] = bytesOf(
            attentionTable(sizes, lengths, pageOrder(sizes.pages, nullptr)));
    }
  } else {
    const KvGeometry &g = benchGeometry;
    entry.bench = sizeOf(g.batch, g.tokens, flatten(benchDims));
    entry.bench->dims = benchDims;
    for (size_t i = 0; i < entry.params.size(); ++i)
      index[i] = indexBytes(entry.params[i].role, g);
  }
  if (!stageBenchInputs(entry, index, options, staged, error))
    return std::nullopt;

  if (!options.dataSize)
    return entry;
  std::optional<aot::BundleData> data =
      attention ? attentionData(spec.decode, entry, options, staged, error)
                : cacheData(spec, entry, options, staged, error);
  if (!data)
    return std::nullopt;
  entry.data = std::move(*data);
  return entry;
}

} // namespace lowbit::cli
