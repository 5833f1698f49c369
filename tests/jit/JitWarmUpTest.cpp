//===- JitWarmUpTest.cpp - JitOptions::warmUpCompiler ---------------------===//
//
// The warm-up runs the compiler's whole pipeline once on a thread for the
// Jit's target: it must really compile (a target the compiler refuses
// makes it fail, which a warm-up that did nothing could not), leave the
// Jit usable, and cost nothing when not asked for.
//
//===----------------------------------------------------------------------===//

#include "lowbit/Jit.h"

#include <catch2/catch.hpp>

#include <filesystem>

using namespace lowbit;

namespace {

Target sm90a() {
  std::string error;
  std::optional<Target> target = parseTarget("sm_90a", &error);
  REQUIRE(target);
  return *target;
}

std::unique_ptr<Jit> makeJit(const Target &target, bool warmUp) {
  JitOptions options;
  options.cacheDirectory =
      (std::filesystem::temp_directory_path() / "lowbit-jit-warmup").string();
  options.cacheMode = runtime::CacheMode::Off;
  options.target = target;
  options.warmUpCompiler = warmUp;
  auto jit = Jit::create(options);
  REQUIRE(jit.ok());
  return std::move(jit).value();
}

} // namespace

TEST_CASE("the warm-up compiles for the Jit's target on a thread", "[jit]") {
  auto jit = makeJit(sm90a(), true);
  Status warmed = jit->waitForWarmUp();
  INFO((warmed.ok() ? std::string() : warmed.error().message));
  CHECK(warmed.ok());
  // The Jit works as before, and the warm-up is not one of its compiles.
  CHECK(jit->stats().compiles == 0);
  auto kernel = jit->get("quantize int8 dynamic");
  REQUIRE(kernel.ok());
  CHECK(jit->stats().gpuCompiles == 1);
}

TEST_CASE("a warm-up the compiler refuses reports why", "[jit]") {
  Target tooOld = sm90a();
  tooOld.ptxVersion = 60; // sm_90a needs PTX 7.8 or newer
  auto jit = makeJit(tooOld, true);
  Status warmed = jit->waitForWarmUp();
  REQUIRE_FALSE(warmed.ok());
  CHECK_THAT(warmed.error().message, Catch::Contains("PTX"));
}

TEST_CASE("without the option there is no warm-up", "[jit]") {
  Target tooOld = sm90a();
  tooOld.ptxVersion = 60;
  auto jit = makeJit(tooOld, false);
  CHECK(jit->waitForWarmUp().ok());
}
