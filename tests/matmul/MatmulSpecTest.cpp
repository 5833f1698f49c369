// The matmul spec's text form and its refusals.
#include "matmul/MatmulSpec.h"
#include "tests/matmul/MatmulTestData.h"

#include <catch2/catch.hpp>

using namespace lowbit;
using namespace lowbit::matmul;

namespace {

std::string refusalOf(std::string_view text) {
  std::string error;
  std::optional<MatmulSpec> spec = parseMatmulSpec(text, &error);
  CHECK_FALSE(spec.has_value());
  return error;
}

} // namespace

TEST_CASE("matmul spec: defaults and the canonical text") {
  std::optional<MatmulSpec> spec = parseMatmulSpec("matmul int4_g128 from=bf16");
  REQUIRE(spec);
  CHECK(spec->scheme.name == "int4_g128");
  CHECK(spec->input == ValueType::BF16);
  CHECK(spec->output == ValueType::BF16); // to= defaults to from=
  CHECK_FALSE(spec->bias);
  CHECK(spec->isDynamic());
  CHECK(printMatmulSpec(*spec) == "matmul int4_g128 from=bf16 to=bf16 dynamic");

  spec = parseMatmulSpec("matmul mxfp4 to=f32 bias n=96 k=4096 from=f16");
  REQUIRE(spec);
  CHECK(spec->output == ValueType::F32);
  CHECK(spec->bias);
  CHECK(spec->n == 96);
  CHECK(spec->k == 4096);
  CHECK(printMatmulSpec(*spec) ==
        "matmul mxfp4 from=f16 to=f32 bias n=96 k=4096");
}

TEST_CASE("matmul spec: every weight scheme round-trips through the text") {
  for (const test::WeightSchemeCase &weightCase : test::weightSchemeCases()) {
    INFO(weightCase.label);
    std::string text = std::string("matmul ") + weightCase.text +
                       " from=f16 to=bf16 bias n=33 k=256";
    std::string error;
    std::optional<MatmulSpec> spec = parseMatmulSpec(text, &error);
    INFO(error);
    REQUIRE(spec);
    CHECK(spec->scheme == test::schemeOf(weightCase));
    std::optional<MatmulSpec> again =
        parseMatmulSpec(printMatmulSpec(*spec), &error);
    REQUIRE(again);
    CHECK(*again == *spec);
    CHECK(printMatmulSpec(*again) == printMatmulSpec(*spec));
  }
}

TEST_CASE("matmul spec: the scale mode does not enter the key") {
  std::optional<MatmulSpec> spec = parseMatmulSpec(
      "matmul scheme(format=e2m1,scale=group(32;axis=1),tail=true,type=e8m0,"
      "rule=floor,mode=static,packing=nibble)");
  REQUIRE(spec);
  CHECK(spec->scheme.scale.mode == ScaleMode::Dynamic);
  CHECK(printMatmulSpec(*spec) == "matmul mxfp4 from=f32 to=f32 dynamic");
}

TEST_CASE("matmul spec: each contradiction is refused, naming the token") {
  CHECK(refusalOf("matmul mxfp4 from=f16 from=f16") ==
        "'from=f16' contradicts 'from=f16': each key is given once");
  CHECK(refusalOf("matmul mxfp4 to=f16 to=bf16") ==
        "'to=bf16' contradicts 'to=f16': each key is given once");
  CHECK(refusalOf("matmul mxfp4 bias bias") ==
        "'bias' contradicts 'bias': each key is given once");
  CHECK(refusalOf("matmul mxfp4 n=4 k=64 dynamic") ==
        "'dynamic' contradicts 'n=4'");
  CHECK(refusalOf("matmul mxfp4 dynamic k=64") ==
        "'k=64' contradicts 'dynamic'");
  CHECK(refusalOf("matmul mxfp4 dynamic dynamic") ==
        "'dynamic' contradicts 'dynamic': each key is given once");
  CHECK(refusalOf("matmul mxfp4 n=4") == "'n=4' needs k=");
  CHECK(refusalOf("matmul mxfp4 k=4") == "'k=4' needs n=");
  CHECK(refusalOf("matmul mxfp4 n=0 k=4") ==
        "'n=0': n= is a positive integer of at most 2^40");
  CHECK(refusalOf("matmul mxfp4 k=2199023255553 n=1") ==
        "'k=2199023255553': k= is a positive integer of at most 2^40");
  CHECK(refusalOf("matmul mxfp4 from=f64") ==
        "'from=f64': bad dtype (want f32, f16 or bf16)");
  CHECK(refusalOf("matmul mxfp4 rows=3") ==
        "'rows=3': unknown key 'rows' (from, to, n, k; w= and a= come "
        "first; or the words bias, dynamic)");
  CHECK(refusalOf("matmul mxfp4 transposed") ==
        "'transposed' is not key=value, 'bias' or 'dynamic'");
  CHECK(refusalOf("quantize mxfp4") ==
        "a matmul spec starts with 'matmul', got 'quantize'");
  CHECK(refusalOf("matmul").starts_with("a matmul spec is 'matmul SCHEME"));
  CHECK(refusalOf("matmul mxfp5").starts_with("'mxfp5': unknown scheme"));
}

TEST_CASE("matmul spec: schemes that cannot be weights are refused") {
  CHECK(refusalOf("matmul scheme(format=int8,scale=per_channel(axis=1))") ==
        "'scheme(format=int8,scale=per_channel(axis=1))' is not a weight "
        "scheme: per_channel(axis=1) gives one scale per input column k; "
        "weight scales run along K (per_tensor, per_channel(axis=0) or "
        "per_token for one per output channel, group(G;axis=1), block)");
  CHECK(refusalOf("matmul scheme(format=int8,scale=group(32;axis=0))")
            .ends_with("is not a weight scheme: group(32;axis=0) groups "
                       "output channels (rows of W); weight groups run "
                       "along K: group(G;axis=1)"));
  CHECK(refusalOf("matmul scheme(format=f16)") ==
        "'scheme(format=f16)': format f16 has 16 bits, more than its 8-bit "
        "container (byte packing)");
}

TEST_CASE("matmul spec: a group that straddles K without a tail is refused") {
  const char *noTail = "matmul scheme(format=int8,scale=group(64;axis=1),"
                       "tail=false)";
  CHECK(parseMatmulSpec(std::string(noTail) + " n=3 k=128"));
  CHECK(refusalOf(std::string(noTail) + " n=3 k=100") ==
        "k=100: the last group of 64 along K straddles its end and the "
        "scheme allows no tail (tail=false)");
  CHECK(refusalOf("matmul scheme(format=e4m3,scale=block(128x128)) n=256 "
                  "k=200") ==
        "k=200: the last block of 128 along K straddles its end and the "
        "scheme allows no tail (tail=false)");
  CHECK(refusalOf("matmul scheme(format=e4m3,scale=block(128x128)) n=200 "
                  "k=256") ==
        "weights [n=200, k=256]: block height 128 does not divide 200 rows "
        "and the scheme allows no tail");
  // Named schemes allow a tail: any K.
  CHECK(parseMatmulSpec("matmul int4_g128 n=3 k=100"));
  std::string error;
  CHECK_FALSE(validateWeightShape(
      *parseSchemeText("scheme(format=int8,scale=group(64;axis=1))"), 5, 65,
      &error));
  CHECK(error.starts_with("k=65: the last group of 64"));
}
