//===- JitKvTest.cpp - KV-cache kernels through lowbit::Jit::getKv --------===//
//
// kv_append, kv_dequantize and kv_attend for kv_int8 and kv_fp8, contiguous
// and paged, through the Jit on the CPU: bit for bit the kernels the
// compilers (runtime/compiler) build directly, and decode attention within
// docs/decode-attention.md's 1e-5 of the float64 reference (kv/
// KvAttention.h) on the cache the Jit's kv_dequantize reads back. Then the
// caches (memory and disk), and the errors.
//
//===----------------------------------------------------------------------===//

#include "lowbit/Jit.h"

#include "kv/KvAttention.h"
#include "kv/KvAttentionSpec.h"
#include "kv/KvKernelSpec.h"
#include "runtime/compiler/KvAttentionCompiler.h"
#include "runtime/compiler/KvCompiler.h"
#include "tests/jit/JitKvSupport.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <unistd.h>

using namespace lowbit;
using namespace lowbit::testing;

namespace {

std::unique_ptr<Jit> makeJit(runtime::CacheMode mode,
                             const std::string &directory = "") {
  JitOptions options;
  options.cacheMode = mode;
  options.cacheDirectory = directory;
  auto jit = Jit::create(options);
  REQUIRE(jit.ok());
  return std::move(jit).value();
}

Target cpu() { return Target{}; }

Target sm90a() {
  std::string error;
  std::optional<Target> target = parseTarget("sm_90a", &error);
  REQUIRE(target);
  return *target;
}

compiler::KvBuffer kvBuffer(KvTestBuffer &buffer) {
  return {buffer.bytes.data(), buffer.shape};
}

compiler::HostBuffer hostBuffer(const KvTensor &tensor) {
  return {tensor.data, tensor.shape[0], tensor.shape[1]};
}

/// One side's cache (keys or values) appended by the Jit and, on a copy,
/// by the kernel compileKvForCpu builds; both must hold the same bytes.
struct Side {
  KvTestBuffer codes, scales;
};

Side appendBoth(const KvScenario &scenario, const KvKernel &jitAppend,
                compiler::KvCpuKernel &directAppend, uint64_t seed,
                float fp8Scale) {
  Side jitSide{scenario.emptyCodes(), scenario.emptyScales(fp8Scale)};
  Side directSide = jitSide;
  // Two appends: 5 tokens at {0, 0}, then 5 more at {0, 3} (sequence 0
  // rewritten in place, sequence 1 grown to 8 tokens).
  for (bool second : {false, true}) {
    KvTestBuffer input = scenario.input(seed + second);
    KvTestBuffer positions = scenario.positions();
    if (!second)
      positions.as<int32_t>()[1] = 0;
    KvTestBuffer table = scenario.blockTable();
    std::vector<KvTensor> tensors = {input.tensor(), jitSide.codes.tensor(),
                                     jitSide.scales.tensor(),
                                     positions.tensor()};
    std::vector<compiler::KvBuffer> buffers = {
        kvBuffer(input), kvBuffer(directSide.codes),
        kvBuffer(directSide.scales), kvBuffer(positions)};
    if (scenario.paged) {
      tensors.push_back(table.tensor());
      buffers.push_back(kvBuffer(table));
    }
    Status ran = jitAppend.run(tensors);
    INFO((ran.ok() ? std::string() : ran.error().message));
    REQUIRE(ran.ok());
    llvm::Error direct = directAppend.run(buffers);
    REQUIRE_FALSE(bool(direct));
  }
  CHECK(jitSide.codes.bytes == directSide.codes.bytes);
  CHECK(jitSide.scales.bytes == directSide.scales.bytes);
  // Something was written (the comparison is not of two empty caches).
  CHECK(jitSide.codes.bytes != scenario.emptyCodes().bytes);
  return jitSide;
}

/// The whole cache read back as f32 [B, H, maxTokens, D], by the Jit and
/// by the direct kernel, compared bit for bit.
KvTestBuffer dequantizeBoth(const KvScenario &scenario,
                            const KvKernel &jitDequantize,
                            compiler::KvCpuKernel &directDequantize,
                            Side &side) {
  const int64_t tokens = scenario.maxTokens();
  KvTestBuffer positions =
      KvTestBuffer::zeros(ElementType::I32, {KvScenario::kBatch});
  KvTestBuffer table = scenario.blockTable();
  std::vector<int64_t> outShape = {KvScenario::kBatch, KvScenario::kKvHeads,
                                   tokens, KvScenario::kHeadDim};
  KvTestBuffer jitOut = KvTestBuffer::zeros(ElementType::F32, outShape);
  KvTestBuffer directOut = jitOut;
  std::vector<KvTensor> tensors = {side.codes.tensor(), side.scales.tensor(),
                                   positions.tensor(), jitOut.tensor()};
  std::vector<compiler::KvBuffer> buffers = {
      kvBuffer(side.codes), kvBuffer(side.scales), kvBuffer(positions),
      kvBuffer(directOut)};
  if (scenario.paged) {
    tensors.push_back(table.tensor());
    buffers.push_back(kvBuffer(table));
  }
  Status ran = jitDequantize.run(tensors);
  INFO((ran.ok() ? std::string() : ran.error().message));
  REQUIRE(ran.ok());
  REQUIRE_FALSE(bool(directDequantize.run(buffers)));
  CHECK(jitOut.bytes == directOut.bytes);
  return jitOut;
}

} // namespace

