//===- KernelSpecTest.cpp - The kernel spec's text form -------------------===//

#include "runtime/spec/KernelSpec.h"

#include <catch2/catch.hpp>

using namespace lowbit;

TEST_CASE("kernel spec: parse and print round trip", "[spec]") {
  for (const char *text :
       {"quantize mxfp4 from=f32 scale=dynamic dynamic",
        "quantize nvfp4 from=bf16 scale=dynamic global=given rows=128 cols=256",
        "quantize int4_g128 from=f16 scale=static dynamic",
        "dequantize fp8_e4m3 to=bf16 scale=dynamic rows=3 cols=37",
        "quantize scheme(format=int8,scale=block(2x64),tail=true,type=f32,"
        "rule=absmax,mode=dynamic,zero_point=false,global=none,"
        "layout=row_major,packing=byte) from=f32 scale=dynamic dynamic"}) {
    std::string error;
    std::optional<KernelSpec> spec = parseKernelSpec(text, &error);
    INFO(text << ": " << error);
    REQUIRE(spec);
    CHECK(printKernelSpec(*spec) == text);
    CHECK(parseKernelSpec(printKernelSpec(*spec)) == spec);
  }
}

TEST_CASE("kernel spec: defaults", "[spec]") {
  std::optional<KernelSpec> spec = parseKernelSpec("quantize mxfp8");
  REQUIRE(spec);
  CHECK(spec->valueType == ValueType::F32);
  CHECK(!spec->isStatic());
  CHECK(spec->rows == kDynamic);
  CHECK(printKernelSpec(*spec) ==
        "quantize mxfp8 from=f32 scale=dynamic dynamic");
}

TEST_CASE("kernel spec: errors name the problem", "[spec]") {
  struct Case {
    const char *text, *message;
  } cases[] = {
      {"quantize nosuch", "unknown scheme 'nosuch'"},
      {"squash mxfp4", "unknown op 'squash'"},
      {"quantize mxfp4 colour=red", "unknown key 'colour'"},
      {"quantize mxfp4 rows=12", "rows= needs cols="},
      {"quantize mxfp4 rows=x cols=3", "bad rows 'x'"},
      {"quantize mxfp4 from=f64", "bad dtype 'f64'"},
      {"dequantize mxfp4 from=f16", "unknown key 'from'"},
      {"quantize mxfp4 global=given", "global=given"},
      {"quantize mxfp4", nullptr},
      {"quantize scheme(format=e4m3,scale=group(32;axis=1),packing=byte,"
       "type=e8m0,rule=floor) rows=4 cols=40",
       "does not divide"},
      {"quantize scheme(format=e4m3,colour=red)", "unknown scheme key"},
  };
  for (const Case &c : cases) {
    std::string error;
    std::optional<KernelSpec> spec = parseKernelSpec(c.text, &error);
    INFO(c.text << " -> " << error);
    if (!c.message) {
      CHECK(spec);
      continue;
    }
    CHECK(!spec);
    CHECK(error.find(c.message) != std::string::npos);
  }
}
