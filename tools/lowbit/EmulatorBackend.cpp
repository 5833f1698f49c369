//===- EmulatorBackend.cpp - `--backend gpu-emulator` ---------------------===//

#include "tools/lowbit/EmulatorBackend.h"

#include "runtime/cache/KernelCache.h"
#include "runtime/emulator/EmulatedProgram.h"
#include "target/Target.h"

#include <map>
#include <memory>
#include <mutex>

namespace lowbit::cli {

namespace {

/// Programs by target and spec. Never destroyed: JIT engines must not be
/// torn down during static destruction (see releaseJitKernels()).
struct EmulatorState {
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<emulator::EmulatedProgram>> programs;
  emulator::Device device;
};
EmulatorState &emulatorState() {
  static EmulatorState *state = new EmulatorState;
  return *state;
}

} // namespace

std::optional<KernelRunner> gpuEmulatorRunner(std::string_view targetText,
                                              std::string *error) {
  std::string reason;
  std::optional<Target> target = parseTarget(targetText, &reason);
  if (target && !target->isNvidia()) {
    reason =
        "the GPU emulator runs NVIDIA targets, got '" + target->str() + "'";
    target.reset();
  } else if (target && !validateTarget(*target, &reason)) {
    target.reset();
  }
  if (!target) {
    if (error)
      *error = reason;
    return std::nullopt;
  }
  // The emulator compiles its programs on every run and keeps no cache
  // entries: off and read-only hold by construction, and must-hit, which
  // promises that nothing compiles, is refused like a miss.
  Expected<runtime::CacheOptions> cacheOptions =
      runtime::CacheOptions::fromEnvironment();
  if (!cacheOptions || cacheOptions->mode == runtime::CacheMode::MustHit) {
    if (error)
      *error = !cacheOptions
                   ? cacheOptions.error().message
                   : "LOWBIT_CACHE=must-hit: the GPU emulator compiles "
                     "its kernels on every run and serves none from the "
                     "cache (use --backend cpu, or LOWBIT_CACHE=on)";
    return std::nullopt;
  }
  return KernelRunner([target =
                           *target](const KernelSpec &spec,
                                    const std::vector<KernelBuffer> &buffers,
                                    std::string *error) {
    EmulatorState &state = emulatorState();
    std::lock_guard<std::mutex> lock(state.mutex);
    std::string key = target.str() + " " + printKernelSpec(spec);
    auto found = state.programs.find(key);
    if (found == state.programs.end()) {
      auto program = emulator::EmulatedProgram::compile(spec, target);
      if (!program) {
        if (error)
          *error =
              "gpu-emulator (" + target.str() + "): " + program.error().message;
        return false;
      }
      found = state.programs.emplace(key, std::move(*program)).first;
    }
    std::vector<emulator::ShapedBuffer> shaped;
    for (const KernelBuffer &buffer : buffers)
      shaped.push_back({buffer.data, buffer.rows, buffer.cols});
    Status status = found->second->runSpec(state.device, shaped);
    if (!status && error)
      *error = "gpu-emulator (" + target.str() + "): " + status.error().message;
    return status.ok();
  });
}

std::optional<BackendChoice> parseBackendOptions(const std::string *backend,
                                                 const std::string *target,
                                                 std::string *error) {
  BackendChoice choice{backend ? *backend : "auto", std::nullopt};
  auto refuse = [&](std::string message) -> std::optional<BackendChoice> {
    if (error)
      *error = std::move(message);
    return std::nullopt;
  };
  if (choice.name != "auto" && choice.name != "cpu" &&
      choice.name != "reference" && choice.name != "gpu-emulator")
    return refuse("unknown backend '" + choice.name +
                  "' (available: auto, cpu, reference, gpu-emulator)");
  if (target && choice.name != "gpu-emulator")
    return refuse("--target is for --backend gpu-emulator");
  if (choice.name == "gpu-emulator" &&
      !(choice.emulator = gpuEmulatorRunner(
            target ? *target : kEmulatorDefaultTarget, error)))
    return std::nullopt;
  return choice;
}

} // namespace lowbit::cli
