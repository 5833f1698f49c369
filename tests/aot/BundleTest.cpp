//===- BundleTest.cpp - Manifest round trip, launch expressions -----------===//

#include "runtime/aot/Bundle.h"
#include "runtime/aot/RankedLaunch.h"

#include <catch2/catch.hpp>

using namespace lowbit::aot;

TEST_CASE("launch expressions evaluate against shapes", "[aot]") {
  std::vector<Shape> shapes = {Shape{64, 96}, Shape{64, 48}};
  std::string error;
  CHECK(evaluateExpression("128", shapes, &error) == 128);
  CHECK(evaluateExpression("dim:0:1", shapes, &error) == 96);
  CHECK(evaluateExpression("dim:0:1 32 ceildivs", shapes, &error) == 3);
  CHECK(evaluateExpression("97 32 ceildivs", shapes, &error) == 4);
  CHECK(evaluateExpression("-1 2 floordivs", shapes, &error) == -1);
  CHECK(evaluateExpression("1 2 cmp:2 5 6 sel", shapes, &error) == 5);
  CHECK(!evaluateExpression("dim:2:0", shapes, &error));
  CHECK(error.find("names parameter 2 of 2") != std::string::npos);
  CHECK(!evaluateExpression("1 0 divs", shapes, &error));
  CHECK(error.find("division by zero") != std::string::npos);
  CHECK(!evaluateExpression("1 2 frobnicate", shapes, &error));
  CHECK(error.find("unknown token") != std::string::npos);
}

// Found by fuzzing (fuzz/regressions/aot-manifest): INT64_MIN / -1 was
// undefined behaviour, and deep nesting overflowed the stack.
TEST_CASE("launch expressions refuse overflow and deep nesting", "[aot]") {
  std::vector<Shape> shapes = {Shape{64, 96}};
  std::string error;
  for (const char *op : {"divs", "rems", "ceildivs", "floordivs"}) {
    std::string text = std::string("-9223372036854775808 -1 ") + op;
    CHECK(!evaluateExpression(text, shapes, &error));
    CHECK(error.find("signed overflow") != std::string::npos);
  }
  CHECK(evaluateExpression("-9223372036854775808 -1 divu", shapes, &error) ==
        0);
  std::string deep;
  for (int i = 0; i < 100000; ++i)
    deep += "1 ";
  for (int i = 0; i < 99999; ++i)
    deep += "add ";
  CHECK(!evaluateExpression(deep, shapes, &error));
  CHECK(error.find("deeper than") != std::string::npos);
  std::string shallow = "1";
  for (int i = 0; i < 16; ++i)
    shallow = "1 " + shallow + " add";
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
  launch.grid = {"dim:0:1 128 ceildivs", "1", "1"};
  // The workspace is parameter 2 = the ABI's parameter count
  // (docs/kernel-abi.md, "Workspace").
  launch.operands = {Operand{0, "", 64}, Operand{1, "", 64},
                     Operand{-1, "dim:0:0", 64}, Operand{-1, "dim:0:1", 32},
                     Operand{2, "", 64}};
  entry.launches.push_back(launch);
  entry.workspaceWords = 3;
  SizeInstance bench;
  bench.rows = 8192;
  bench.cols = 8192;
  bench.shapes = {Shape{8192, 8192}, Shape{8192, 8192}};
  entry.bench = bench;
  manifest.entries.push_back(entry);
  std::string text = toJson(manifest).serialize(), error;
  auto json = parseJson(text, &error);
  REQUIRE(json);
  auto back = manifestFromJson(*json, &error);
  REQUIRE(back);
  REQUIRE(back->entries.size() == 1);
  CHECK(back->entries[0].launches[0].grid[0] == launch.grid[0]);
  CHECK(back->entries[0].launches[0].operands[2].scalar == "dim:0:0");
  CHECK(back->entries[0].launches[0].operands[3].bits == 32);
  CHECK(back->entries[0].params[1].written);
  CHECK(back->entries[0].bench->shapes[1][1] == 8192);
  CHECK(back->entries[0].workspaceWords == 3);
  CHECK(toJson(*back).serialize() == text);

  std::vector<uint64_t> addresses = {0x1000, 0x2000};
  auto packed = packArguments(back->entries[0].launches[0], addresses,
                              back->entries[0].bench->shapes, &error, 0x3000,
                              back->entries[0].workspaceWords);
  REQUIRE(packed);
  // 7 descriptor slots per memref, the scalars, then the workspace's
  // [1, 3] descriptor where the kernel takes it.
  REQUIRE(packed->slots.size() == 23);
  CHECK(packed->slots[0] == 0x1000);
  CHECK(packed->slots[1] == 0x1000);
  CHECK(packed->slots[5] == 8192); // stride0 = cols
  CHECK(packed->slots[6] == 1);
  CHECK(packed->slots[14] == 8192);
  CHECK(packed->slots[15] == 8192);
  CHECK(packed->pointers[14] == &packed->slots[14]);
  CHECK(
      std::vector<uint64_t>(packed->slots.begin() + 16, packed->slots.end()) ==
      std::vector<uint64_t>{0x3000, 0x3000, 0, 1, 3, 3, 1});
  // A kernel that names the workspace cannot launch without one.
  CHECK_FALSE(packArguments(back->entries[0].launches[0], addresses,
                            back->entries[0].bench->shapes, &error));
  CHECK(error.find("m:2") != std::string::npos);
  // A kernel that does not take it gets no extra descriptor.
  Launch bareLaunch = back->entries[0].launches[0];
  bareLaunch.operands.pop_back();
  auto bare = packArguments(bareLaunch, addresses,
                            back->entries[0].bench->shapes, &error, 0x3000, 3);
  REQUIRE(bare);
  CHECK(bare->slots.size() == 16);
}

