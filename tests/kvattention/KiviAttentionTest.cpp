//===- KiviAttentionTest.cpp - KIVI decode attention on both tails --------===//
//
// lowbit.kivi_decode_attention compiled from kivi_attend spec texts
// (runtime/compiler/KiviAttentionCompiler.h) over caches the KIVI append
// kernel filled (KiviAttentionCase.h): the CPU tail bit for bit equal to
// kv::kiviDecodeAttentionOrder and within 1e-5 relative of float64
// attention on the dequantized cache; the GPU kernels in the emulator
// (sm_90a and sm_80) bit for bit equal to the CPU tail; PTX that ptxas
// assembles for sm_80, sm_89, sm_90a and sm_100a; the spec text and the
// run-time refusals.
//
//===----------------------------------------------------------------------===//

#include "tests/kvattention/KiviAttentionCase.h"

#include "GpuTestSupport.h"
#include "KvEmulatorRun.h"
#include "kv/KiviAttentionSpec.h"
#include "kv/KvAttentionSpec.h"
#include "runtime/compiler/KiviAttentionCompiler.h"
#include "runtime/compiler/KiviCompiler.h"
#include "runtime/compiler/KvFamilyCompile.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <map>

namespace lowbit::testing {

namespace {

/// Lengths 0, 1, 17 and 300 in one batch: empty, ring only (R > 0) or a
/// lone token, a partial split, and several splits with most tokens
/// quantized.
const std::vector<int64_t> kLengths = {0, 1, 17, 300};

/// The default cases: int4 and int2; contiguous and paged; G = 32 and the
/// ragged G = 5 with head_dim 13 or 72; R = 0, 3 and 128; GQA 1 and 4;
/// f16 and bf16 rings; f32, f16 and bf16 queries; keys per channel (and
/// per token once); KIVI's float zero (zero=int twice); split 64.
std::vector<std::string> defaultSpecs() {
  return {
      "kivi_attend kv_kivi_int4 group=32 residual=128 cache=f16 q=f32 "
      "layout=contiguous q_heads=8 kv_heads=2 head_dim=72 split=64",
      "kivi_attend kv_kivi_int4 group=5 residual=3 zero=int cache=bf16 "
      "q=bf16 layout=paged q_heads=2 kv_heads=2 head_dim=13 split=64",
      "kivi_attend kv_kivi_int2 group=32 residual=0 cache=f16 q=f16 "
      "layout=paged q_heads=8 kv_heads=2 head_dim=72 split=64",
      "kivi_attend kv_kivi_int2 group=5 residual=128 cache=bf16 q=f32 "
      "layout=contiguous q_heads=2 kv_heads=2 head_dim=13 split=64",
      "kivi_attend kv_kivi_int4 group=5 residual=0 keys=per_token zero=int "
      "cache=f16 q=f16 layout=contiguous q_heads=8 kv_heads=2 head_dim=13 "
      "split=64",
      "kivi_attend kv_kivi_int2 group=32 residual=3 cache=bf16 q=bf16 "
      "layout=paged q_heads=8 kv_heads=2 head_dim=72 split=64",
  };
}

bool sameBits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/// How many elements differ in their bits, and the first.
std::string differences(const std::vector<float> &a,
                        const std::vector<float> &b) {
  if (a.size() != b.size())
    return "sizes " + std::to_string(a.size()) + " vs " +
           std::to_string(b.size());
  size_t count = 0, first = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0 && count++ == 0)
      first = i;
  if (count == 0)
    return "none";
  return std::to_string(count) + " of " + std::to_string(a.size()) +
         " elements differ; first " + std::to_string(first) + ": " +
         std::to_string(a[first]) + " vs " + std::to_string(b[first]);
}

/// The CPU tail's output for `data`.
std::vector<float> runCpu(KiviAttentionCase &data) {
  // Destroyed after main: the CPU tail's JIT has no platform to tear down.
  static std::map<std::string,
                  std::unique_ptr<compiler::KiviAttentionCpuKernel>>
      kernels;
  auto &kernel = kernels[kv::printKiviAttentionSpec(data.spec)];
  if (!kernel) {
    auto compiled = compiler::compileKiviAttentionForCpu(data.spec);
    if (!compiled)
      FAIL(llvm::toString(compiled.takeError()));
    kernel = std::move(*compiled);
  }
  std::vector<float> output(data.outputSize(), -1.0f),
      partials(data.partialsSize(), -1.0f);
  if (llvm::Error error =
          kernel->run(data.buffers(output.data(), partials.data())))
    FAIL(llvm::toString(std::move(error)));
  return output;
}

/// The GPU kernels of `data`'s spec for `targetName`, run in the emulator.
std::vector<float> runEmulated(KiviAttentionCase &data,
                               const std::string &targetName) {
  std::string error;
  std::optional<Target> target = parseTarget(targetName, &error);
  REQUIRE(target);
  auto build = [&](mlir::MLIRContext &context) {
    return compiler::buildKiviAttentionLoops(context, data.spec);
  };
  auto kernel = kvtest::KvEmulatedKernel::compileLoops(build, data.paramBytes(),
                                                       *target, error);
  INFO(error);
  REQUIRE(kernel);
  // Stage 1 and stage 2: two launches.
  CHECK(kernel->plan().steps.size() == 2);
  std::vector<float> output(data.outputSize(), -1.0f),
      partials(data.partialsSize(), -1.0f);
  emulator::Device device;
  std::string failure =
      kernel->run(device, data.buffers(output.data(), partials.data()));
  INFO(failure);
  REQUIRE(failure.empty());
  return output;
}

} // namespace

