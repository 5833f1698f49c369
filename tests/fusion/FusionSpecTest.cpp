//===- FusionSpecTest.cpp - The prologue grammar of the kernel spec -------===//

#include "runtime/compiler/Compiler.h"
#include "runtime/spec/KernelSpec.h"

#include <catch2/catch.hpp>

using namespace lowbit;

namespace {

KernelSpec parseOrFail(const std::string &text) {
  std::string error;
  std::optional<KernelSpec> spec = parseKernelSpec(text, &error);
  INFO(text << ": " << error);
  REQUIRE(spec);
  return *spec;
}

std::string parseError(const std::string &text) {
  std::string error;
  CHECK_FALSE(parseKernelSpec(text, &error));
  return error;
}

} // namespace

TEST_CASE("spec: prologues before '|' parse, print and read back",
          "[fusion][spec]") {
  KernelSpec spec =
      parseOrFail("rmsnorm(eps=1e-5) | quantize nvfp4 from=bf16 rows=4 "
                  "cols=64");
  REQUIRE(spec.prologues.size() == 1);
  CHECK(spec.prologues[0].kind == PrologueKind::RmsNorm);
  CHECK(spec.prologues[0].eps == 1e-5f);
  std::string canonical = printKernelSpec(spec);
  CHECK(canonical == "rmsnorm(eps=1e-05) | quantize nvfp4 from=bf16 "
                     "scale=dynamic global=computed rows=4 cols=64");
  CHECK(parseOrFail(canonical) == spec);

  // A chain, spaces inside map(...) kept in one token, no spaces around '|'.
  KernelSpec chain = parseOrFail(
      "silu_mul|smooth | hadamard(32) | map(x * 0.5 + max(x, -1)) | "
      "quantize mxfp4 rows=2 cols=64");
  REQUIRE(chain.prologues.size() == 4);
  CHECK(chain.prologues[3].kind == PrologueKind::Map);
  CHECK(printKernelSpec(chain) ==
        "silu_mul | smooth | hadamard(32) | map(((x*0.5)+max(x,(-1)))) | "
        "quantize mxfp4 from=f32 scale=dynamic rows=2 cols=64");
  CHECK(parseOrFail(printKernelSpec(chain)) == chain);
  // Without prologues nothing changes.
  CHECK(parseOrFail("quantize mxfp4").prologues.empty());
}

TEST_CASE("spec: prologue errors name the offending token", "[fusion][spec]") {
  CHECK(parseError("layernorm | quantize mxfp4") ==
        "unknown prologue 'layernorm' (want rmsnorm, add_rmsnorm, silu_mul, "
        "smooth, hadamard or map)");
  CHECK(parseError("rmsnorm eps=1 | quantize mxfp4") ==
        "a prologue is one token, got 'eps=1' after 'rmsnorm'");
  CHECK(parseError(" | quantize mxfp4") ==
        "an empty prologue before '|' at column 2");
  CHECK(parseError("rmsnorm(eps=x) | quantize mxfp4") ==
        "'rmsnorm(eps=x)': bad eps 'x' (want a finite number >= 0)");
  CHECK(parseError("rmsnorm | dequantize mxfp4") ==
        "prologues ('rmsnorm(eps=1e-06)') go only in front of quantize");
  CHECK(parseError("smooth | silu_mul | quantize mxfp4")
            .find("'silu_mul' must come first") != std::string::npos);
  CHECK(parseError("hadamard(32) | quantize mxfp4 rows=2 cols=48") ==
        "'hadamard(32)': the block 32 does not divide the row width 48");
  CHECK(parseError("hadamard(32) | quantize mxfp4 dynamic")
            .find("needs a static column count") != std::string::npos);
  CHECK(parseError("map(x + y) | quantize mxfp4") ==
        "map(x + y): unknown name 'y' (want x, a number, abs, sqrt, exp, "
        "silu, sigmoid, min, max)");
  CHECK(parseError("rmsnorm | quantize nvfp4 | smooth") ==
        "a prologue is one token, got 'nvfp4' after 'quantize'");
}

TEST_CASE("spec: a fused kernel's parameters", "[fusion][spec]") {
  using Role = compiler::KernelParam::Role;
  KernelSpec spec =
      parseOrFail("add_rmsnorm(eps=1e-6) | smooth | quantize nvfp4 from=bf16");
  std::vector<compiler::KernelParam> params = compiler::kernelParams(spec);
  std::vector<std::string> sides;
  for (const compiler::KernelParam &param : params)
    sides.push_back(param.side);
  CHECK(sides == std::vector<std::string>{"", "residual", "weight", "smooth",
                                          "", "", "", "residual"});
  CHECK(params.back().role == Role::Output);
  CHECK(params.back().isResult);
  CHECK(params.back().elementType == "bf16");
  // silu_mul reads twice the columns; weights are one row.
  KernelSpec silu = parseOrFail("silu_mul | rmsnorm | quantize mxfp8");
  std::vector<Shape2D> shapes = compiler::bufferShapes(silu, 3, 64);
  CHECK(shapes[0] == Shape2D{3, 128});
  CHECK(shapes[1] == Shape2D{1, 64});
}