TEST_CASE("a version 1 manifest is refused with a rebuild message", "[aot]") {
  std::string error;
  auto json = parseJson("{\"format\": \"lowbit-aot-bundle\", \"version\": 1, "
                        "\"target\": \"sm_90a\", \"entries\": []}",
                        &error);
  REQUIRE(json);
  CHECK_FALSE(manifestFromJson(*json, &error));
  CHECK_THAT(error, Catch::Contains("version 1 is not 2 or 3"));
  CHECK_THAT(error, Catch::Contains("rebuild the bundle"));
}

TEST_CASE("a manifest's launch expressions are checked when read", "[aot]") {
  std::string error;
  auto manifest = [](const std::string &grid, const std::string &operand) {
    return "{\"format\": \"lowbit-aot-bundle\", \"version\": 2, "
           "\"target\": \"sm_90a\", \"entries\": [{\"name\": \"q\", "
           "\"spec\": \"quantize int8\", \"op\": \"quantize\", \"ptx\": "
           "\"q.ptx\", \"workspace_words\": 0, \"params\": [{\"role\": "
           "\"input\", \"element\": \"f32\"}], \"launches\": [{\"entry\": "
           "\"k\", \"grid\": [\"" +
           grid +
           "\", \"1\", \"1\"], \"block\": [\"1\", \"1\", \"1\"], "
           "\"shared\": \"0\", \"operands\": [" +
           operand + "]}]}]}";
  };
  auto read = [&](const std::string &text) {
    auto json = parseJson(text, &error);
    REQUIRE(json);
    return manifestFromJson(*json, &error).has_value();
  };
  CHECK(read(manifest("dim:0:1 128 ceildivs", "{\"memref\": 0}")));
  CHECK_FALSE(read(manifest("dim:1:1", "{\"memref\": 0}")));
  CHECK_THAT(error, Catch::Contains("entries[0].launches"));
  CHECK_THAT(error, Catch::Contains("names parameter 1 of 1"));
  CHECK_FALSE(read(manifest("1", "{\"memref\": 1}")));
  CHECK_THAT(error, Catch::Contains("names no parameter"));
  CHECK_FALSE(read(manifest("1", "{\"scalar\": \"1\", \"bits\": 48}")));
  CHECK_THAT(error, Catch::Contains("not 32 or 64"));
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
    return "{\"format\": \"lowbit-aot-bundle\", \"version\": 2, "
           "\"target\": \"sm_90a\", \"entries\": [{\"name\": \"q\", "
           "\"spec\": \"quantize int8\", \"op\": \"quantize\", \"ptx\": "
           "\"q.ptx\", \"workspace_words\": 0, \"params\": [{\"role\": "
           "\"input\", \"element\": "
           "\"f32\"}], \"launches\": [{\"entry\": \"k\", \"grid\": [\"1\", "
           "\"1\", \"1\"], \"block\": [\"1\", \"1\", \"1\"], \"shared\": "
           "\"0\", \"operands\": "
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
  // A zero dimension keeps a ranked shape at 0 elements while the product
  // of its leading dimensions overflows (it wrapped to 0 and matched
  // shapes [0, 0]; signed overflow, found by the aot-manifest fuzzer).
  error.clear();
  text = manifestWith("4", "0", "32");
  text.replace(text.find("\"version\": 2"), 12, "\"version\": 3");
  text.replace(text.find("[[4, 8]]"), 8,
               "[[0, 0]], \"dims\": [[1099511627776, 1099511627776, 0]]");
  CHECK_FALSE(read(text, error));
  CHECK_THAT(error, Catch::Contains("does not match shapes[0]"));
}