TEST_CASE("kivi_attend spec text: defaults, round trip, errors") {
  std::string error;
  auto spec = kv::parseKiviAttentionSpec(
      "kivi_attend kv_kivi_int2 q_heads=8 kv_heads=2 head_dim=64", &error);
  INFO(error);
  REQUIRE(spec);
  CHECK(spec->keys == kv::KiviSide{2, 32, 128, true});
  CHECK(spec->keys.zero == kv::KiviZero::Float);
  CHECK(spec->cache == kv::KvValueType::F16);
  CHECK(spec->splitTokens == kv::defaultSplitTokens(2));
  CHECK(spec->softmaxScale == 0.125f);
  // The smallest positive normal f32 is a softmax scale.
  auto smallest = kv::parseKiviAttentionSpec(
      "kivi_attend kv_kivi_int2 q_heads=8 kv_heads=2 head_dim=64 "
      "softmax_scale=1.17549435e-38",
      &error);
  INFO(error);
  REQUIRE(smallest);
  CHECK(smallest->softmaxScale == 0x1p-126f);
  for (const std::string &text : defaultSpecs()) {
    auto parsed = kv::parseKiviAttentionSpec(text, &error);
    REQUIRE(parsed);
    std::string printed = kv::printKiviAttentionSpec(*parsed);
    auto again = kv::parseKiviAttentionSpec(printed, &error);
    REQUIRE(again);
    CHECK(*again == *parsed);
    CHECK(kv::printKiviAttentionSpec(*again) == printed);
  }
  const std::pair<std::string, std::string> refusals[] = {
      {"kv_attend kv_kivi_int4 q_heads=1 kv_heads=1 head_dim=8",
       "starts with 'kivi_attend'"},
      {"kivi_attend kv_int8 q_heads=1 kv_heads=1 head_dim=8",
       "'kv_int8' is not a KIVI scheme"},
      {"kivi_attend kv_kivi_int4 q_heads=6 kv_heads=4 head_dim=8",
       "q_heads=6 is not a multiple of kv_heads=4"},
      {"kivi_attend kv_kivi_int4 cache=f32 q_heads=1 kv_heads=1 head_dim=8",
       "'cache=f32' has a bad value for cache"},
      {"kivi_attend kv_kivi_int4 residual=129 q_heads=1 kv_heads=1 "
       "head_dim=8",
       "residual"},
      {"kivi_attend kv_kivi_int4 group=0 q_heads=1 kv_heads=1 head_dim=8",
       "group"},
      {"kivi_attend kv_kivi_int4 split=0 q_heads=1 kv_heads=1 head_dim=8",
       "'split=0' has a bad value for split"},
      {"kivi_attend kv_kivi_int4 keys=per_row q_heads=1 kv_heads=1 "
       "head_dim=8",
       "'keys=per_row' has a bad value for keys"},
      {"kivi_attend kv_kivi_int4 zero=u8 q_heads=1 kv_heads=1 head_dim=8",
       "'zero=u8' has a bad value for zero"},
      {"kivi_attend kv_kivi_int4 q_heads=1 kv_heads=1", "names q_heads="},
      {"kivi_attend kv_kivi_int4 ring=3 q_heads=1 kv_heads=1 head_dim=8",
       "unknown option 'ring'"},
      {"kivi_attend kv_kivi_int4 softmax_scale=0.1x q_heads=1 kv_heads=1 "
       "head_dim=8",
       "bad value for softmax_scale"},
      {"kivi_attend kv_kivi_int4 softmax_scale=inf q_heads=1 kv_heads=1 "
       "head_dim=8",
       "'softmax_scale=inf': softmax_scale must be a positive normal number "
       "(finite, at least 2^-126), got inf"},
      {"kivi_attend kv_kivi_int4 softmax_scale=-0 q_heads=1 kv_heads=1 "
       "head_dim=8",
       "'softmax_scale=-0': softmax_scale must be a positive normal number"},
      {"kivi_attend kv_kivi_int4 softmax_scale=0 q_heads=1 kv_heads=1 "
       "head_dim=8",
       "got 0"},
      {"kivi_attend kv_kivi_int4 softmax_scale=-2 q_heads=1 kv_heads=1 "
       "head_dim=8",
       "got -2"},
      {"kivi_attend kv_kivi_int4 softmax_scale=nan q_heads=1 kv_heads=1 "
       "head_dim=8",
       "got nan"},
      {"kivi_attend kv_kivi_int4 softmax_scale=1e-45 q_heads=1 kv_heads=1 "
       "head_dim=8",
       "got 1.40129846e-45"},
  };
  for (const auto &[text, message] : refusals) {
    INFO(text);
    error.clear();
    CHECK_FALSE(kv::parseKiviAttentionSpec(text, &error));
    CHECK_THAT(error, Catch::Contains(message));
  }
}

