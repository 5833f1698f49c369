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
      // The hint names the key this op takes.
      {"dequantize mxfp4 from=bf16",
       "unknown key 'from': dequantize names its value type with to= "
       "(to=bf16)"},
      {"quantize mxfp4 to=f16",
       "unknown key 'to': quantize names its value type with from= "
       "(from=f16)"},
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

TEST_CASE("kernel spec: a chain of more than 64 prologues is refused",
          "[spec]") {
  auto chainOf = [](int count) {
    std::string text;
    for (int index = 0; index < count; ++index)
      text += "map(x*0.5) | ";
    return text + "quantize int8 rows=2 cols=16";
  };
  std::string error;
  CHECK(parseKernelSpec(chainOf(64), &error));
  // Refused at the 65th, before the rest (here 10,000) is parsed.
  for (int count : {65, 10000}) {
    CHECK_FALSE(parseKernelSpec(chainOf(count), &error));
    CHECK(error.find("more than 64 prologues in the chain (the limit)") !=
          std::string::npos);
  }
}

namespace {

/// The message parseKernelSpec gives for `text` ("" if it parses).
std::string specError(const std::string &text) {
  std::string error;
  if (parseKernelSpec(text, &error))
    return "";
  return error;
}

struct RefusedSpec {
  const char *text, *message;
};

/// Each spec is refused with a message that contains `message`.
void checkRefused(std::initializer_list<RefusedSpec> cases) {
  for (const RefusedSpec &c : cases) {
    std::string error = specError(c.text);
    INFO(c.text << " -> " << error);
    CHECK(error.find(c.message) != std::string::npos);
  }
}

} // namespace

TEST_CASE("kernel spec: sizes are bounded, never narrowed", "[spec][bounds]") {
  checkRefused({
      // Was accepted and printed memref<1x-4611686018427387904xi8>.
      {"quantize mxfp4 rows=1 cols=9223372036854775807",
       "'cols=9223372036854775807' is larger than the maximum dimension 2^40 "
       "(1099511627776)"},
      {"quantize int8 rows=1099511627777 cols=1",
       "'rows=1099511627777' is larger than the maximum dimension 2^40"},
      {"quantize int8 rows=1048576 cols=1048577",
       "1048576x1048577 has 1099512676352 elements, more than the maximum "
       "2^40"},
      {"quantize int8 rows=99999999999999999999 cols=1", "bad rows"},
      // Was group(32): 4294967328 = 2^32 + 32 narrowed to int.
      {"quantize scheme(format=e4m3,scale=group(4294967328),type=e8m0,"
       "rule=floor)",
       "group size 4294967328 is larger than the maximum 2^30 (1073741824)"},
      {"quantize scheme(format=e4m3,scale=group(1073741825),type=e8m0,"
       "rule=floor)",
       "group size 1073741825 is larger than the maximum 2^30"},
      // Was block(1x1).
      {"quantize scheme(format=int8,scale=block(4294967297x4294967297))",
       "block height 4294967297 is larger than the maximum 2^30"},
      {"quantize scheme(format=int8,scale=block(2x4294967297))",
       "block width 4294967297 is larger than the maximum 2^30"},
      {"quantize scheme(format=int8,scale=per_channel(axis=4294967297))",
       "axis must be 0 (rows) or 1 (cols), got 4294967297"},
      {"quantize scheme(format=int8,scale=group(0))",
       "group size must be positive, got 0"},
  });
  // The largest sizes within the bounds are taken as written.
  std::optional<KernelSpec> largest =
      parseKernelSpec("quantize scheme(format=int8,scale=group(1073741824),"
                      "tail=true) rows=1 cols=1099511627776");
  REQUIRE(largest);
  CHECK(largest->scheme.scale.groupSize == 1073741824);
  CHECK(largest->cols == kMaxDimension);
  // Shape arithmetic at the bound does not overflow.
  CHECK(scaleShape(largest->scheme, 1, kMaxDimension) == Shape2D{1, 1024});
}

TEST_CASE("kernel spec: contradictory options are refused, naming the token",
          "[spec][contradictions]") {
  checkRefused({
      {"quantize mxfp4 from=f32 from=f16",
       "'from=f16' contradicts 'from=f32': each key is given once"},
      {"quantize mxfp4 scale=static scale=dynamic",
       "'scale=dynamic' contradicts 'scale=static'"},
      {"quantize mxfp4 rows=4 rows=8 cols=32", "'rows=8' contradicts 'rows=4'"},
      {"quantize mxfp4 dynamic rows=4 cols=32",
       "'rows=4' contradicts 'dynamic'"},
      {"quantize mxfp4 rows=4 cols=32 dynamic",
       "'rows=4' contradicts 'dynamic'"},
      {"quantize mxfp4 dynamic dynamic", "'dynamic' contradicts 'dynamic'"},
      // global= is for a dynamic scheme with a global scale only.
      {"quantize nvfp4 scale=static global=computed",
       "'global=computed' applies only to quantizing with a dynamic scheme "
       "that has a global scale (the spec says 'scale=static')"},
      {"quantize nvfp4 scale=static global=given", "'global=given'"},
      {"quantize mxfp4 global=computed", "'global=computed' applies only"},
      {"quantize nvfp4 global=given global=computed",
       "'global=computed' contradicts 'global=given'"},
      // Inside the compact scheme form.
      {"quantize scheme(format=int8,format=e4m3)",
       "scheme field 'format=e4m3' repeats key 'format'"},
      {"quantize scheme(format=int8,mode=static) scale=dynamic",
       "'scale=dynamic' contradicts the scheme's mode=static"},
      {"quantize scheme(format=int8,scale=per_tensor(axis=0))",
       "'axis=0': per_tensor takes no axis"},
      {"quantize scheme(format=int8,scale=block(2x2;axis=1))",
       "'axis=1': block takes no axis"},
      {"quantize scheme(format=int8,scale=per_channel(32))",
       "bad per_channel argument '32'"},
      {"quantize scheme(format=int8,scale=group(32;64))",
       "'64' repeats an argument of 'group(32;64)'"},
      {"quantize scheme(format=int8,scale=group(32;axis=0;axis=1))",
       "'axis=1' repeats an argument"},
  });
  // Agreeing spellings still parse: a static scheme with scale=static.
  CHECK(specError("quantize scheme(format=int8,mode=static) scale=static") ==
        "");
  CHECK(specError("quantize nvfp4 scale=dynamic global=computed") == "");
}