TEST_CASE("getKv: append, dequantize, attend on the CPU = the compilers",
          "[kv]") {
  auto jit = makeJit(runtime::CacheMode::Off);
  for (std::string scheme : {"kv_int8_g32", "kv_fp8_e4m3"}) {
    for (bool paged : {false, true}) {
      KvScenario scenario{scheme, paged};
      DYNAMIC_SECTION(scheme << (paged ? " paged" : " contiguous")) {
        auto append = jit->getKv(scenario.appendSpec(), cpu());
        auto dequantize = jit->getKv(scenario.dequantizeSpec(), cpu());
        auto attend = jit->getKv(scenario.attendSpec(), cpu());
        REQUIRE(append.ok());
        REQUIRE(dequantize.ok());
        REQUIRE(attend.ok());

        std::string error;
        auto appendSpec = kv::parseKvKernelSpec(scenario.appendSpec(), &error);
        auto dequantizeSpec =
            kv::parseKvKernelSpec(scenario.dequantizeSpec(), &error);
        auto attendSpec =
            kv::parseKvAttentionSpec(scenario.attendSpec(), &error);
        REQUIRE((appendSpec && dequantizeSpec && attendSpec));
        auto directAppend = compiler::compileKvForCpu(*appendSpec);
        auto directDequantize = compiler::compileKvForCpu(*dequantizeSpec);
        auto directAttend = compiler::compileKvAttentionForCpu(*attendSpec);
        REQUIRE((directAppend && directDequantize && directAttend));

        Side keys = appendBoth(scenario, *append, **directAppend, 11, 0.0625f);
        Side values =
            appendBoth(scenario, *append, **directAppend, 12, 0.03125f);
        KvTestBuffer keyCache =
            dequantizeBoth(scenario, *dequantize, **directDequantize, keys);
        KvTestBuffer valueCache =
            dequantizeBoth(scenario, *dequantize, **directDequantize, values);

        KvTestBuffer query = scenario.query(13);
        KvTestBuffer seqLens = scenario.seqLens();
        KvTestBuffer table = scenario.blockTable();
        const int64_t splits =
            (scenario.maxTokens() + attendSpec->splitTokens - 1) /
            attendSpec->splitTokens;
        KvTestBuffer output = KvTestBuffer::zeros(
            ElementType::F32,
            {KvScenario::kBatch * KvScenario::kQHeads, KvScenario::kHeadDim});
        KvTestBuffer partials = KvTestBuffer::zeros(
            ElementType::F32,
            {KvScenario::kBatch * KvScenario::kKvHeads * splits *
                 (KvScenario::kQHeads / KvScenario::kKvHeads),
             KvScenario::kHeadDim + 2});
        KvTestBuffer directOutput = output, directPartials = partials;
        std::vector<KvTensor> tensors = {query.tensor(),
                                         keys.codes.tensor2d(),
                                         scenario.attendScales(keys.scales),
                                         values.codes.tensor2d(),
                                         scenario.attendScales(values.scales),
                                         seqLens.tensor()};
        if (paged)
          tensors.push_back(table.tensor());
        tensors.push_back(output.tensor());
        tensors.push_back(partials.tensor());
        std::vector<compiler::HostBuffer> buffers;
        for (const KvTensor &tensor : tensors)
          buffers.push_back(hostBuffer(tensor));
        buffers[buffers.size() - 2].data = directOutput.bytes.data();
        buffers.back().data = directPartials.bytes.data();

        Status ran = attend->run(tensors);
        INFO((ran.ok() ? std::string() : ran.error().message));
        REQUIRE(ran.ok());
        REQUIRE_FALSE(bool((*directAttend)->run(buffers)));
        CHECK(output.bytes == directOutput.bytes);

        // Within 1e-5 of float64 on the cache kv_dequantize read back.
        kv::DecodeShape shape{KvScenario::kBatch, KvScenario::kQHeads,
                              KvScenario::kKvHeads, KvScenario::kHeadDim,
                              scenario.maxTokens()};
        std::vector<int64_t> lengths = {seqLens.as<int32_t>()[0],
                                        seqLens.as<int32_t>()[1]};
        size_t count = size_t(KvScenario::kBatch * KvScenario::kQHeads *
                              KvScenario::kHeadDim);
        std::vector<double> exact = kv::decodeAttentionF64(
            shape, {query.as<float>(), count},
            {keyCache.as<float>(), keyCache.bytes.size() / 4},
            {valueCache.as<float>(), valueCache.bytes.size() / 4}, lengths,
            attendSpec->softmaxScale);
        double relative = kv::relativeError(
            exact, std::span<const float>(output.as<float>(), count));
        INFO("relative error " << relative);
        CHECK(relative <= 1e-5);
        CHECK(relative > 0); // f32 is not float64: the check compares.
      }
    }
  }
}