TEST_CASE("CPU tail equals kiviDecodeAttentionOrder bit for bit and float64 "
          "within 1e-5") {
  int checked = 0;
  for (const std::string &text : defaultSpecs()) {
    INFO(text);
    KiviAttentionCase data = KiviAttentionCase::make(text, kLengths, 7);
    std::vector<float> output = runCpu(data);
    std::vector<float> expected = data.kernelOrderReference();
    INFO(differences(output, expected));
    CHECK(sameBits(output, expected));
    double error = kv::relativeError(data.float64Reference(), output);
    INFO("relative error " << error);
    CHECK(error < 1e-5);
    ++checked;
  }
  CHECK(checked == 6);
}

TEST_CASE("GPU kernels in the emulator equal the CPU tail bit for bit") {
  // Every default spec on sm_90a, two on sm_80.
  std::vector<std::string> specs = defaultSpecs();
  for (size_t index = 0; index < specs.size(); ++index)
    for (const char *target : {"sm_90a", "sm_80"}) {
      if (std::string(target) == "sm_80" && index % 3 != 0)
        continue;
      INFO(specs[index] << " on " << target);
      KiviAttentionCase data =
          KiviAttentionCase::make(specs[index], kLengths, 7);
      std::vector<float> gpu = runEmulated(data, target);
      std::vector<float> cpu = runCpu(data);
      INFO(differences(gpu, cpu));
      CHECK(sameBits(gpu, cpu));
    }
}

TEST_CASE("PTX assembles for sm_80, sm_89, sm_90a and sm_100a") {
  // Each default spec on two chips, each chip three specs (both bits,
  // layouts and groups among them).
  const char *chips[] = {"sm_80", "sm_89", "sm_90a", "sm_100a"};
  std::vector<std::string> specs = defaultSpecs();
  for (size_t index = 0; index < specs.size(); ++index)
    for (const char *arch : {chips[index % 4], chips[(index + 2) % 4]}) {
      INFO(specs[index] << " for " << arch);
      std::string error;
      auto spec = kv::parseKiviAttentionSpec(specs[index], &error);
      REQUIRE(spec);
      std::optional<Target> target = parseTarget(arch, &error);
      REQUIRE(target);
      auto ptx = compiler::compileKvFamilyToPtx(*spec, *target);
      if (!ptx)
        FAIL(llvm::toString(ptx.takeError()));
      CHECK(test::checkAssembles(ptx->ptx, arch));
    }
}

TEST_CASE("the CPU kernel refuses buffers that disagree") {
  KiviAttentionCase data =
      KiviAttentionCase::make(defaultSpecs()[1], {3, 40}, 5);
  auto kernel = compiler::compileKiviAttentionForCpu(data.spec);
  if (!kernel)
    FAIL(llvm::toString(kernel.takeError()));
  std::vector<float> output(data.outputSize()), partials(data.partialsSize());
  auto refusal = [&](std::vector<compiler::KvBuffer> buffers) {
    llvm::Error error = (*kernel)->run(buffers);
    REQUIRE(bool(error));
    return llvm::toString(std::move(error));
  };
  std::vector<compiler::KvBuffer> buffers =
      data.buffers(output.data(), partials.data());
  buffers[11].shape[2] += 1;
  CHECK_THAT(refusal(buffers), Catch::Contains("partials dimension 2 is"));
  buffers = data.buffers(output.data(), partials.data());
  buffers[9].shape[0] = 1;
  CHECK_THAT(refusal(buffers), Catch::Contains("lengths dimension 0 is 1"));
  data.seqLens[1] = int32_t(data.shape.maxTokens + 1);
  CHECK_THAT(refusal(data.buffers(output.data(), partials.data())),
             Catch::Contains("sequence 1 holds"));
  // Sequence 1's 40 tokens (G = 5, R = 3) have a quantized prefix of 35,
  // three blocks; take its third page away.
  data.seqLens[1] = 40;
  data.blockTable[data.maxBlocks + 2] = -1;
  CHECK_THAT(refusal(data.buffers(output.data(), partials.data())),
             Catch::Contains("block table entry [1, 2] is -1"));
}

} // namespace lowbit::testing

