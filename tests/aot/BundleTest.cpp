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
  entry.bench = SizeInstance{8192, 8192, {Shape{8192, 8192}, Shape{8192, 8192}}};
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