TEST_CASE("getKv: a repeat is a lookup, a new spelling the same engine",
          "[kv][cache]") {
  auto jit = makeJit(runtime::CacheMode::Off);
  KvScenario scenario{"kv_int8_g32", false};
  auto first = jit->getKv(scenario.appendSpec(), cpu());
  REQUIRE(first.ok());
  uint64_t compiles = jit->stats().compiles;
  CHECK(compiles == 1);
  auto again = jit->getKv(scenario.appendSpec(), cpu());
  REQUIRE(again.ok());
  // The canonical text spells out every default: another map entry, the
  // same key, the same engine.
  auto canonical = jit->getKv(first->spec(), cpu());
  REQUIRE(canonical.ok());
  CHECK(jit->stats().compiles == compiles);
  CHECK(canonical->spec() == first->spec());
  CHECK(first->op() == "kv_append");
  CHECK(first->ptx().empty());
}

TEST_CASE("getKv: the signature names each parameter and its dynamic sizes",
          "[kv]") {
  auto jit = makeJit(runtime::CacheMode::Off);
  auto kernel = jit->getKv(
      "kv_append kv_int8_g32 layout=paged heads=2 head_dim=64", cpu());
  REQUIRE(kernel.ok());
  const std::vector<KvParamInfo> &params = kernel->params();
  REQUIRE(params.size() == 5);
  CHECK(params[0].name == "input");
  CHECK(params[0].element == ElementType::F16);
  CHECK_FALSE(params[0].written);
  REQUIRE(params[1].shape.size() == 4);
  CHECK(params[1].name == "codes");
  CHECK(params[1].element == ElementType::I8);
  CHECK(params[1].written);
  CHECK(kvDimName(params[1].shape[0]) == "pages");
  CHECK(params[1].shape[1] == 2);
  CHECK(params[1].shape[2] == 16);
  CHECK(params[3].name == "positions");
  CHECK(params[3].element == ElementType::I32);
  CHECK(params[4].name == "block_table");
  CHECK(kvDimName(params[4].shape[0]) == "batch");
  CHECK(kvDimName(params[4].shape[1]) == "max_blocks");
  CHECK(kvDimName(64).empty());
}

