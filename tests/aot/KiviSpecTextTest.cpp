//===- KiviSpecTextTest.cpp - KIVI kernel specs as lowbit aot reads them --===//
//
// `lowbit aot` names KIVI kernels by formatKiviKernelSpec's text; the
// parser must read every field of it back, apply the documented defaults
// and refuse bad text with the offending token.
//
//===----------------------------------------------------------------------===//

#include "kv/KvKiviKernelSpec.h"

#include <catch2/catch.hpp>

using namespace lowbit::kv;

TEST_CASE("a KIVI spec's text parses back to the spec", "[aot][kivi]") {
  KiviKernelSpec spec;
  spec.op = KvKernelOp::Dequantize;
  spec.side.bits = 2;
  spec.side.groupSize = 16;
  spec.side.residual = 64;
  spec.side.perChannel = true;
  spec.side.zero = KiviZero::Integer;
  spec.residualType = KvValueType::BF16;
  spec.outputType = KvValueType::F16;
  spec.layout = KvLayout::Paged;
  spec.heads = 3;
  spec.headDim = 40;
  for (KvKernelOp op : {KvKernelOp::Append, KvKernelOp::Dequantize}) {
    spec.op = op;
    CHECK_THAT(formatKiviKernelSpec(spec), Catch::Contains(" zero=int "));
    if (op == KvKernelOp::Append)
      spec.outputType = KvValueType::F32; // not printed for an append
    std::string error;
    std::optional<KiviKernelSpec> parsed =
        parseKiviKernelSpec(formatKiviKernelSpec(spec), &error);
    INFO(formatKiviKernelSpec(spec) << ": " << error);
    REQUIRE(parsed);
    CHECK(*parsed == spec);
  }
}

TEST_CASE("a KIVI spec's defaults and refusals", "[aot][kivi]") {
  std::string error;
  std::optional<KiviKernelSpec> spec = parseKiviKernelSpec(
      "kivi_append kv_kivi_int4 heads=2 head_dim=8", &error);
  REQUIRE(spec);
  CHECK(spec->side.groupSize == 32);
  CHECK(spec->side.residual == 128);
  CHECK_FALSE(spec->side.perChannel);
  CHECK(spec->side.zero == KiviZero::Float); // KIVI's own quantizer
  CHECK_THAT(formatKiviKernelSpec(*spec), Catch::Contains(" zero=float "));
  spec = parseKiviKernelSpec(
      "kivi_append kv_kivi_int4 zero=int heads=2 head_dim=8", &error);
  REQUIRE(spec);
  CHECK(spec->side.zero == KiviZero::Integer);
  CHECK(spec->residualType == KvValueType::F16);
  CHECK(spec->layout == KvLayout::Contiguous);
  for (auto [text, message] :
       {std::pair{"kivi_append kv_kivi_int4 heads=2", "are required"},
        std::pair{"kivi_append kv_kivi_int3 heads=2 head_dim=8",
                  "'kv_kivi_int3'"},
        std::pair{"kivi_append kv_kivi_int4 to=f16 heads=2 head_dim=8",
                  "'to=f16': to= belongs to kivi_dequantize only"},
        std::pair{"kivi_append kv_kivi_int4 heads=2 heads=3 head_dim=8",
                  "given twice"},
        std::pair{"kivi_append kv_kivi_int4 group=x heads=2 head_dim=8",
                  "'group=x': expected an integer"},
        std::pair{"kivi_append kv_kivi_int4 per_token per_channel heads=2 "
                  "head_dim=8",
                  "given twice"},
        std::pair{"kivi_append kv_kivi_int4 group=0 heads=2 head_dim=8",
                  "group size 0"},
        std::pair{"kivi_append kv_kivi_int4 zero=min heads=2 head_dim=8",
                  "'zero=min': the zero is float"},
        std::pair{"kivi_append kv_kivi_int4 zero=int zero=float heads=2 "
                  "head_dim=8",
                  "given twice"},
        std::pair{"kivi_append kv_kivi_int4 bits=4 heads=2 head_dim=8",
                  "unknown key 'bits'"},
        std::pair{"kv_append kv_kivi_int4 heads=2 head_dim=8",
                  "kivi_append|kivi_dequantize"}}) {
    INFO(text);
    CHECK_FALSE(parseKiviKernelSpec(text, &error));
    CHECK_THAT(error, Catch::Contains(message));
  }
}
