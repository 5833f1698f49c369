//===- BundleTest.cpp - Manifest round trip, launch expressions -----------===//

#include "runtime/aot/Bundle.h"

#include <catch2/catch.hpp>

using namespace lowbit::aot;

TEST_CASE("launch expressions evaluate against shapes", "[aot]") {
  std::vector<Shape> shapes = {Shape{64, 96}, Shape{64, 48}};
  std::string error;
  CHECK(evaluateExpression("128", shapes, &error) == 128);
  CHECK(evaluateExpression("(dim 0 1)", shapes, &error) == 96);
  CHECK(evaluateExpression("(ceildivsi (dim 0 1) 32)", shapes, &error) == 3);
  CHECK(evaluateExpression("(ceildivsi 97 32)", shapes, &error) == 4);
  CHECK(evaluateExpression("(floordivsi -1 2)", shapes, &error) == -1);
  CHECK(evaluateExpression("(select (cmp slt 1 2) 5 6)", shapes, &error) == 5);
  CHECK(!evaluateExpression("(dim 2 0)", shapes, &error));
  CHECK(error.find("out of range") != std::string::npos);
  CHECK(!evaluateExpression("(divsi 1 0)", shapes, &error));
  CHECK(!evaluateExpression("(frobnicate 1 2)", shapes, &error));
}

// Found by fuzzing (fuzz/regressions/aot-manifest): INT64_MIN / -1 was
// undefined behaviour, and deep nesting overflowed the stack.
TEST_CASE("launch expressions refuse overflow and deep nesting", "[aot]") {
  std::vector<Shape> shapes = {Shape{64, 96}};
  std::string error;
  for (const char *op : {"divsi", "remsi", "ceildivsi", "floordivsi"}) {
    std::string text = std::string("(") + op + " -9223372036854775808 -1)";
    CHECK(!evaluateExpression(text, shapes, &error));
    CHECK(error.find("signed overflow") != std::string::npos);
  }
  CHECK(evaluateExpression("(divui -9223372036854775808 -1)", shapes, &error) ==
        0);
  std::string deep;
  for (int i = 0; i < 100000; ++i)
    deep += "(add 1 ";
  deep += "1" + std::string(100000, ')');
  CHECK(!evaluateExpression(deep, shapes, &error));
  CHECK(error.find("nested deeper") != std::string::npos);
  std::string shallow = "1";
  for (int i = 0; i < 16; ++i)
    shallow = "(add 1 " + shallow + ")";
  CHECK(evaluateExpression(shallow, shapes, &error) == 17);
}

TEST_CASE("manifest JSON round-trips", "[aot]") {
  Manifest manifest;
  manifest.target = "sm_90a";
  BundleEntry entry;
  entry.name = "quantize-mxfp4-f32";
  entry.spec = "quantize mxfp4";
  entry.op = "quantize";
  entry.ptxFile = "q.ptx";
  entry.params = {{"input", "f32", false}, {"codes", "i8", true}};
  Launch launch;
  launch.entry = "kernel_kernel";
  launch.grid = {"(ceildivsi (dim 0 1) 128)", "1", "1"};
  launch.operands = {Operand{0, ""}, Operand{1, ""}, Operand{-1, "(dim 0 0)"}};
  entry.launches.push_back(launch);
  entry.bench =
      SizeInstance{8192, 8192, {Shape{8192, 8192}, Shape{8192, 8192}}};
  manifest.entries.push_back(entry);
  std::string text = toJson(manifest).serialize(), error;
  auto json = parseJson(text, &error);
  REQUIRE(json);
  auto back = manifestFromJson(*json, &error);
  REQUIRE(back);
  REQUIRE(back->entries.size() == 1);
  CHECK(back->entries[0].launches[0].grid[0] == launch.grid[0]);
  CHECK(back->entries[0].launches[0].operands[2].scalar == "(dim 0 0)");
  CHECK(back->entries[0].params[1].written);
  CHECK(back->entries[0].bench->shapes[1][1] == 8192);

  std::vector<uint64_t> addresses = {0x1000, 0x2000};
  auto packed = packArguments(back->entries[0].launches[0], addresses,
                              back->entries[0].bench->shapes, &error);
  REQUIRE(packed);
  // 7 descriptor slots per memref, then the scalar.
  REQUIRE(packed->slots.size() == 15);
  CHECK(packed->slots[0] == 0x1000);
  CHECK(packed->slots[1] == 0x1000);
  CHECK(packed->slots[5] == 8192); // stride0 = cols
  CHECK(packed->slots[6] == 1);
  CHECK(packed->slots[14] == 8192);
  CHECK(packed->pointers[14] == &packed->slots[14]);
}

TEST_CASE("malformed manifests are errors", "[aot]") {
  std::string error;
  CHECK(!parseJson("{\"a\": [1, 2", &error));
  CHECK(error.find("byte") != std::string::npos);
  auto json = parseJson("{\"format\": \"other\"}", &error);
  REQUIRE(json);
  CHECK(!manifestFromJson(*json, &error));
}

TEST_CASE("manifest sizes are bounded int64, refused not narrowed", "[aot]") {
  // A valid one-entry manifest with one field replaced by `value`.
  auto manifestWith = [](const std::string &rows, const std::string &memref,
                         const std::string &registers) {
    return "{\"format\": \"lowbit-aot-bundle\", \"version\": 1, "
           "\"target\": \"sm_90a\", \"entries\": [{\"name\": \"q\", "
           "\"spec\": \"quantize int8\", \"op\": \"quantize\", \"ptx\": "
           "\"q.ptx\", \"params\": [{\"role\": \"input\", \"element\": "
           "\"f32\"}], \"launches\": [{\"entry\": \"k\", \"grid\": [\"1\", "
           "\"1\", \"1\"], \"block\": [\"1\", \"1\", \"1\"], \"operands\": "
           "[{\"memref\": " +
           memref + "}], \"resources\": {\"registers\": " + registers +
           "}}], \"bench\": {\"rows\": " + rows +
           ", \"cols\": 8, \"shapes\": [[" + rows + ", 8]]}}]}";
  };
  auto read = [](const std::string &text, std::string &error) {
    auto json = parseJson(text, &error);
    REQUIRE(json);
    return manifestFromJson(*json, &error);
  };
  std::string error;
  auto valid = read(manifestWith("4", "0", "32"), error);
  REQUIRE(valid);
  CHECK(valid->entries[0].bench->rows == 4);
  CHECK(valid->entries[0].launches[0].resources.registers == 32);

  struct Case {
    std::string rows, memref, registers, message;
  };
  for (const Case &bad : std::vector<Case>{
           // Beyond int64: refused by the parser, not wrapped.
           {"9223372036854775808", "0", "32", "not a 64-bit integer"},
           {"-1", "0", "32", "outside"},
           {"1099511627777", "0", "32", "outside"},
           // 2^32 would become 0 as an int.
           {"4", "4294967296", "32", "outside"},
           {"4", "-1", "32", "outside"},
           {"4", "0", "4294967328", "outside"},
       }) {
    INFO(bad.rows << " " << bad.memref << " " << bad.registers);
    error.clear();
    CHECK_FALSE(read(manifestWith(bad.rows, bad.memref, bad.registers), error));
    CHECK_THAT(error, Catch::Contains(bad.message));
  }
  // Each dimension fits, the product does not.
  error.clear();
  std::string text = manifestWith("4", "0", "32");
  text.replace(text.find("[[4, 8]]"), 8, "[[1099511627776, 1099511627776]]");
  CHECK_FALSE(read(text, error));
  CHECK_THAT(error, Catch::Contains("elements"));
}
