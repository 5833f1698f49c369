//===- JitFusedTest.cpp - Fused kernels through lowbit::Jit ---------------===//
//
// lowbit::Jit serves fused specs (prologue | quantize) on the CPU: get()
// compiles them, run() sizes the side tensors by their side (weight and
// smoothing vectors [1, cols], the residual [rows, cols] read and written,
// silu_mul's [rows, 2 * cols] input), and the outputs equal the reference
// (format/Prologue.h, then format/Quantize.h) bit for bit, through the
// same check as tests/fusion (FusionCheck.h). Sizes declared dynamic are
// run at several shapes without recompiling.
//
//===----------------------------------------------------------------------===//

#include "lowbit/Jit.h"
#include "tests/fusion/FusionCheck.h"

#include <catch2/catch.hpp>

using namespace lowbit;

namespace {

std::unique_ptr<Jit> makeJit() {
  JitOptions options;
  options.cacheDirectory = "/nonexistent-lowbit";
  options.cacheMode = runtime::CacheMode::Off;
  auto jit = Jit::create(options);
  REQUIRE(jit.ok());
  return std::move(jit).value();
}

/// Runs the spec's kernel through `kernel.run` at the buffers' sizes.
testing::KernelRunner viaJit(const Kernel &kernel, int64_t rows, int64_t cols) {
  return [&kernel, rows, cols](const KernelSpec &,
                               std::vector<compiler::HostBuffer> &buffers) {
    std::vector<void *> pointers;
    for (const compiler::HostBuffer &buffer : buffers)
      pointers.push_back(buffer.data);
    Status status = kernel.run(pointers, rows, cols);
    return status.ok() ? std::string() : status.error().message;
  };
}

} // namespace

TEST_CASE("the Jit runs every prologue bit-exact on the CPU", "[jit][fused]") {
  auto jit = makeJit();
  const char *texts[] = {
      "rmsnorm(eps=1e-6) | quantize nvfp4 from=bf16 dynamic",
      "add_rmsnorm(eps=1e-5) | quantize fp8_e4m3 from=bf16 dynamic",
      "silu_mul | quantize mxfp4 from=f16 dynamic",
      "smooth | quantize int8 dynamic",
      "map(x * 0.5 + max(x, -1)) | quantize int4_g128 from=f32 dynamic",
  };
  for (const char *text : texts) {
    Expected<Kernel> kernel = jit->get(text, Target{});
    INFO(text << ": " << (kernel.ok() ? "" : kernel.error().message));
    REQUIRE(kernel.ok());
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{3, 128}, {9, 256}}) {
      INFO(rows << "x" << cols);
      CHECK(testing::checkFused(kernel->spec(), rows, cols, 7,
                                viaJit(*kernel, rows, cols)) == "");
    }
  }
  CHECK(jit->stats().cpuCompiles == std::size(texts));
}

TEST_CASE("a static fused spec (hadamard) through the Jit", "[jit][fused]") {
  auto jit = makeJit();
  Expected<Kernel> kernel = jit->get(
      "hadamard(32) | quantize mxfp4 from=bf16 rows=5 cols=96", Target{});
  REQUIRE(kernel.ok());
  CHECK(testing::checkFused(kernel->spec(), 5, 96, 3, viaJit(*kernel, 5, 96)) ==
        "");
}

TEST_CASE("the Jit's signature of a fused kernel names the side shapes",
          "[jit][fused]") {
  auto jit = makeJit();
  Expected<Kernel> kernel =
      jit->get("add_rmsnorm | quantize fp8_e4m3 from=bf16", Target{});
  REQUIRE(kernel.ok());
  auto arguments = kernel->signature(4, 64);
  REQUIRE(arguments.ok());
  // input, residual, weight, codes, scales, updated residual.
  REQUIRE(arguments->size() == 6);
  CHECK((*arguments)[1].shape == std::array<int64_t, 2>{4, 64});
  CHECK((*arguments)[2].shape == std::array<int64_t, 2>{1, 64});
  CHECK((*arguments)[5].role == ArgumentRole::Output);
  CHECK((*arguments)[5].element == ElementType::BF16);
  CHECK((*arguments)[5].shape == std::array<int64_t, 2>{4, 64});
}

TEST_CASE("a fused spec for a GPU gets the compiler's answer, no abort",
          "[jit][fused]") {
  auto jit = makeJit();
  std::string error;
  std::optional<Target> gpu = parseTarget("sm_90a", &error);
  REQUIRE(gpu);
  Expected<Kernel> kernel =
      jit->get("rmsnorm | quantize nvfp4 from=bf16", *gpu);
  // Until the GPU lowering of fused kernels exists the compiler refuses
  // them with its reason; once it does, the kernel compiles to PTX.
  if (kernel.ok()) {
    CHECK_FALSE(kernel->ptx().empty());
  } else {
    CHECK(kernel.error().code == ErrorCode::CompileFailed);
    CHECK(kernel.error().message.find("no GPU lowering") != std::string::npos);
  }
}
