//===- LaunchPlanFuzzer.cpp - Fuzz the JIT's cached launch plans
//-----------===//
//
// Input: the plan section of a GPU cache entry's payload (runtime/jit/
// LaunchPlan.h: `launch NAME|GRIDX|...|ARG...` lines). The JIT reads it
// from disk and evaluates it on every launch, so it is as untrusted as the
// entry. A plan that parses must serialize and parse back equal, and every
// size and scalar argument is evaluated against fixed shapes.
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzCheck.h"
#include "runtime/jit/LaunchPlan.h"

#include <cstddef>
#include <cstdint>
#include <string>

using namespace lowbit;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  Expected<jit::LaunchPlan> plan = jit::LaunchPlan::parse(text);
  if (!plan)
    return 0;
  std::string serialized = plan->serialize();
  Expected<jit::LaunchPlan> reread = jit::LaunchPlan::parse(serialized);
  LOWBIT_FUZZ_CHECK(reread.ok(), "the serialized plan parses");
  LOWBIT_FUZZ_CHECK(reread->serialize() == serialized,
                    "the serialized plan reads back equal");
  // Shapes of a 4x64 mxfp4 quantize (input, codes, scales), and extremes.
  const jit::ParamShapes shapeSets[] = {
      {{4, 64}, {4, 32}, {4, 2}},
      {{INT64_MAX, INT64_MIN}, {-1, 0}, {1, INT64_MAX}}};
  for (const jit::ParamShapes &shapes : shapeSets)
    for (const jit::LaunchStep &step : plan->steps) {
      for (const std::string &expression : step.sizes)
        (void)jit::evaluateSize(expression, shapes);
      for (const std::string &argument : step.arguments)
        if (size_t colon = argument.find(':'); colon != std::string::npos)
          (void)jit::evaluateSize(std::string_view(argument).substr(colon + 1),
                                  shapes);
    }
  return 0;
}
