//===- ArgumentShapesTest.cpp - Launch-path sizing vs kernelAbi -----------===//
//
// jit::argumentShape (what lowbit::Jit's run/launch/signature and the C
// API size buffers with) must give, for every parameter, the shape that
// kernelAbi() lists for the same spec with static sizes: plain kernels and
// fused ones, whose side tensors and silu_mul's double-width input the
// role alone does not tell.
//
//===----------------------------------------------------------------------===//

#include "runtime/jit/ArgumentShapes.h"

#include <catch2/catch.hpp>

using namespace lowbit;

namespace {

KernelSpec parsed(const std::string &text) {
  std::string error;
  std::optional<KernelSpec> spec = parseKernelSpec(text, &error);
  INFO(text << ": " << error);
  REQUIRE(spec);
  return *spec;
}

} // namespace

TEST_CASE("argumentShape equals kernelAbi's shapes", "[jit][shapes]") {
  const char *texts[] = {
      "quantize mxfp4",
      "quantize nvfp4 from=bf16",
      "quantize int8_g64 scale=static",
      "dequantize nvfp4 to=f16",
      "rmsnorm(eps=1e-6) | quantize nvfp4 from=bf16",
      "add_rmsnorm(eps=1e-5) | quantize fp8_e4m3 from=bf16",
      "silu_mul | quantize mxfp4 from=f16",
      "smooth | quantize int8 scale=static",
      "smooth | add_rmsnorm | quantize int4_g128",
      "map(x * 0.5) | quantize fp8_e5m2",
  };
  std::pair<int64_t, int64_t> sizes[] = {{1, 32}, {3, 128}, {17, 256}};
  size_t sideParams = 0;
  for (const char *text : texts) {
    KernelSpec spec = parsed(text);
    for (auto [rows, cols] : sizes) {
      KernelSpec sized = spec;
      sized.rows = rows;
      sized.cols = cols;
      for (const KernelAbiParam &param : kernelAbi(sized)) {
        Shape2D shape =
            jit::argumentShape(spec, param.role, param.side, rows, cols);
        INFO(text << " at " << rows << "x" << cols << ", side '" << param.side
                  << "', role " << int(param.role));
        CHECK(shape.rows == param.shape.rows);
        CHECK(shape.cols == param.shape.cols);
        sideParams += !param.side.empty();
      }
    }
  }
  // rmsnorm 1, add_rmsnorm 3, smooth 1, smooth|add_rmsnorm 4; x 3 sizes.
  CHECK(sideParams == 27);
}

TEST_CASE("the shapes that only the side tells", "[jit][shapes]") {
  KernelSpec silu = parsed("silu_mul | quantize mxfp4 from=bf16");
  CHECK(jit::argumentShape(silu, KernelParamRole::Input, "", 4, 64).cols ==
        128);
  KernelSpec add = parsed("add_rmsnorm | quantize fp8_e4m3");
  Shape2D weight =
      jit::argumentShape(add, KernelParamRole::Input, "weight", 4, 64);
  CHECK((weight.rows == 1 && weight.cols == 64));
  Shape2D residual =
      jit::argumentShape(add, KernelParamRole::Output, "residual", 4, 64);
  CHECK((residual.rows == 4 && residual.cols == 64));
}

TEST_CASE("quantizedCols inverts the input width", "[jit][shapes]") {
  KernelSpec silu = parsed("silu_mul | quantize mxfp4");
  CHECK(jit::quantizedCols(silu, 128) == 64);
  CHECK_FALSE(jit::quantizedCols(silu, 127));
  KernelSpec norm = parsed("rmsnorm | quantize mxfp4");
  CHECK(jit::quantizedCols(norm, 128) == 128);
  CHECK(jit::quantizedCols(parsed("dequantize mxfp4"), 96) == 96);
}
