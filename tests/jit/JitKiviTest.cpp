//===- JitKiviTest.cpp - KIVI kernels through lowbit::Jit::getKv ----------===//
//
// kivi_append and kivi_dequantize (kv_kivi_int2, G = 5, R = 0, keys per
// channel and per token, contiguous and paged) through the Jit on the CPU,
// with tests/kvkernels' KIVI checks: after each append chunk the cache
// equals the MLIR-free KiviStream's byte for byte and dequantizes to its
// tokens bit for bit (KvKiviTestSupport.h).
//
//===----------------------------------------------------------------------===//

#include "lowbit/Jit.h"

#include "tests/kvkernels/KvKiviTestSupport.h"

#include <catch2/catch.hpp>

#include <set>

using namespace lowbit;

namespace {

/// One Jit for the process, destroyed after main returns with its CPU
/// engines (tests/lit/cli/jit-teardown.test checks that this is clean).
Jit &kiviJit() {
  static std::unique_ptr<Jit> jit = [] {
    JitOptions options;
    options.cacheMode = runtime::CacheMode::Off;
    auto created = Jit::create(options);
    REQUIRE(created.ok());
    return std::move(created).value();
  }();
  return *jit;
}

/// The spec texts the runner was asked for.
std::set<std::string> &kiviSpecsSeen() {
  static std::set<std::string> seen;
  return seen;
}

/// The KIVI checks' runner: the spec's text through getKv, the buffers as
/// KvTensors of the parameters' element types.
std::string runKiviThroughJit(const kv::KiviKernelSpec &spec,
                              const std::vector<compiler::KvBuffer> &buffers) {
  std::string text = kv::formatKiviKernelSpec(spec);
  kiviSpecsSeen().insert(text);
  Expected<KvKernel> kernel = kiviJit().getKv(text, Target{});
  if (!kernel)
    return kernel.error().message;
  const std::vector<KvParamInfo> &params = kernel->params();
  if (params.size() != buffers.size())
    return "parameter count";
  std::vector<KvTensor> tensors;
  for (size_t i = 0; i < buffers.size(); ++i) {
    KvTensor tensor;
    tensor.data = buffers[i].data;
    tensor.element = params[i].element;
    tensor.rank = buffers[i].shape.size();
    std::copy(buffers[i].shape.begin(), buffers[i].shape.end(),
              tensor.shape.begin());
    tensors.push_back(tensor);
  }
  Status ran = kernel->run(tensors);
  return ran.ok() ? "" : ran.error().message;
}

} // namespace

TEST_CASE("getKv: kivi_append and kivi_dequantize = the KIVI reference",
          "[kv][kivi]") {
  kvtest::checkKiviEverywhere(runKiviThroughJit, 2, 5, 0, 40,
                              kv::KvValueType::BF16, {70, 1, 30, 3, 33});
  // Each spec compiled once, however many calls it served.
  CHECK(kiviJit().stats().cpuCompiles == kiviSpecsSeen().size());
}