TEST_CASE("a version 2 manifest loads; a newer one is refused", "[aot]") {
  std::string error;
  auto v2 = parseJson(
      "{\"format\": \"lowbit-aot-bundle\", \"version\": 2, \"target\": "
      "\"sm_90a\", \"entries\": [{\"name\": \"q\", \"spec\": \"s\", \"op\": "
      "\"quantize\", \"ptx\": \"q.ptx\", \"params\": [], "
      "\"workspace_words\": 0, \"launches\": []}]}",
      &error);
  REQUIRE(v2);
  std::optional<Manifest> manifest = manifestFromJson(*v2, &error);
  INFO(error);
  REQUIRE(manifest);
  CHECK(manifest->entries[0].kind == "scheme");
  auto v4 = parseJson("{\"format\": \"lowbit-aot-bundle\", \"version\": 4, "
                      "\"target\": \"sm_90a\", \"entries\": []}",
                      &error);
  REQUIRE(v4);
  CHECK_FALSE(manifestFromJson(*v4, &error));
  CHECK_THAT(error, Catch::Contains("newer than this reader's 3"));
}

namespace {

/// A launch "k" of one grid and block size over parameters of shapes
/// `dims` (their rank-2 shapes: the leading product and the last size).
Launch rankedLaunch(std::string grid, std::string block,
                    std::vector<Operand> operands) {
  Launch launch;
  launch.entry = "k";
  launch.grid[0] = std::move(grid);
  launch.block[0] = std::move(block);
  launch.operands = std::move(operands);
  return launch;
}

SizeInstance rankedSize(std::vector<std::vector<int64_t>> dims) {
  SizeInstance size;
  for (const std::vector<int64_t> &shape : dims) {
    int64_t rows = 1;
    for (size_t axis = 0; axis + 1 < shape.size(); ++axis)
      rows *= shape[axis];
    size.shapes.push_back({rows, shape.back()});
  }
  size.dims = std::move(dims);
  return size;
}

} // namespace

