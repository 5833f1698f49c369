//===- KvKiviCpuKernelTest.cpp - KIVI kernels on the CPU tail, bit for bit ===//
//
// kv_kivi_int4 and kv_kivi_int2, keys per channel and values per token, G =
// 32 (head_dim 40: a short last value group of 8) and G = 5 (several groups
// per page, groups across pages), R = 0 and R = 128, contiguous and paged,
// f16 and bf16: after each append chunk the cache equals KiviStream's
// (kv/KvKivi.h) byte for byte and dequantizes to its tokens bit for bit
// (KvKiviTestSupport.h).
//
//===----------------------------------------------------------------------===//

#include "KvKernelTestSupport.h"
#include "KvKiviTestSupport.h"

#include <catch2/catch.hpp>

#include <map>
#include <memory>

using namespace lowbit;
using namespace lowbit::kv;
using namespace lowbit::kvtest;

namespace {

/// Compiles each spec once per process.
compiler::KiviCpuKernel &kiviKernelFor(const KiviKernelSpec &spec) {
  static std::map<std::string, std::unique_ptr<compiler::KiviCpuKernel>> cache;
  std::unique_ptr<compiler::KiviCpuKernel> &entry =
      cache[formatKiviKernelSpec(spec)];
  if (!entry) {
    auto compiled = compiler::compileKiviForCpu(spec);
    if (!compiled)
      throw std::runtime_error(errorText(compiled.takeError()));
    entry = std::move(*compiled);
  }
  return *entry;
}

std::string runKiviOnCpu(const KiviKernelSpec &spec,
                         const std::vector<compiler::KvBuffer> &buffers) {
  return errorText(kiviKernelFor(spec).run(buffers));
}

// R = 128, G = 32: after 130, 131, 133 tokens nothing is quantized; 197
// completes two groups at once, 234 one more (sequence 1, 7 tokens ahead,
// flushes at other chunks).
const std::vector<int64_t> kWindowChunks = {130, 1, 2, 64, 37};
// R = 0: 70 completes two groups of 32, 1 completes none.
const std::vector<int64_t> kNoWindowChunks = {70, 1, 30, 3, 33};

} // namespace

TEST_CASE("kv_kivi_int4 on the CPU tail", "[kivicpu]") {
  checkKiviEverywhere(runKiviOnCpu, 4, 32, 128, 40, KvValueType::F16,
                      kWindowChunks);
  checkKiviEverywhere(runKiviOnCpu, 4, 32, 0, 40, KvValueType::BF16,
                      kNoWindowChunks);
  checkKiviEverywhere(runKiviOnCpu, 4, 5, 0, 13, KvValueType::F16,
                      kNoWindowChunks);
}

TEST_CASE("kv_kivi_int2 on the CPU tail", "[kivicpu]") {
  checkKiviEverywhere(runKiviOnCpu, 2, 32, 128, 40, KvValueType::BF16,
                      kWindowChunks);
  checkKiviEverywhere(runKiviOnCpu, 2, 32, 0, 40, KvValueType::F16,
                      kNoWindowChunks);
  checkKiviEverywhere(runKiviOnCpu, 2, 5, 3, 13, KvValueType::F16,
                      kNoWindowChunks);
}

TEST_CASE("KIVI appends skip tokens outside the cache (CPU tail)",
          "[kivicpu]") {
  checkKiviSkipsOutsideTheCache(runKiviOnCpu);
}

TEST_CASE("KIVI compile and run refuse bad specs and buffers", "[kivicpu]") {
  KiviKernelSpec spec;
  spec.side = {3, 32, 128, true};
  spec.heads = 2;
  spec.headDim = 8;
  auto refused = compiler::compileKiviForCpu(spec);
  CHECK(errorText(refused.takeError()) == "KIVI takes 2 or 4 bits; got 3");
  spec.side = {4, 32, 129, true};
  refused = compiler::compileKiviForCpu(spec);
  CHECK(errorText(refused.takeError()) ==
        "KIVI residual window 129 is not in [0, 128]");
  spec.side = {4, 4, 2, true};
  spec.residualType = KvValueType::F32;
  refused = compiler::compileKiviForCpu(spec);
  CHECK(errorText(refused.takeError()) ==
        "the KIVI residual holds f16 or bf16 tokens, not f32");

  // A valid kernel: append, keys per channel, H = 2, D = 8, G = 4, R = 2.
  spec.residualType = KvValueType::F16;
  compiler::KiviCpuKernel &kernel = kiviKernelFor(spec);
  std::vector<uint8_t> storage(4096);
  void *data = storage.data();
  std::vector<compiler::KvBuffer> buffers = {
      {data, {1, 2, 1, 8}}, {data, {1, 2, 8, 4}}, {data, {1, 2, 2, 8}},
      {data, {1, 2, 2, 8}}, {data, {1, 2, 6, 8}}, {data, {1}}};
  std::vector<compiler::KvBuffer> fewer(buffers.begin(), buffers.end() - 1);
  CHECK(errorText(kernel.run(fewer)) == "the kernel takes 6 buffers, got 5");
  std::vector<compiler::KvBuffer> wrongRing = buffers;
  wrongRing[4].shape = {1, 2, 5, 8};
  CHECK(errorText(kernel.run(wrongRing)) ==
        "buffer 4 dimension 2 is 5; the kernel takes 6");
  std::vector<compiler::KvBuffer> wrongRank = buffers;
  wrongRank[1].shape = {2, 8, 4};
  CHECK(errorText(kernel.run(wrongRank)) ==
        "buffer 1 has rank 3; the kernel takes 4");
}