TEST_CASE("getKv: the GPU payload is on disk for the next Jit",
          "[kv][cache][disk]") {
  std::string directory = (std::filesystem::temp_directory_path() /
                           ("lowbit-jit-kv-" + std::to_string(getpid())))
                              .string();
  std::filesystem::remove_all(directory);
  KvScenario scenario{"kv_fp8_e4m3", true};
  std::string ptx;
  for (const std::string &spec :
       {scenario.appendSpec(), scenario.attendSpec()}) {
    {
      auto jit = makeJit(runtime::CacheMode::ReadWrite, directory);
      auto kernel = jit->getKv(spec, sm90a());
      INFO((kernel.ok() ? std::string() : kernel.error().message));
      REQUIRE(kernel.ok());
      CHECK_FALSE(kernel->loadedFromDisk());
      CHECK(jit->stats().gpuCompiles == 1);
      CHECK(kernel->ptx().find(".entry") != std::string_view::npos);
      // nvJitLink linked the cubin (its registers are known).
      CHECK(kernel->resources().registers > 0);
      ptx = std::string(kernel->ptx());
      // A second get() is a memory lookup.
      REQUIRE(jit->getKv(spec, sm90a()).ok());
      CHECK(jit->stats().gpuCompiles == 1);
    }
    auto jit = makeJit(runtime::CacheMode::MustHit, directory);
    auto kernel = jit->getKv(spec, sm90a());
    INFO((kernel.ok() ? std::string() : kernel.error().message));
    REQUIRE(kernel.ok());
    CHECK(kernel->loadedFromDisk());
    CHECK(jit->stats().gpuCompiles == 0);
    CHECK(jit->stats().cache.diskHits == 1);
    CHECK(kernel->ptx() == ptx);
    CHECK(kernel->resources().registers > 0);
  }
  // Another target is another key: a must-hit miss.
  auto jit = makeJit(runtime::CacheMode::MustHit, directory);
  std::string error;
  auto sm89 = parseTarget("sm_89", &error);
  REQUIRE(sm89);
  auto missed = jit->getKv(scenario.appendSpec(), *sm89);
  REQUIRE_FALSE(missed.ok());
  CHECK(missed.error().code == ErrorCode::CacheMiss);
  std::filesystem::remove_all(directory);
}

TEST_CASE("getKv: a block table naming one page twice is refused before "
          "the kernel runs",
          "[kv][errors]") {
  auto jit = makeJit(runtime::CacheMode::Off);
  KvScenario scenario{"kv_int8_g32", true};
  auto append = jit->getKv(scenario.appendSpec(), cpu());
  REQUIRE(append.ok());
  KvTestBuffer input = scenario.input(1), codes = scenario.emptyCodes(),
               scales = scenario.emptyScales(0),
               positions = scenario.positions(), table = scenario.blockTable();
  // Both sequences on page 0: each append would overwrite the other's.
  table.as<int32_t>()[0] = 0;
  Status status = append->run(
      std::vector<KvTensor>{input.tensor(), codes.tensor(), scales.tensor(),
                            positions.tensor(), table.tensor()});
  REQUIRE_FALSE(status.ok());
  INFO(status.error().message);
  CHECK(status.error().message.find(
            "block table [0, 0] and [1, 0] both name page 0") !=
        std::string::npos);
  CHECK(codes.bytes == scenario.emptyCodes().bytes);
}