namespace lowbit::testing {

/// The cross product the default cases sample: bits x layout x (G, head
/// dim) x R x GQA x ring type x keys, the query type rotating; each case
/// on the CPU tail (bit for bit against the order, 1e-5 of float64), in
/// the emulator (sm_90a) against the CPU tail, and its PTX assembled for
/// one chip in turn.
TEST_CASE("every KIVI attention variant on both tails", "[.sweep]") {
  const char *chips[] = {"sm_80", "sm_89", "sm_90a", "sm_100a"};
  const char *queries[] = {"f32", "f16", "bf16"};
  int index = 0;
  for (int bits : {4, 2})
    for (const char *layout : {"contiguous", "paged"})
      for (auto [group, dim] : {std::pair{32, 72}, std::pair{5, 13}})
        for (int residual : {0, 3, 128})
          for (int ratio : {1, 4})
            for (const char *cache : {"f16", "bf16"})
              for (const char *keys : {"per_channel", "per_token"}) {
                std::string text =
                    "kivi_attend kv_kivi_int" + std::to_string(bits) +
                    " group=" + std::to_string(group) +
                    " residual=" + std::to_string(residual) + " keys=" + keys +
                    " cache=" + cache + " q=" + queries[index % 3] +
                    " layout=" + layout +
                    " q_heads=" + std::to_string(2 * ratio) +
                    " kv_heads=2 head_dim=" + std::to_string(dim) + " split=64";
                INFO(text);
                KiviAttentionCase data =
                    KiviAttentionCase::make(text, kLengths, 100 + index);
                std::vector<float> cpu = runCpu(data);
                INFO(differences(cpu, data.kernelOrderReference()));
                CHECK(sameBits(cpu, data.kernelOrderReference()));
                CHECK(kv::relativeError(data.float64Reference(), cpu) < 1e-5);
                std::vector<float> gpu = runEmulated(data, "sm_90a");
                CHECK(sameBits(gpu, cpu));
                std::string error;
                std::optional<Target> target =
                    parseTarget(chips[index % 4], &error);
                REQUIRE(target);
                auto ptx = compiler::compileKvFamilyToPtx(data.spec, *target);
                if (!ptx)
                  FAIL(llvm::toString(ptx.takeError()));
                CHECK(test::checkAssembles(ptx->ptx, chips[index % 4]));
                ++index;
              }
  CHECK(index == 192);
}

} // namespace lowbit::testing

namespace lowbit::testing {

/// A block-table hole the CPU kernel's run refuses, run in the emulator
/// (which faults on any access outside the buffers): the kernel reads
/// nothing of the missing page and takes its tokens as zero keys and
/// values, bit for bit. Sequence 3 (300 tokens, G = 32, R = 128: 160
/// quantized) loses block 2 (tokens 32..47): those values read 0, and
/// since a per-channel group's parameters live in the page of its first
/// token, so do the keys of the whole group 32..63.
TEST_CASE("a missing page is not read: its tokens count as zeros") {
  KiviAttentionCase data = KiviAttentionCase::make(
      "kivi_attend kv_kivi_int4 group=32 residual=128 cache=f16 q=f32 "
      "layout=paged q_heads=8 kv_heads=2 head_dim=72 split=64",
      kLengths, 13);
  data.blockTable[3 * data.maxBlocks + 2] = -1;
  const kv::DecodeShape &shape = data.shape;
  for (int64_t head = 0; head < shape.kvHeads; ++head) {
    auto zero = [&](std::vector<float> &cache, int64_t begin, int64_t end) {
      auto row = cache.begin() +
                 ((3 * shape.kvHeads + head) * shape.maxTokens) * shape.headDim;
      std::fill(row + begin * shape.headDim, row + end * shape.headDim, 0.0f);
    };
    zero(data.keysF32, 32, 64);
    zero(data.valuesF32, 32, 48);
  }
  std::vector<float> gpu = runEmulated(data, "sm_90a");
  std::vector<float> expected = data.kernelOrderReference();
  INFO(differences(gpu, expected));
  CHECK(sameBits(gpu, expected));
}

} // namespace lowbit::testing