TEST_CASE("ranked sizes pack rank-N descriptors and substitute dims", "[aot]") {
  Launch launch = rankedLaunch("dim:0:0 dim:0:2 mul", "256",
                               {{0, "", 64}, {-1, "dim:1:0", 32}, {1, "", 64}});
  SizeInstance size = rankedSize({{2, 3, 5, 7}, {4}});
  std::string error;
  std::optional<LaunchSizes> sizes = evaluateLaunchFor(launch, size, &error);
  INFO(error);
  REQUIRE(sizes);
  CHECK(sizes->grid[0] == 10);
  std::vector<uint64_t> addresses = {0x1000, 0x2000};
  std::optional<PackedArguments> packed =
      packArgumentsFor(launch, addresses, size, &error);
  REQUIRE(packed);
  // {a, a, 0, 2, 3, 5, 7, 105, 35, 7, 1}, 4, {b, b, 0, 4, 1}.
  std::vector<uint64_t> expected = {
      0x1000, 0x1000, 0, 2, 3, 5, 7, 105, 35, 7, 1, 4, 0x2000, 0x2000, 0, 4, 1};
  CHECK(packed->slots == expected);
  CHECK(packed->pointers.size() == expected.size());
  // A dim past a parameter's rank is an error, not a read past it.
  launch.grid[0] = "dim:1:1";
  CHECK_FALSE(evaluateLaunchFor(launch, size, &error));
  CHECK_THAT(error, Catch::Contains("names no buffer dimension"));
}

TEST_CASE("a launch plan becomes launches, or says why it cannot", "[aot]") {
  lowbit::launch::LaunchPlan plan;
  lowbit::launch::LaunchStep step;
  step.kernelName = "kernel_0";
  step.sizes = {"dim:0:0", "1", "1", "128", "1", "1", "0"};
  step.arguments = {"m:0", "s64:dim:0:1", "m:1"};
  plan.steps = {step, step};
  auto launches = launchesFromPlan(plan);
  REQUIRE(launches.ok());
  REQUIRE(launches->size() == 2);
  CHECK((*launches)[1].entry == "kernel_0");
  CHECK((*launches)[0].grid[0] == "dim:0:0");
  CHECK((*launches)[0].block[0] == "128");
  REQUIRE((*launches)[0].operands.size() == 3);
  CHECK((*launches)[0].operands[1].bits == 64);
  CHECK((*launches)[0].operands[2].memref == 1);

  // The GPU tail could not derive it: Unsupported, with its reason.
  lowbit::launch::LaunchPlan unsupported = plan;
  unsupported.unsupported = "a launch inside a loop";
  auto refused = launchesFromPlan(unsupported);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == lowbit::ErrorCode::Unsupported);
  CHECK(refused.error().message ==
        "the launches cannot be described: a launch inside a loop");

  // A step that does not read as a launch: a damaged entry.
  lowbit::launch::LaunchPlan corrupt = plan;
  corrupt.steps[1].arguments[0] = "q:0";
  auto damaged = launchesFromPlan(corrupt);
  REQUIRE_FALSE(damaged.ok());
  CHECK(damaged.error().code == lowbit::ErrorCode::CorruptEntry);
  CHECK(damaged.error().message.find("bad argument 'q:0'") !=
        std::string::npos);
}

TEST_CASE("launch sizes: grid and shared in [0, 2^31 - 1], block in "
          "[1, 1024]",
          "[aot]") {
  using Sizes = std::array<int64_t, 7>;
  CHECK(lowbit::launch::launchSizesProblem("k", Sizes{0, 1, 1, 1, 1, 1, 0})
            .empty());
  CHECK(lowbit::launch::launchSizesProblem(
            "k", Sizes{INT32_MAX, 1, 1, 1024, 1, 1, INT32_MAX})
            .empty());
  CHECK(lowbit::launch::launchSizesProblem("k", Sizes{-1, 1, 1, 1, 1, 1, 0}) ==
        "k: grid -1 or block 1 is not launchable");
  CHECK(lowbit::launch::launchSizesProblem(
            "k", Sizes{1, int64_t(INT32_MAX) + 1, 1, 1, 1, 1, 0}) ==
        "k: grid 2147483648 or block 1 is not launchable");
  CHECK(lowbit::launch::launchSizesProblem("k", Sizes{1, 1, 1, 1, 0, 1, 0}) ==
        "k: grid 1 or block 0 is not launchable");
  CHECK(
      lowbit::launch::launchSizesProblem("k", Sizes{1, 1, 1, 1, 1, 1025, 0}) ==
      "k: grid 1 or block 1025 is not launchable");
  CHECK(lowbit::launch::launchSizesProblem("k", Sizes{1, 1, 1, 1, 1, 1, -1}) ==
        "k: shared bytes -1 out of range");
}