TEST_CASE("getKv: bad specs, buffers and targets are errors", "[kv][errors]") {
  auto jit = makeJit(runtime::CacheMode::Off);
  auto unknown =
      jit->getKv("kv_shuffle kv_int8_g32 heads=2 head_dim=64", cpu());
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().code == ErrorCode::InvalidArgument);
  CHECK(unknown.error().message.find("kv_shuffle") != std::string::npos);
  auto bad = jit->getKv("kv_append kv_int8_g32 heads=2", cpu());
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code == ErrorCode::InvalidArgument);
  // softmax_scale is a positive normal number (kv/SoftmaxScale.h), for
  // both attention kinds and any target.
  for (const char *text :
       {"kv_attend kv_int8_g32 q_heads=2 kv_heads=2 head_dim=64 "
        "softmax_scale=-0",
        "kivi_attend kv_kivi_int4 q_heads=2 kv_heads=2 head_dim=64 "
        "softmax_scale=-1"}) {
    INFO(text);
    auto refused = jit->getKv(text, sm90a());
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == ErrorCode::InvalidArgument);
    CHECK(refused.error().message.find(
              "softmax_scale must be a positive normal number") !=
          std::string::npos);
  }

  KvScenario scenario{"kv_int8_g32", false};
  auto append = jit->getKv(scenario.appendSpec(), cpu());
  REQUIRE(append.ok());
  KvTestBuffer input = scenario.input(1), codes = scenario.emptyCodes(),
               scales = scenario.emptyScales(0),
               positions = scenario.positions();
  auto tensors = [&] {
    return std::vector<KvTensor>{input.tensor(), codes.tensor(),
                                 scales.tensor(), positions.tensor()};
  };
  REQUIRE(append->run(tensors()).ok());
  auto refused = [&](std::vector<KvTensor> call, std::string_view words) {
    Status status = append->run(call);
    REQUIRE_FALSE(status.ok());
    CHECK(status.error().code == ErrorCode::InvalidArgument);
    INFO(status.error().message);
    CHECK(status.error().message.find(words) != std::string::npos);
  };
  std::vector<KvTensor> call = tensors();
  call.pop_back();
  refused(call, "takes 4 buffers, got 3");
  call = tensors();
  call[0].element = ElementType::F32;
  refused(call, "buffer 0 (input) is f32; the kernel takes f16");
  call = tensors();
  call[1].rank = 3;
  refused(call, "buffer 1 (codes) has rank 3");
  call = tensors();
  call[1].shape[3] = 32;
  refused(call, "buffer 1 (codes) dimension 3 is 32; the kernel takes 64");
  call = tensors();
  call[3].shape[0] = 3;
  refused(call, "buffer 3 (positions) dimension 0 is 3; batch is 2");
  call = tensors();
  call[0].shape[2] = 0;
  refused(call, "it must be >= 1");
  call = tensors();
  call[2].data = nullptr;
  refused(call, "null pointer");
  call = tensors();
  call[0].shape[2] = int64_t(1) << 41;
  refused(call, "(new_tokens) is 2199023255552; at most 2^40");
  // A written buffer may overlap no other (docs/kernel-abi.md): the codes
  // over the input, the scales one byte into the codes.
  call = tensors();
  call[1].data = call[0].data;
  refused(call, "buffer 1 (codes) overlaps buffer 0 (input) (an input)");
  call = tensors();
  call[2].data = static_cast<char *>(call[1].data) + 1;
  refused(call, "buffer 1 (codes) overlaps buffer 2 (scales) (also written)");

  // Attention's derived sizes: partial rows follow from the others.
  auto attend = jit->getKv(scenario.attendSpec(), cpu());
  REQUIRE(attend.ok());
  KvTestBuffer query = scenario.query(2), lens = scenario.seqLens();
  KvTestBuffer out = KvTestBuffer::zeros(ElementType::F32, {8, 64});
  KvTestBuffer partials = KvTestBuffer::zeros(ElementType::F32, {7, 66});
  Status wrong = attend->run(std::vector<KvTensor>{
      query.tensor(), codes.tensor2d(), scales.tensor2d(), codes.tensor2d(),
      scales.tensor2d(), lens.tensor(), out.tensor(), partials.tensor()});
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.error().message.find("partial_rows is 7") != std::string::npos);

  // run() is the CPU's, launch() the GPU's.
  void *stream = nullptr;
  Status launched = append->launch(stream, tensors());
  REQUIRE_FALSE(launched.ok());
  CHECK(launched.error().message.find("use run()") != std::string::npos);
  auto gpu = jit->getKv(scenario.appendSpec(), sm90a());
  REQUIRE(gpu.ok());
  Status ran = gpu->run(tensors());
  REQUIRE_FALSE(ran.ok());
  CHECK(ran.error().message.find("use launch()") != std::string::npos);
  // An unknown chip is refused before anything compiles.
  Target bogus = sm90a();
  bogus.chip = "sm_1";
  auto refusedTarget = jit->getKv(scenario.appendSpec(), bogus);
  REQUIRE_FALSE(refusedTarget.ok());
  CHECK(refusedTarget.error().code == ErrorCode::InvalidArgument);
}