TEST_CASE("a rank-2 step refuses what launchSizesProblem refuses, unless "
          "its grid is empty",
          "[aot]") {
  using namespace lowbit::launch;
  auto resolve = [](const std::string &blockX, const std::string &gridX,
                    ResolvedStep &out) {
    LaunchStep text{"k", {gridX, "1", "1", blockX, "1", "1", "0"}, {"m:0"}};
    lowbit::Expected<CompiledStep> step = compileStep(text, 1, 0);
    REQUIRE(step.ok());
    Shape shape{3, 4};
    uint64_t address = 64;
    return resolveStep(*step, std::span<const Shape>(&shape, 1),
                       std::span<const uint64_t>(&address, 1), 0, 0, out);
  };
  ResolvedStep out;
  CHECK(resolve("dim:0:1", "dim:0:0", out).ok());
  CHECK(out.sizes[0] == 3);
  CHECK(out.sizes[3] == 4);
  lowbit::Status wide = resolve("2000", "dim:0:0", out);
  REQUIRE_FALSE(wide.ok());
  CHECK(wide.error().message == "k: grid 3 or block 2000 is not launchable");
  // An empty grid launches nothing, whatever its block.
  CHECK(resolve("2000", "0", out).ok());
  CHECK(out.empty());
}

TEST_CASE("resolveLaunchFor: ranked descriptors and the workspace by hand, "
          "and what it refuses",
          "[aot]") {
  Launch launch = rankedLaunch(
      "dim:1:1", "128", {{1, "", 64}, {-1, "dim:0:0 3 mul", 64}, {2, "", 64}});
  SizeInstance size = rankedSize({{6}, {2, 2, 3}});
  std::vector<uint64_t> addresses = {0x1000, 0x2000};
  auto resolved = std::make_unique<lowbit::launch::ResolvedStep>();
  lowbit::Status status =
      resolveLaunchFor(launch, size, addresses, 0x9000, 5, *resolved);
  INFO((status ? std::string() : status.error().message));
  REQUIRE(status);
  CHECK(resolved->sizes[0] == 2);
  CHECK(resolved->sizes[3] == 128);
  // {b, b, 0, 2, 2, 3, 6, 3, 1}, 18, the workspace {w, w, 0, 1, 5, 5, 1}.
  std::vector<uint64_t> expected = {0x2000, 0x2000, 0,      2, 2, 3, 6, 3, 1,
                                    18,     0x9000, 0x9000, 0, 1, 5, 5, 1};
  REQUIRE(resolved->slotCount == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    CHECK(resolved->slots[i] == expected[i]);
    CHECK(resolved->pointers[i] == &resolved->slots[i]);
  }
  auto refuses = [&](const Launch &bad, int64_t words) {
    lowbit::Status refused =
        resolveLaunchFor(bad, size, addresses, 0x9000, words, *resolved);
    return refused ? std::string() : refused.error().message;
  };
  // The workspace operand without a workspace names no parameter.
  CHECK(refuses(launch, 0) == "k: operand m:2 names no parameter");
  Launch wide = launch;
  wide.block[0] = "dim:0:0 1000 mul";
  CHECK(refuses(wide, 5) == "k: grid 2 or block 6000 is not launchable");
  Launch divides = launch;
  divides.operands[1].scalar = "1 dim:1:0 2 sub divs";
  CHECK_THAT(refuses(divides, 5), Catch::Contains("division by zero"));
  Launch past = launch;
  past.operands[1].scalar = "dim:0:1";
  CHECK(refuses(past, 5) ==
        "k: launch size 'dim:0:1' names no buffer dimension");
  // The evaluateLaunchFor wrapper reports the same message.
  std::string error;
  CHECK_FALSE(evaluateLaunchFor(past, size, &error, 5));
  CHECK(error == "k: launch size 'dim:0:1' names no buffer dimension");
}
